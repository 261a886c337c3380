"""What-if over many runs: replay each recorded run against a candidate, say what changed.

A candidate is one of:

- :class:`AgentCandidate`: the user's agent code against the pinned model, or
  against a candidate model (:mod:`otel_replay.commands.cohort_agent`).
- :class:`ModelLoop`: a candidate model driving the run's own loop, with no
  agent code; :class:`ModelPerStep`: each recorded model request sent to the
  candidate once, as recorded (:mod:`otel_replay.commands.cohort_model`).

Each run gets an :class:`Outcome`, its answer judged by a :class:`Comparator`
(:mod:`otel_replay.commands.cohort_outcomes`).  What the candidates share about the
recorded run is in :mod:`otel_replay.commands.cohort_recorded`; the totals and prices in
:mod:`otel_replay.commands.cohort_totals`.  This module holds :func:`replay_cohort` and
names all of them: import from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..runs.model import Run
from .cohort_agent import AgentCandidate
from .cohort_model import ModelLoop, ModelPerStep
from .cohort_outcomes import (
    COHORT_CANDIDATE,
    COHORT_ID,
    COHORT_OUTCOME,
    COHORT_OUTCOME_JSON,
    DIFF_LINES,
    OUTCOMES,
    WORDS,
    Candidate,
    Comparator,
    FirstDivergence,
    Judge,
    Outcome,
    OutcomeKind,
    Replayed,
    first_turn_apart,
)
from .cohort_recorded import MAX_TURNS, STDOUT, WRITING, Pace
from .cohort_totals import WORST, Price, Totals, price_of
from .draw import drawn

__all__ = [
    "COHORT_CANDIDATE",
    "COHORT_ID",
    "COHORT_OUTCOME",
    "COHORT_OUTCOME_JSON",
    "DIFF_LINES",
    "MAX_TURNS",
    "OUTCOMES",
    "STDOUT",
    "WORDS",
    "WORST",
    "WRITING",
    "AgentCandidate",
    "Candidate",
    "Comparator",
    "FirstDivergence",
    "Judge",
    "ModelLoop",
    "ModelPerStep",
    "Outcome",
    "OutcomeKind",
    "Pace",
    "Price",
    "Replayed",
    "Totals",
    "drawn",
    "first_turn_apart",
    "price_of",
    "replay_cohort",
]


def replay_cohort(
    runs: Iterable[Run], candidates: Sequence[Candidate], comparator: Comparator
) -> Iterable[tuple[Run, list[Outcome]]]:
    """Each run, and its outcome against each candidate, in the runs' order (each replay
    written where its candidate asks for it)."""
    for run in runs:
        outcomes = [c.replay(run, comparator) for c in candidates]
        for out in outcomes:
            out.write_replay()
        yield run, outcomes
