"""The runs ``ls`` lists: each source summarized, its filters pushed down where a source
takes them (a trace backend's search, a ClickHouse table), then applied.

``ls`` and ``cohort`` read their runs through :func:`searched` and :func:`listed`,
so that the two commands pick the same runs for the same filters.
"""

from __future__ import annotations

from ..otlp.errors import FormatError
from ..runs.summary import Filter, RunSummary
from ..since import parse_since
from ..sources.files import TEMPO_SCHEMES, is_database, is_search
from ..sources.tempo import narrowed
from .summary_cache import summaries


def searched(paths: tuple[str, ...], flt: Filter, since: str | None) -> tuple[str, ...]:
    """``paths`` with each trace backend's search narrowed by the filters it takes, so that
    only the traces they may keep are fetched; ``since`` is ``--since`` as given (Jaeger's
    HTTP API searches by time, not by attribute)."""
    if not any(map(is_search, paths)):
        return paths
    push = {
        "since": since,
        "agent": flt.agent,
        "tool": flt.tools[0] if len(flt.tools) == 1 else None,
        "error": "1" if flt.errors_only else None,
    }
    return tuple(
        p
        if not is_search(p)
        else narrowed(p, **push)
        if p.startswith(TEMPO_SCHEMES)
        else narrowed(p, since=since)
        for p in paths
    )


def listed(
    paths: tuple[str, ...], flt: Filter, *, use_cache: bool = True, jobs: int | None = None
) -> tuple[list[RunSummary], list[FormatError]]:
    """The summary of every run of ``paths`` (files, directories and searches read through
    the summary cache; a ClickHouse table summarized by ClickHouse, ``flt`` applied there),
    and the problems met reading them.  The summaries of files are not filtered here:
    :func:`~otel_replay.runs.summary.select` applies ``flt``."""
    files = [p for p in paths if not is_database(p)]
    found, problems = summaries(files, use_cache=use_cache, jobs=jobs) if files else ([], [])
    for name in (p for p in paths if is_database(p)):
        # The ClickHouse readers, imported for a table only (files are read without them).
        from .clickhouse_summary import summaries as database_summaries

        # ClickHouse computes the lines, filters applied; only the traces it leaves to
        # the reader (other dialects, stitched traces) are read.
        more, faults = database_summaries(name, flt)
        found += more
        problems += faults
    return found, problems


def run_filter(
    agent: str | None,
    since: str | None,
    errors_only: bool,
    tools: tuple[str, ...],
    replayable: bool,
) -> Filter:
    """The filter of ``ls``'s options; ``ValueError`` naming ``--since`` when it is no time."""
    since_ns = None
    if since is not None:
        try:
            since_ns = parse_since(since)
        except ValueError as exc:
            raise ValueError(f"--since: {exc}") from None
    return Filter(
        agent=agent,
        since_ns=since_ns,
        errors_only=errors_only,
        tools=tools,
        replayable_only=replayable,
    )
