"""The runs ``ls`` lists: each source summarized, its filters pushed down where a source
takes them (a trace backend's search, a ClickHouse table), then applied.

``ls`` and ``cohort`` read their runs through :func:`searched` and :func:`listed`,
so that the two commands pick the same runs for the same filters.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from ..otlp.errors import FormatError
from ..runs.summary import Filter, RunSummary, select
from ..since import parse_since
from ..sources import open_source
from ..sources.source import CLICKHOUSE, Kind, SearchFilter
from .draw import Draw, drawn
from .summary_cache import summaries


def searched(paths: tuple[str, ...], flt: Filter, since: str | None) -> tuple[str, ...]:
    """``paths`` with each trace backend's search narrowed by the filters it takes (see
    :meth:`~otel_replay.sources.source.Source.narrowed`), so that only the traces they may
    keep are fetched; ``since`` is ``--since`` as given."""
    tool = flt.tools[0] if len(flt.tools) == 1 else None
    search = SearchFilter(since, flt.agent, tool, flt.errors_only)
    return tuple(open_source(p).narrowed(search).name for p in paths)


#: The summaries of the runs of one source, with the filter applied, and the problems met.
Summarize = Callable[[str, Filter], tuple[list[RunSummary], list[FormatError]]]


def _clickhouse_summaries(name: str, flt: Filter) -> tuple[list[RunSummary], list[FormatError]]:
    # The ClickHouse readers, imported for a table only (files are read without them).
    from .clickhouse_summary import summaries as database_summaries

    # ClickHouse computes the lines, filters applied; only the traces it leaves to
    # the reader (other dialects, stitched traces) are read.
    return database_summaries(name, flt)


#: The sources whose backend computes the summaries of its runs itself, by kind; the
#: runs of the others are read (through the summary cache).
COMPUTED_SUMMARIES: dict[Kind, Summarize] = {CLICKHOUSE: _clickhouse_summaries}


def listed(
    paths: tuple[str, ...], flt: Filter, *, use_cache: bool = True, jobs: int | None = None
) -> tuple[list[RunSummary], list[FormatError]]:
    """The summary of every run of ``paths`` (files, directories and searches read through
    the summary cache; a ClickHouse table summarized by ClickHouse, ``flt`` applied there),
    and the problems met reading them.  The summaries of files are not filtered here:
    :func:`~otel_replay.runs.summary.select` applies ``flt``."""
    computed = [(p, COMPUTED_SUMMARIES.get(open_source(p).kind)) for p in paths]
    files = [p for p, summarize in computed if summarize is None]
    found, problems = summaries(files, use_cache=use_cache, jobs=jobs) if files else ([], [])
    for name, summarize in computed:
        if summarize is not None:
            more, faults = summarize(name, flt)
            found += more
            problems += faults
    return found, problems


class Drawn(NamedTuple):
    """The runs a cohort takes (see :func:`drawn_listing`)."""

    #: Their summaries, in start order.
    runs: list[RunSummary]
    #: How many runs the filters keep, those drawn among them.
    kept: int
    problems: list[FormatError]


#: The summaries of the runs of one source that ``flt`` keeps and a :class:`Draw` may take,
#: how many runs ``flt`` keeps that it leaves out, and the problems met.
DrawSummaries = Callable[[str, Filter, Draw], tuple[list[RunSummary], int, list[FormatError]]]


def _clickhouse_draw(
    name: str, flt: Filter, draw: Draw
) -> tuple[list[RunSummary], int, list[FormatError]]:
    # lazy: the ClickHouse query, only for a table; it draws, and only the runs drawn leave it
    from .clickhouse_summary import drawn_summaries

    return drawn_summaries(name, flt, draw)


#: The sources whose backend draws among its runs itself, by kind.
COMPUTED_DRAWS: dict[Kind, DrawSummaries] = {CLICKHOUSE: _clickhouse_draw}


def drawn_listing(
    paths: tuple[str, ...],
    flt: Filter,
    draw: Draw,
    *,
    use_cache: bool = True,
    jobs: int | None = None,
) -> Drawn:
    """The runs of ``paths`` that ``flt`` keeps and ``draw`` takes (see :mod:`.draw`): the
    runs :func:`listed` gives, filtered and drawn, but a source that draws itself (a
    ClickHouse table) sends only the runs that may be drawn."""
    computed = [(p, COMPUTED_DRAWS.get(open_source(p).kind)) for p in paths]
    rest = tuple(p for p, draws in computed if draws is None)
    found, problems = listed(rest, flt, use_cache=use_cache, jobs=jobs) if rest else ([], [])
    left_out = 0
    for name, draws in computed:
        if draws is not None:
            more, out, faults = draws(name, flt, draw)
            found += more
            left_out += out
            problems += faults
    kept = select(found, flt, "start")
    runs = drawn(kept, draw.sample, draw.seed, draw.limit, lambda s: s.run_id)
    return Drawn(runs, len(kept) + left_out, problems)


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
