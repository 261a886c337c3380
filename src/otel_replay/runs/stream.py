"""Every run of a big dump, a window of the dump at a time, in bounded memory.

:func:`~otel_replay.runs.load.load` holds every run of its input at once:
several times the dump's size for a big one.  When every input file is a
4-byte framed dump, its trace index (see :mod:`~otel_replay.otlp.index`)
says where each trace starts, so the traces can be read a window of the
dump at a time: a window's traces are loaded through the index (all their
spans and log records, wherever they are), built, handed over and dropped.

Only client-only traces depend on other traces (they are stitched into
conversations, and a call recorded twice is merged, see :mod:`.stitch` and
:mod:`.double_spans`).  Of those a window keeps only the few hashes and
times that stitching and pairing look at; once every window is read, they
are grouped into conversations and read again, a few conversations at a
time.  Every run is what :func:`load` would give.  Input that cannot be
windowed (other formats, a dump that cannot be indexed or whose index
cannot be saved beside it, log records that name no span and join one by
time alone) is loaded whole, and so is one of fewer than
:data:`MIN_WINDOWS` windows.  A ClickHouse table is read in windows of
traces in start order (ClickHouse counts their spans), every window's
traces asked for by id in one query, the rows sorted by window.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Generic, TypeAlias, TypeVar

from ..otlp import index
from ..otlp.errors import FormatError
from ..sources import progress
from ..sources.files import expand, is_database, is_stream
from ..sources.reader import trace_index
from .build import assemble
from .double_spans import TwinFacts, pair_twins, twin_facts
from .load import Runs, read_runs, read_traces, traces_of
from .model import Run, no_cycle_collection
from .stitch import ConversationKeys, PieceFacts, group_pieces, is_piece, piece_facts

#: Traces whose first record lies in the same window of a file are read together.
WINDOW_BYTES = 16 * 1024 * 1024
#: A database's traces are read in windows of about this many spans per window byte.
SPANS_PER_BYTE = 1 / 1024
#: Smaller inputs are not worth starting worker processes for.
PARALLEL_BYTES = 64 * 1024 * 1024
#: An input of fewer windows is loaded whole: faster, and its runs fit in memory.
MIN_WINDOWS = 4

T = TypeVar("T")


#: What a window keeps of a client-only trace until every window is read.
Held: TypeAlias = "tuple[PieceFacts, TwinFacts | None]"


@dataclass
class Piece:
    """What one window gave: its runs, and the facts of its client-only traces."""

    runs: Runs
    held_back: list[Held] = field(default_factory=list)


class Windows(list[list[str]]):
    """Trace ids in windows of file position, and :attr:`stamps`: the dump each was taken from.

    ``stamps`` maps each file to the (size, mtime) of its trace index, so the
    windows are read from the dump as it was planned, even while it grows.
    """

    def __init__(self, windows: list[list[str]], stamps: dict[str, tuple[int, int]]) -> None:
        super().__init__(windows)
        self.stamps = stamps


def windows(paths: Sequence[str], window_bytes: int | None = None) -> Windows | None:
    """The trace ids of ``paths`` in windows of file position (of :data:`WINDOW_BYTES`
    unless ``window_bytes`` is given); None when it cannot be windowed, or is
    smaller than :data:`MIN_WINDOWS` windows."""
    window_bytes = window_bytes or WINDOW_BYTES
    if len(paths) == 1 and is_database(paths[0]):
        # ClickHouse's modules only for a database.
        from ..sources.clickhouse.spans import trace_windows

        try:
            found = trace_windows(paths[0], max(1, int(window_bytes * SPANS_PER_BYTE)))
        except FormatError:
            return None  # reading it whole says why
        return None if found is None or len(found) < MIN_WINDOWS else Windows(found, {})
    if any(map(is_stream, paths)):
        return None
    try:
        files = expand(list(paths))
    except OSError:
        return None
    if not files or _size(files) < MIN_WINDOWS * window_bytes:
        return None
    placed: dict[str, tuple[int, int]] = {}
    stamps: dict[str, tuple[int, int]] = {}
    for ordinal, name in enumerate(dict.fromkeys(files)):
        idx = trace_index(name)
        if idx is None or idx.spanless_logs or index.load(name, as_of=idx.stamp) is None:
            return None  # not indexable, or the index could not be kept beside the dump
        stamps[name] = idx.stamp
        for tid, offset in idx.first_records().items():
            placed.setdefault(tid, (ordinal, offset // window_bytes))
    grouped: dict[tuple[int, int], list[str]] = {}
    for tid, where in sorted(placed.items(), key=lambda item: item[1]):
        grouped.setdefault(where, []).append(tid)
    return Windows(list(grouped.values()), stamps)


def read_window(
    paths: Sequence[str],
    trace_ids: Sequence[str],
    as_of: Mapping[str, tuple[int, int]] | None = None,
    *,
    pending: bool = False,
) -> Piece:
    """The runs of one window's traces; of client-only traces only their facts are kept.

    ``as_of``: the :attr:`Windows.stamps` of the plan the window comes from;
    ``pending``: as :func:`~.load.read_runs` takes it.
    """
    with no_cycle_collection():  # as read_runs: building frees nothing the collector finds
        return _piece(read_traces(paths, trace_ids, as_of, pending=pending))


def _piece(traces: Runs) -> Piece:
    """The runs of a window's ``traces``; of client-only traces only their facts."""
    keys = ConversationKeys()
    held = [(piece_facts(t, keys), twin_facts(t, keys)) for t in traces if is_piece(t)]
    alone = [t for t in traces if not is_piece(t)]
    return Piece(Runs(assemble(alone), traces.problems, traces.unjoined_logs), held)


