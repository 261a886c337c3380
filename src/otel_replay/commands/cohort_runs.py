"""A cohort's runs: those read again by id for the replays, each replayed against every
candidate (or skipped, with why, or not run: a cap reached, the command stopped), and
the totals per candidate.

The runs are read again a window of the input at a time and each dropped once replayed:
what is kept per run is its summary and its outcomes (a :class:`Row`), so memory holds
a window's runs and the rows, however many runs there are.  ``jobs`` runs are replayed
at once, in threads: a candidate model's requests wait on the network, and overlap.  An
agent's replay patches the process (the frozen clock, the tools' interception, the
network guard, the random seed), so a candidate that is an agent
(:attr:`~otel_replay.commands.cohort_outcomes.Candidate.exclusive`) replays with no other replay
beside it.  The rows come back in the cohort's order, however many run at once.

The candidates and their outcomes are :mod:`otel_replay.commands.cohort`'s; the runs are
those ``ls`` lists for the same filters (:mod:`otel_replay.commands.listing`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING

from ..otlp.errors import FormatError
from ..replay.recorder import REPLAY_OF
from ..runs.load import load
from ..runs.model import Run
from ..runs.stream import iter_runs
from ..runs.summary import RunSummary
from ..sources.files import is_database
from .cohort_outcomes import (
    COHORT_CANDIDATE,
    COHORT_ID,
    COHORT_OUTCOME_JSON,
    Candidate,
    Comparator,
    Outcome,
)
from .cohort_totals import Price, Totals, price_of

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from ..report.cohort_page import DiffPage, SideBySide, Wanted

#: The window a file is read again in for the replays (bytes of the file): a replay
#: holds far more of a run than the listing does, so a smaller window than the listing's.
READ_AGAIN_WINDOW = 2 * 1024 * 1024


@dataclasses.dataclass
class Row:
    """One run of the cohort: its summary, each candidate's outcome, and, where it has
    none, why: ``skipped`` (no candidate can take it, or it was not found again) or
    ``not_run`` (a cap was reached, or the command was stopped, before it started)."""

    summary: RunSummary
    outcomes: list[Outcome]
    skipped: str | None = None
    not_run: str | None = None


@dataclasses.dataclass(frozen=True)
class Caps:
    """What the cohort may spend on candidate models, over all its candidates: requests,
    tokens (input and output), dollars (of the priced models).  Checked before each run
    starts: a run under way finishes (so the spending can pass a cap by what the runs
    under way spend), and the runs after are not run."""

    requests: int | None = None
    tokens: int | None = None
    cost: float | None = None


class Spent:
    """What the runs replayed so far spent on candidate models (thread-safe), against the
    :class:`Caps`; a run read back from an earlier call's replays spends nothing."""

    def __init__(self, caps: Caps) -> None:
        self.caps = caps
        self.requests = 0
        self.tokens = 0
        self.cost = 0.0
        self._lock = threading.Lock()

    def add(self, candidates: Sequence[Candidate], outcomes: Sequence[Outcome]) -> None:
        with self._lock:
            for c, out in zip(candidates, outcomes, strict=False):
                if out.resumed or getattr(c, "model", None) is None:
                    continue  # the pinned model costs nothing
                self.requests += out.model_calls
                self.tokens += out.tokens or 0
                self.cost += out.cost or 0.0

    def reached(self) -> str | None:
        """The cap reached, in words, or None."""
        caps = self.caps
        with self._lock:
            if caps.requests is not None and self.requests >= caps.requests:
                return f"--max-requests {caps.requests} reached ({self.requests} requests)"
            if caps.tokens is not None and self.tokens >= caps.tokens:
                return f"--max-tokens {caps.tokens} reached ({self.tokens} tokens)"
            if caps.cost is not None and self.cost >= caps.cost:
                return f"--max-cost {caps.cost:g} reached (${self.cost:.4f})"
        return None


class Stop:
    """Set (from a signal handler, say) to start no more runs: the runs under way finish."""

    def __init__(self) -> None:
        self.why: str | None = None

    def set(self, why: str) -> None:
        self.why = self.why or why


