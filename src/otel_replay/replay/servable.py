"""What a run needs for its recorded model answers to be served, and why one cannot be.

``serve`` asks it when it starts (a run it cannot serve at all is left out, a
step it cannot answer is said once), never when a request reaches it.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from ..runs.failed_calls import cut_unrecorded, fails_again
from ..runs.model import Run
from .pinned_model import unanswered

__all__ = ["Unservable", "UnservableKind", "servable"]


#: Why a run's recorded model answers cannot all be served: the whole run
#: (``inspect_only``: no content recorded; ``no_model_calls``) or one model step
#: (``unanswered``: no answer recorded, or an empty one the run went on after;
#: ``unusable_output``: a damaged or unreadable payload; ``no_input``: its input
#: messages not recorded, so no request can match it).
UnservableKind = Literal[
    "inspect_only", "no_model_calls", "unanswered", "unusable_output", "no_input"
]


@dataclasses.dataclass(frozen=True)
class Unservable:
    """One reason a run's recorded model answers cannot all be served.

    ``kind`` says what is wrong, for a program to decide on; ``message`` says it,
    naming the run and step, for a person (``str()`` of the reason).
    """

    kind: UnservableKind
    message: str

    @property
    def whole_run(self) -> bool:
        """Nothing of the run can be served: a server leaves the run out."""
        return self.kind in ("inspect_only", "no_model_calls")

    def __str__(self) -> str:
        return self.message


def servable(run: Run) -> list[Unservable]:
    """What keeps a run's model steps from being served, one reason per problem (empty:
    fine)."""
    if run.kit.verdict == "inspect-only":
        missing = ", ".join(run.kit.missing) or "messages"
        said = f"run {run.run_id} is inspect-only: content was not captured ({missing})"
        return [Unservable("inspect_only", said)]
    problems = []
    steps = [s for s in run.steps if s.kind == "model" and s.model is not None]
    if not steps:
        problems.append(
            Unservable("no_model_calls", f"run {run.run_id} has no model calls to serve")
        )
    for k, step in enumerate(steps):
        m = step.model
        assert m is not None
        # A call a replay fails again (it ended the run, or the agent went on): no answer
        # needed, unless it failed partway through a stream the trace holds nothing of.
        reason = cut_unrecorded(run, step)
        if reason is None and not fails_again(run, step):
            reason = unanswered(step, went_on=k + 1 < len(steps))
        if reason is not None:
            problems.append(Unservable("unanswered", f"run {run.run_id} {reason}"))
        elif m.output_payload is not None and not m.output_payload.usable:
            said = (
                f"run {run.run_id} {step.label()}: recorded output cannot be replayed: "
                f"{m.output_payload.reason}"
            )
            problems.append(Unservable("unusable_output", said))
        if not m.input_messages:
            said = f"run {run.run_id} {step.label()}: no input messages were recorded"
            problems.append(Unservable("no_input", said))
    return problems