def conversations(held: Sequence[Held], batch: int = 1) -> list[list[str]]:
    """The trace ids of held-back traces, grouped as :func:`assemble` would join them.

    Twins are paired and pieces stitched on their facts alone, as
    :func:`~.double_spans.merge_twin_traces` and :func:`~.stitch.stitch` do
    on the runs; whole groups are then put together in lists of about
    ``batch`` traces, each of which assembles to the same runs as the whole.
    """
    ordered = sorted(held, key=lambda h: (h[0].start_ns, h[0].run_id))
    twins = {drop: keep for keep, drop in pair_twins([t for _, t in ordered])}
    joining: dict[int, list[int]] = {}
    for drop, keep in twins.items():
        joining.setdefault(keep, []).append(drop)
    pieces: list[int] = [i for i in range(len(ordered)) if i not in twins]
    facts = [_after_merge(ordered, i, joining.get(i, [])) for i in pieces]
    out: list[list[str]] = []
    for group in group_pieces(facts):
        members = [pieces[k] for k in group]
        ids = [ordered[i][0].run_id for m in members for i in (m, *joining.get(m, []))]
        if out and len(out[-1]) < batch:
            out[-1].extend(ids)
        else:
            out.append(ids)
    return out


def _after_merge(ordered: Sequence[Held], keep: int, drops: list[int]) -> PieceFacts:
    """A piece's facts once its twin is merged into it: an answer only the twin recorded counts."""
    facts, twin = ordered[keep]
    for drop in drops:
        other_facts, other = ordered[drop]
        if twin is not None and other is not None and not twin.answered and other.answered:
            facts = dataclasses.replace(facts, successors=other_facts.successors, open=None)
    return facts


def iter_runs(
    *paths: str, window_bytes: int | None = None, planned: Windows | None = None
) -> Iterator[Runs]:
    """The runs of ``paths`` in batches, each a :class:`Runs` with its own problems.

    Together the batches hold the runs :func:`load` returns (not in its
    order); memory holds one window's runs at a time, and a few facts of
    each client-only trace until they are read again, a conversation at a time.
    ``planned`` windows (of some of their traces) replace those of :func:`windows`.
    """
    planned = planned if planned is not None else windows(paths, window_bytes)
    if planned is None:
        yield read_runs(paths)
        return
    held: list[Held] = []
    for trace_ids in planned:
        piece = read_window(paths, trace_ids, planned.stamps)
        held.extend(piece.held_back)
        if piece.runs or piece.runs.problems:
            yield piece.runs
    for group in conversations(held, _batch(planned)):
        yield read_runs(paths, group, planned.stamps)


