"""The runs ``ls`` lists: each source summarized, its filters pushed down where a source
takes them (a trace backend's search, a ClickHouse table), then applied.

``ls`` and ``cohort`` read their runs through :func:`listed`, so that the two
commands pick the same runs for the same filters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .printable import printable

if TYPE_CHECKING:
    from ..otlp.errors import FormatError
    from ..runs.summary import Filter, RunSummary


def listed(
    paths: tuple[str, ...],
    flt: Filter,
    *,
    since: str | None = None,
    use_cache: bool = True,
    jobs: int | None = None,
) -> tuple[list[RunSummary], list[FormatError]]:
    """The summary of every run of ``paths`` (those a pushed-down filter kept), and the
    problems met reading them; ``since`` is ``--since`` as given, for a backend's search.
    The summaries are not filtered here: :func:`~otel_replay.runs.summary.select`
    applies ``flt``."""
    from ..sources.files import is_database, is_search
    from ..sources.progress import working

    if any(map(is_search, paths)):
        from ..sources.files import TEMPO_SCHEMES
        from ..sources.tempo import narrowed

        # The filters go to the backend's search too: only the traces they may keep are
        # fetched (Jaeger's HTTP API searches by time, not by attribute).
        push = {
            "since": since,
            "agent": flt.agent,
            "tool": flt.tools[0] if len(flt.tools) == 1 else None,
            "error": "1" if flt.errors_only else None,
        }
        paths = tuple(
            p
            if not is_search(p)
            else narrowed(p, **push)
            if p.startswith(TEMPO_SCHEMES)
            else narrowed(p, since=since)
            for p in paths
        )
    from ..commands.summary_cache import summaries

    files = [p for p in paths if not is_database(p)]
    with working(f"listing {printable(', '.join(paths))}"):
        found, problems = summaries(files, use_cache=use_cache, jobs=jobs) if files else ([], [])
        for name in (p for p in paths if is_database(p)):
            from ..commands.clickhouse_summary import summaries as database_summaries

            # ClickHouse computes the lines, filters applied; only the traces it leaves to
            # the reader (other dialects, stitched traces) are read.
            listed, faults = database_summaries(name, flt)
            found += listed
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
    from ..runs.summary import Filter
    from ..since import parse_since

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
