"""Every run of a big dump, a window of the dump at a time, in bounded memory.

:func:`~otel_replay.runs.load.load` holds every run of its input at once:
several times the dump's size for a big one.  When every input file is a
4-byte framed dump, its trace index (see :mod:`~otel_replay.store.index`)
says where each trace starts, so the traces can be read a window of the
dump at a time: a window's traces are loaded through the index (all their
spans and log records, wherever they are), built, handed over and dropped.

Only client-only traces depend on other traces (they are stitched into
conversations, and a call recorded twice is merged, see :mod:`.stitch` and
:mod:`.double_spans`), so such traces are held back, built but not yet
assembled, and assembled together at the end; every other run is what
:func:`load` would give.  A dump of client-only traces alone is therefore
held whole until the end, as :func:`load` would hold it.  Input that
cannot be windowed (other formats, a dump that cannot be indexed, log
records that name no span and join one by time alone) is loaded whole.
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeAlias, TypeVar

from ..store import progress
from ..store.errors import FormatError
from ..store.reader import trace_index
from ..store.sources import expand
from .build import assemble
from .load import Runs, read_runs, read_traces
from .model import Run
from .stitch import is_piece

#: Traces whose first record lies in the same window of a file are read together.
WINDOW_BYTES = 16 * 1024 * 1024
#: Smaller inputs are not worth starting worker processes for.
PARALLEL_BYTES = 64 * 1024 * 1024

T = TypeVar("T")


@dataclass
class Piece:
    """What one window gave: its runs, and its client-only traces, held back unassembled."""

    runs: Runs
    held_back: list[Run] = field(default_factory=list)


def windows(paths: Sequence[str], window_bytes: int = WINDOW_BYTES) -> list[list[str]] | None:
    """The trace ids of ``paths`` in windows of file position; None when it cannot be windowed."""
    if any(p == "-" or p.startswith(("http://", "https://")) for p in paths):
        return None
    try:
        files = expand(list(paths))
    except OSError:
        return None
    if not files:
        return None
    placed: dict[str, tuple[int, int]] = {}
    for ordinal, name in enumerate(dict.fromkeys(files)):
        idx = trace_index(name)
        if idx is None or idx.spanless_logs:
            return None
        for tid, offset in idx.first_records().items():
            placed.setdefault(tid, (ordinal, offset // window_bytes))
    grouped: dict[tuple[int, int], list[str]] = {}
    for tid, where in sorted(placed.items(), key=lambda item: item[1]):
        grouped.setdefault(where, []).append(tid)
    return list(grouped.values())


def read_window(paths: Sequence[str], trace_ids: Sequence[str]) -> Piece:
    """The runs of one window's traces; client-only traces are held back (see module doc)."""
    traces = read_traces(paths, trace_ids)
    pieces = [t for t in traces if is_piece(t)]
    alone = [t for t in traces if not is_piece(t)]
    return Piece(Runs(assemble(alone), traces.problems, traces.unjoined_logs), pieces)


def iter_runs(*paths: str, window_bytes: int = WINDOW_BYTES) -> Iterator[Runs]:
    """The runs of ``paths`` in batches, each a :class:`Runs` with its own problems.

    Together the batches hold the runs :func:`load` returns (not in its
    order); memory holds one window's runs at a time, plus the client-only
    traces held back to the end.
    """
    planned = windows(paths, window_bytes)
    if planned is None:
        yield read_runs(paths)
        return
    held_back: list[Run] = []
    for trace_ids in planned:
        piece = read_window(paths, trace_ids)
        held_back.extend(piece.held_back)
        if piece.runs or piece.runs.problems:
            yield piece.runs
    if held_back:
        yield Runs(assemble(held_back))


def problems_of(batches: Sequence[Runs]) -> list[FormatError]:
    """The problems of several batches, each once."""
    seen: dict[str, FormatError] = {}
    for batch in batches:
        for problem in batch.problems:
            seen.setdefault(str(problem), problem)
    return list(seen.values())