def problems_of(batches: Iterable[Sequence[FormatError]]) -> list[FormatError]:
    """The problems of several batches, each once."""
    seen: dict[str, FormatError] = {}
    for batch in batches:
        for problem in batch:
            seen.setdefault(str(problem), problem)
    return list(seen.values())


@dataclass
class Mapped(Generic[T]):
    """What :func:`map_runs` gave: one value per run, and the problems met reading."""

    values: list[T]
    problems: list[FormatError]
    #: Worker processes used (0: read in this process).
    workers: int = 0


def map_table_runs(
    name: str,
    traces: Sequence[tuple[str, int]],
    fn: Callable[[Run], T],
    *,
    done: AbstractSet[str] = frozenset(),
    jobs: int | None = None,
) -> Mapped[T]:
    """``fn`` of the runs of ``traces`` (ids and span counts, in start order) of the
    ClickHouse table ``name``, built a window of traces at a time, in this process, from
    one scan of the table (see :func:`_scanned`).  Ids that are not full trace ids are
    read a window at a time, each window a query, by ``jobs`` processes (default: one
    per CPU when there is more than one window; one for an embedded database; see
    :func:`map_runs`).
    When log records beside it name no span (they join runs by their time) the table is
    read whole, and every run but those of the traces in ``done`` is given."""
    # ClickHouse's modules only for a database.
    from ..sources.clickhouse.database import Location
    from ..sources.clickhouse.spans import scannable, spanless_logs, windows_of

    if spanless_logs(name):
        runs = read_runs([name])
        kept = [fn(r) for r in runs if done.isdisjoint(r.trace_ids)]
        return Mapped(kept, list(runs.problems))
    planned = Windows(windows_of(traces, int(WINDOW_BYTES * SPANS_PER_BYTE)), {})
    if scannable(planned):
        return _scanned(name, planned, fn)
    if Location.parse(name).embedded:
        jobs = 1  # one process at a time opens an embedded database's directory
    elif jobs is None:
        jobs = (os.cpu_count() or 1) if len(planned) > 1 else 1
    return _map_planned([name], fn, planned, jobs)


def _scanned(name: str, planned: Windows, fn: Callable[[Run], T]) -> Mapped[T]:
    """``fn`` of the runs of the ``planned`` windows of the ClickHouse table ``name``: the
    windows read in one scan of the table (see
    :func:`~otel_replay.sources.clickhouse.spans.scanned_windows`), each built as it
    comes, here; then the client-only traces held back, grouped into conversations,
    read in one scan more."""
    from ..sources.clickhouse.spans import scanned_windows  # (as map_table_runs)

    values: list[T] = []
    problems: list[list[FormatError]] = []
    held: list[Held] = []
    label = f"reading {name}"
    with no_cycle_collection():  # (see _values)
        scanned = scanned_windows(name, planned)
        for records, faults in progress.track_items(scanned, len(planned), None, label):
            piece = _piece(traces_of(name, records, faults))
            values.extend(fn(r) for r in piece.runs)
            held.extend(piece.held_back)
            problems.append(list(piece.runs.problems))
            del piece, records
        for records, faults in scanned_windows(name, conversations(held, _batch(planned))):
            traces = traces_of(name, records, faults)
            values.extend(fn(r) for r in assemble(traces))
            problems.append(list(traces.problems))
            del traces, records
    return Mapped(values, problems_of(problems))


def map_runs(
    paths: Sequence[str],
    fn: Callable[[Run], T],
    *,
    jobs: int | None = None,
    window_bytes: int | None = None,
    pending: bool = False,
) -> Mapped[T]:
    """``fn`` of every run of ``paths`` (see :func:`iter_runs`), read by ``jobs`` processes
    (default: :func:`default_jobs`).  ``pending``: an agent's run that no other trace
    changes is given to ``fn`` unbuilt (a :class:`~.model.PendingRun`, its spans
    decoded), for an ``fn`` that may need less than its steps.

    With more than one job ``fn`` must be a module-level function (the
    workers get it by name) returning a picklable value; when the workers
    cannot start (a ``__main__`` they cannot import, say) everything is read
    in this process.
    """
    planned = windows(paths, window_bytes)
    if planned is None:
        return _values(paths, fn, pending)
    jobs = default_jobs(paths) if jobs is None else jobs
    return _map_planned(paths, fn, planned, jobs, pending)