class _Gate:
    """Shared for a replay that changes nothing process-wide, exclusive for one that
    does; an exclusive replay waiting goes before new shared ones (it is not starved)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._shared = 0
        self._exclusive = False
        self._waiting = 0

    @contextlib.contextmanager
    def held(self, exclusive: bool) -> Iterator[None]:
        with self._cond:
            if exclusive:
                self._waiting += 1
                self._cond.wait_for(lambda: not self._exclusive and not self._shared)
                self._waiting -= 1
                self._exclusive = True
            else:
                self._cond.wait_for(lambda: not self._exclusive and not self._waiting)
                self._shared += 1
        try:
            yield
        finally:
            with self._cond:
                if exclusive:
                    self._exclusive = False
                else:
                    self._shared -= 1
                self._cond.notify_all()


def read_again(
    paths: Sequence[str], wanted: Sequence[str], faults: list[FormatError]
) -> Iterator[Run]:
    """The runs named in ``wanted``, one at a time: a file's read a window at a time (in
    the file's order), a database's by their trace (in ``wanted``'s order); each read
    problem appended to ``faults``."""
    keep = set(wanted)
    seen: set[str] = set()
    files = [p for p in paths if not is_database(p)]
    if files and keep:
        for batch in iter_runs(*files, window_bytes=READ_AGAIN_WINDOW):
            faults += batch.problems
            for run in batch:
                if run.run_id in keep and run.run_id not in seen:
                    seen.add(run.run_id)
                    yield run
    for name in (p for p in paths if is_database(p)):
        for run_id in wanted:
            if run_id in seen:
                continue
            read = load(name, trace_id=run_id)
            faults += read.problems
            for run in read:
                if run.run_id == run_id:
                    seen.add(run_id)
                    yield run


def pages_made(
    paths: Sequence[str], files: Sequence[str], wanted: Sequence[Wanted], sides: SideBySide
) -> tuple[list[DiffPage], list[FormatError]]:
    """The side-by-side pages ``wanted`` (of replays written by an earlier call of the
    cohort, when no page was made of them), made one at a time: each run read again in
    turn, each of its replays read by its id from its candidate's file (``files[n]``:
    candidate ``n + 1``'s), so that one run and one replay are held at once."""
    by_run: dict[str, list[Wanted]] = {}
    for w in wanted:
        by_run.setdefault(w.run_id, []).append(w)
    faults: list[FormatError] = []
    pages: list[DiffPage] = []
    for run in read_again(paths, list(by_run), faults):
        for w in by_run.pop(run.run_id, []):
            if w.candidate > len(files) or not os.path.isfile(files[w.candidate - 1]):
                continue
            read = load(files[w.candidate - 1], trace_id=w.replay_id)
            faults += read.problems
            replay = next((r for r in read if r.run_id == w.replay_id), None)
            page = sides.write(run, w.candidate, replay) if replay is not None else None
            if page is not None:
                pages.append(page)
    if sides.failed is not None:
        raise sides.failed
    return pages, faults


def replay_run(spans: Sequence[ReadableSpan]) -> Run | None:
    """The replay whose ``spans`` were just written, as a run (read back from their
    encoding, as a reader of the file would read them), or None for no spans."""
    from ..otlp.proto_reader import records_from_proto  # only for a page of the replays
    from ..otlp.proto_writer import encode_request
    from ..otlp.records import SpanRecord
    from ..runs.build import build_runs

    records = records_from_proto(encode_request(spans), "replay", 0)
    runs = build_runs(r for r in records if isinstance(r, SpanRecord))
    return runs[0] if runs else None


def written_before(
    candidates: Sequence[Candidate],
) -> tuple[dict[tuple[str, int], Outcome], str | None, list[FormatError]]:
    """What earlier calls of the cohort wrote to each candidate's file: ``(run id,
    candidate index)`` -> the outcome its replay's root carries (for that candidate's
    label), the id of the cohort they were written for, and the files' read problems.

    A replay is one record of its file, appended whole or not at all: a cohort killed
    while appending one leaves it torn at the file's end, cut here (and said, once)
    before the file is read, so that its run is replayed again as if never written.
    ``OSError`` when a file cannot be read or is not a trace file."""
    from ..export.file_exporter import FileSpanExporter  # only for the files of -o

    earlier: dict[tuple[str, int], Outcome] = {}
    cohort_id: str | None = None
    faults: list[FormatError] = []
    for n, c in enumerate(candidates):
        if c.record_to is None or not os.path.isfile(c.record_to):
            continue
        file = FileSpanExporter(c.record_to)
        try:
            file.cut_torn_tail()
        finally:
            file.shutdown()
        for batch in iter_runs(c.record_to):
            faults += batch.problems
            for replay in batch:
                root = replay.roots[0].attributes if replay.roots else {}
                of, said = root.get(REPLAY_OF), root.get(COHORT_OUTCOME_JSON)
                if root.get(COHORT_CANDIDATE) != c.label or not isinstance(of, str):
                    continue
                try:
                    out = Outcome.from_json(json.loads(str(said)))
                except (ValueError, TypeError, KeyError, AttributeError):
                    continue  # written before outcomes were, or not by a cohort: replayed again
                out.replay_run_id, out.resumed = replay.run_id, True
                earlier.setdefault((of, n), out)
                said_id = root.get(COHORT_ID)
                cohort_id = cohort_id or (said_id if isinstance(said_id, str) else None)
    return earlier, cohort_id, faults


def replayed(
    paths: Sequence[str],
    picked: Sequence[RunSummary],
    candidates: Sequence[Candidate],
    comparator: Comparator,
    prices: Mapping[str, Price],
    *,
    jobs: int = 1,
    caps: Caps | None = None,
    earlier: Mapping[tuple[str, int], Outcome] | None = None,
    stop: Stop | None = None,
    done: Callable[[Row], None] | None = None,
    sides: SideBySide | None = None,
) -> tuple[list[Row], list[FormatError]]:
    """Each picked run, in ``picked``'s order, with its outcome per candidate (those in
    ``earlier`` taken from it, not replayed), or why it has none; and the read problems.
    ``jobs`` runs replay at once; ``done`` is told of each row as it is made (from the
    thread that made it, one at a time); each replay written is shown beside its run by
    ``sides``, when given, while both are held."""
    cohort = _Cohort(candidates, comparator, prices, Spent(caps or Caps()), earlier or {}, sides)
    stop = stop if stop is not None else Stop()
    rows: list[Row | None] = [None] * len(picked)
    told = threading.Lock()

    def put(i: int, row: Row) -> None:
        with told:
            rows[i] = row
            if done is not None:
                done(row)

    def halted() -> str | None:
        return stop.why or cohort.spent.reached()

    at: dict[str, list[int]] = {}
    for i, s in enumerate(picked):
        why = skipped(s, candidates)
        if why is not None:
            put(i, Row(s, [], skipped=why))
        elif all((s.run_id, k) in cohort.earlier for k in range(len(candidates))):
            put(i, Row(s, [cohort.earlier[s.run_id, k] for k in range(len(candidates))]))
        else:
            at.setdefault(s.run_id, []).append(i)
    faults: list[FormatError] = []
    if jobs > 1:
        _clients_made(candidates)
    runs = read_again(paths, list(at), faults)
    with _Pool(jobs) as pool:
        while halted() is None and pool.failed is None:
            # Read beside model replays, not beside an agent's (its network guard would
            # refuse a database's connection).
            with cohort.gate.held(False):
                run = next(runs, None)
            if run is None:
                break
            for i in at.pop(run.run_id, []):
                pool.run(functools.partial(_made, put, i, cohort, picked[i], run, halted))
    why = halted()
    for positions in at.values():
        for i in positions:
            if why is not None:
                put(i, Row(picked[i], [], not_run=why))
            else:
                put(
                    i, Row(picked[i], [], skipped="not found when read again (the source changed?)")
                )
    return [r for r in rows if r is not None], faults


def _clients_made(candidates: Sequence[Candidate]) -> None:
    """Each candidate model's client, made before the threads share it (made on first
    use, it would be made by each thread asking at once); one that cannot be made is
    each run's refusal, as without threads."""
    for c in candidates:
        model = getattr(c, "model", None)
        if model is not None:
            with contextlib.suppress(Exception):
                model.client()


def _made(
    put: Callable[[int, Row], None],
    i: int,
    cohort: _Cohort,
    s: RunSummary,
    run: Run,
    halted: Callable[[], str | None],
) -> None:
    put(i, cohort.row(s, run, halted))


_NOT_FOUND = "not found when read again (the source changed?)"


@dataclasses.dataclass
class _Cohort:
    """What each run is replayed with."""

    candidates: Sequence[Candidate]
    comparator: Comparator
    prices: Mapping[str, Price]
    spent: Spent
    earlier: Mapping[tuple[str, int], Outcome]
    sides: SideBySide | None = None
    gate: _Gate = dataclasses.field(default_factory=_Gate)

    def row(self, s: RunSummary, run: Run, halted: Callable[[], str | None]) -> Row:
        """The run's outcome against each candidate, or why it is not run."""
        why = halted()
        if why is not None:
            return Row(s, [], not_run=why)
        outcomes = []
        for n, c in enumerate(self.candidates):
            out = self.earlier.get((s.run_id, n))
            if out is None:
                with self.gate.held(c.exclusive):
                    out = _one(c, s, run, self.comparator, self.prices)
                spans = out.write_replay()
                if self.sides is not None and spans:
                    replay = replay_run(spans)
                    if replay is not None:
                        self.sides.write(run, n + 1, replay)
            outcomes.append(out)
        self.spent.add(self.candidates, outcomes)
        return Row(s, outcomes)


class _Pool:
    """Runs given work ``jobs`` at a time in threads (in the caller's thread for one):
    the caller waits for a free thread, so no more than ``jobs`` runs are held at once
    besides the window being read.  The first work that raises stops the pool; leaving
    it waits for the work under way and raises that exception."""

    def __init__(self, jobs: int) -> None:
        self.jobs = jobs
        self.failed: BaseException | None = None
        self._free = threading.BoundedSemaphore(jobs)
        self._threads = ThreadPoolExecutor(jobs) if jobs > 1 else None

    def __enter__(self) -> _Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._threads is not None:
            self._threads.shutdown(wait=True)
        if self.failed is not None:
            raise self.failed

    def run(self, work: Callable[[], None]) -> None:
        if self._threads is None:
            work()
            return
        self._free.acquire()
        future = self._threads.submit(work)
        future.add_done_callback(self._finished)

    def _finished(self, future: Future[None]) -> None:
        self._free.release()
        exc = future.exception()
        if exc is not None and self.failed is None:
            self.failed = exc


def skipped(s: RunSummary, candidates: Sequence[Candidate]) -> str | None:
    """Why no candidate can take the run (its words as ls says them), or None."""
    if s.replayable:
        return None
    said = f"does not replay: {s.replay_problem or 'reason not named'}"
    if s.verdict == "inspect-only" or all(c.needs_replayable for c in candidates):
        return said
    return None


def _one(
    c: Candidate, s: RunSummary, run: Run, comparator: Comparator, prices: Mapping[str, Price]
) -> Outcome:
    """The run replayed against ``c``, or refused when ``c`` needs a run that replays; its
    cost where the candidate's model has a price."""
    if c.needs_replayable and not s.replayable:
        return Outcome("refused", f"does not replay: {s.replay_problem or 'reason not named'}")
    out = c.replay(run, comparator)
    model = getattr(c, "model", None)  # a candidate model's; the pinned model costs nothing
    price = price_of(model, prices) if model is not None else None
    if price is not None:
        out.cost = price.cost(out.input_tokens, out.output_tokens)
    return out


def totals_of(candidates: Sequence[Candidate], rows: Sequence[Row]) -> list[Totals]:
    """Each candidate's outcomes counted over the rows, and the runs not run."""
    totals = [Totals(c.label) for c in candidates]
    for row in rows:
        for total, outcome in zip(totals, row.outcomes, strict=False):
            total.add(outcome, row.summary.run_id)
        if row.not_run is not None:
            for total in totals:
                total.not_run += 1
    return totals
