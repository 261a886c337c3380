"""A cohort's runs: those read again by id for the replays, each replayed against every
candidate (or skipped, with why), and the totals per candidate.

The candidates and their outcomes are :mod:`otel_replay.commands.cohort`'s; the runs are
those ``ls`` lists for the same filters (:mod:`otel_replay.commands.listing`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ..otlp.errors import FormatError
from ..runs.load import load
from ..runs.model import Run
from ..runs.stream import iter_runs
from ..runs.summary import RunSummary
from ..sources.files import is_database
from ..sources.progress import working
from .cohort import Candidate, Comparator, Outcome, Price, Totals, price_of

#: One run of the cohort: its summary, each candidate's outcome, why it was skipped.
Row = tuple[RunSummary, list[Outcome], str | None]


def runs_of(paths: tuple[str, ...], wanted: set[str]) -> tuple[dict[str, Run], list[FormatError]]:
    """The runs named in ``wanted``: a file's read a window at a time, keeping only those;
    a database's read by their trace."""
    runs: dict[str, Run] = {}
    faults: list[FormatError] = []
    if not wanted:
        return runs, faults
    files = [p for p in paths if not is_database(p)]
    if files:
        for batch in iter_runs(*files):
            runs.update((r.run_id, r) for r in batch if r.run_id in wanted)
            faults += batch.problems
    for name in (p for p in paths if is_database(p)):
        for run_id in sorted(wanted - set(runs)):
            read = load(name, trace_id=run_id)
            runs.update((r.run_id, r) for r in read if r.run_id in wanted)
            faults += read.problems
    return runs, faults


def replayed(
    picked: Sequence[RunSummary],
    runs: Mapping[str, Run],
    candidates: Sequence[Candidate],
    comparator: Comparator,
    prices: Mapping[str, Price],
) -> list[Row]:
    """Each picked run with its outcome per candidate, or why it was skipped."""
    rows: list[Row] = []
    with working(f"replaying {len(picked)} run(s) against {len(candidates)} candidate(s)"):
        for s in picked:
            run = runs.get(s.run_id)
            why = skipped(s, candidates)
            if why is None and run is None:
                why = "not found when read again (the source changed?)"
            if why is not None or run is None:
                rows.append((s, [], why))
                continue
            rows.append((s, [_one(c, s, run, comparator, prices) for c in candidates], None))
    return rows


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
    """Each candidate's outcomes counted over the rows."""
    totals = [Totals(c.label) for c in candidates]
    for s, outcomes, _ in rows:
        for total, outcome in zip(totals, outcomes, strict=False):
            total.add(outcome, s.run_id)
    return totals