def _map_planned(
    paths: Sequence[str],
    fn: Callable[[Run], T],
    planned: Windows,
    jobs: int,
    pending: bool = False,
) -> Mapped[T]:
    jobs = max(1, min(jobs, len(planned)))
    if jobs > 1:
        # lazy: only a listing in worker processes needs it
        from concurrent.futures.process import BrokenProcessPool

        try:
            with _pool(jobs) as pool:
                return _map(paths, fn, planned, pool.map, jobs, pending)
        except BrokenProcessPool:
            pass
    return _map(paths, fn, planned, map, 0, pending)


def default_jobs(paths: Sequence[str]) -> int:
    """The CPU count for inputs over :data:`PARALLEL_BYTES`, else 1."""
    return (os.cpu_count() or 1) if _size(paths) >= PARALLEL_BYTES else 1


def _map(
    paths: Sequence[str],
    fn: Callable[[Run], T],
    planned: Windows,
    mapper: Callable[..., Iterator[Any]],
    workers: int,
    pending: bool = False,
) -> Mapped[T]:
    values: list[T] = []
    problems: list[list[FormatError]] = []
    held: list[Held] = []
    n = len(planned)
    label = f"reading {', '.join(paths)}"
    stamps = [planned.stamps] * n
    results = mapper(_window_values, [paths] * n, planned, stamps, [fn] * n, [pending] * n)
    for found, back, trouble in progress.track_items(results, n, _size(paths), label):
        values.extend(found)
        held.extend(back)
        problems.append(trouble)
    groups = conversations(held, _batch(planned))
    m = len(groups)
    again = mapper(
        _group_values, [paths] * m, groups, [planned.stamps] * m, [fn] * m, [pending] * m
    )
    for found, _, trouble in again:
        values.extend(found)
        problems.append(trouble)
    return Mapped(values, problems_of(problems), workers)


_Result: TypeAlias = "tuple[list[T], list[Held], list[FormatError]]"


def _window_values(
    paths: Sequence[str],
    trace_ids: Sequence[str],
    as_of: Mapping[str, tuple[int, int]],
    fn: Callable[[Run], T],
    pending: bool = False,
) -> _Result[T]:
    with no_cycle_collection():  # (see _values)
        piece = read_window(paths, trace_ids, as_of, pending=pending)
        # The runs stay here: only their values, the facts held back and the problems travel.
        out = [fn(r) for r in piece.runs], piece.held_back, list(piece.runs.problems)
        del piece
    return out


def _group_values(
    paths: Sequence[str],
    trace_ids: Sequence[str],
    as_of: Mapping[str, tuple[int, int]],
    fn: Callable[[Run], T],
    pending: bool = False,
) -> _Result[T]:
    with no_cycle_collection():  # (see _values)
        runs = read_runs(paths, trace_ids, as_of, pending=pending)
        out: _Result[T] = [fn(r) for r in runs], [], list(runs.problems)
        del runs
    return out


def _values(paths: Sequence[str], fn: Callable[[Run], T], pending: bool = False) -> Mapped[T]:
    """``fn`` of every run of ``paths``, read whole.  The collector waits until the values
    are made, and the runs freed: they are many objects, all alive until then, that it
    would walk again and again, and find nothing."""
    with no_cycle_collection():
        runs = read_runs(paths, pending=pending)
        mapped = Mapped([fn(r) for r in runs], list(runs.problems))
        del runs  # (once freed, the collector has none of them to walk when it starts)
    return mapped


@contextlib.contextmanager
def _pool(jobs: int) -> Iterator[Any]:
    # lazy: only a listing in worker processes needs them
    import concurrent.futures
    import multiprocessing

    # spawn: a fork of a process with threads running (an app's exporter,
    # say) can deadlock; the workers import only what reading needs.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        yield pool


def _batch(planned: Sequence[Sequence[str]]) -> int:
    """About as many traces as a window holds."""
    return max(1, sum(map(len, planned)) // max(1, len(planned)))


def _size(paths: Sequence[str]) -> int:
    total = 0
    for name in expand(list(paths)):
        with contextlib.suppress(OSError):
            total += os.path.getsize(name)
    return total