@dataclass
class Mapped(Generic[T]):
    """What :func:`map_runs` gave: one value per run, and the problems met reading."""

    values: list[T]
    problems: list[FormatError]
    #: Worker processes used (0: read in this process).
    workers: int = 0


def map_runs(
    paths: Sequence[str],
    fn: Callable[[Run], T],
    *,
    jobs: int = 1,
    window_bytes: int = WINDOW_BYTES,
) -> Mapped[T]:
    """``fn`` of every run of ``paths``, the windows read by ``jobs`` worker processes.

    With more than one job ``fn`` must be a module-level function (the
    workers get it by name) returning a picklable value; when the workers
    cannot start (a ``__main__`` they cannot import, say), or the dump holds
    mostly client-only traces (held back, so they would all travel back from
    the workers), the windows are read in this process.  :func:`default_jobs`
    picks a count for ``paths``.
    """
    planned = windows(paths, window_bytes)
    if planned is None:
        runs = read_runs(paths)
        return Mapped([fn(r) for r in runs], list(runs.problems))
    # The first window is read here, and tells whether workers can help: a
    # dump of client-only traces would only have them send every trace back.
    n = len(planned)
    first = _window_values(paths, planned[0], fn)
    jobs = max(1, min(jobs, len(planned) - 1))
    if jobs > 1 and len(first[1]) <= len(first[0]):
        from concurrent.futures.process import BrokenProcessPool

        try:
            rest = _in_workers(paths, fn, planned[1:], jobs)
            return _collect(fn, _shown(itertools.chain([first], rest), paths, n), jobs)
        except BrokenProcessPool:
            pass
    rest = (_window_values(paths, ids, fn) for ids in planned[1:])
    return _collect(fn, _shown(itertools.chain([first], rest), paths, n), 0)


def _shown(results: Iterable[_Result[T]], paths: Sequence[str], count: int) -> Iterator[_Result[T]]:
    """``results`` with a progress bar over the windows, for a person watching a big read."""
    return progress.track_items(results, count, _size(paths), f"reading {', '.join(paths)}")


def default_jobs(paths: Sequence[str]) -> int:
    """The CPU count for inputs over :data:`PARALLEL_BYTES`, else 1."""
    return (os.cpu_count() or 1) if _size(paths) >= PARALLEL_BYTES else 1


_Result: TypeAlias = "tuple[list[T], list[Run], Runs]"


def _collect(fn: Callable[[Run], T], results: Iterable[_Result[T]], workers: int) -> Mapped[T]:
    values: list[T] = []
    batches: list[Runs] = []
    held_back: list[Run] = []
    for found, back, batch in results:
        values.extend(found)
        held_back.extend(back)
        batches.append(batch)
    if held_back:
        values.extend(fn(r) for r in assemble(held_back))
    return Mapped(values, problems_of(batches), workers)


def _in_workers(
    paths: Sequence[str], fn: Callable[[Run], T], planned: list[list[str]], jobs: int
) -> Iterator[_Result[T]]:
    import concurrent.futures
    import multiprocessing

    # spawn: a fork of a process with threads running (an app's exporter,
    # say) can deadlock; the workers import only what reading needs.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(jobs, mp_context=context) as pool:
        n = len(planned)
        yield from pool.map(_window_values, [paths] * n, planned, [fn] * n)


def _window_values(
    paths: Sequence[str], trace_ids: Sequence[str], fn: Callable[[Run], T]
) -> _Result[T]:
    piece = read_window(paths, trace_ids)
    found = [fn(r) for r in piece.runs]
    # The runs stay here: only their values, the held-back traces and the problems travel.
    return found, piece.held_back, Runs(problems=piece.runs.problems)


def _size(paths: Sequence[str]) -> int:
    total = 0
    for name in expand(list(paths)):
        with contextlib.suppress(OSError):
            total += os.path.getsize(name)
    return total
