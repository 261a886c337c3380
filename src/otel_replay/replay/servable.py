"""What a replay needs that a run lacks: the one list ``serve`` and in-process replay refuse by.

``serve`` asks :func:`servable` when it starts (a run it cannot serve at all is left
out, a step it cannot answer is said once), never when a request reaches it.  An
in-process replay also stubs the run's tools, and so needs each tool step's arguments
(to know the call) and result (to return it): :func:`lacking` adds what
:func:`tool_lacks` says of them, and :func:`needed` keeps what a replay with given
options will certainly ask for (a session refuses those before the agent runs).  The
pinned model and the tool stubs refuse a step in the words these functions give, so
every path names the same thing.
"""

from __future__ import annotations

import dataclasses
from typing import Literal

from ..runs.failed_calls import (
    cut_stream,
    cut_unrecorded,
    fails_again,
    request_missing,
    says_something,
)
from ..runs.model import Run, Step
from .options import ReplayOptions

__all__ = [
    "Unservable",
    "UnservableKind",
    "lacking",
    "needed",
    "no_input",
    "servable",
    "step_reason",
    "tool_lacks",
    "unanswered",
]


#: Why a run's recorded model answers cannot all be served: the whole run
#: (``inspect_only``: no content recorded; ``no_model_calls``) or one model step
#: (``unanswered``: no answer recorded, or an empty one the run went on after;
#: ``unusable_output``: a damaged or unreadable payload; ``no_input``: its input
#: messages not recorded, so no request can match it); or, to stub its tools, one tool
#: step (``no_arguments``: the call's arguments not recorded; ``no_result``: what it
#: returned not recorded, or not readable; ``result_as_sent``: only the text the model
#: was sent recorded, which does not say what the tool returned).
UnservableKind = Literal[
    "inspect_only",
    "no_model_calls",
    "unanswered",
    "unusable_output",
    "no_input",
    "no_arguments",
    "no_result",
    "result_as_sent",
]


@dataclasses.dataclass(frozen=True)
class Unservable:
    """One reason a run's recorded model answers cannot all be served.

    ``kind`` says what is wrong, for a program to decide on; ``message`` says it,
    naming the run and step, for a person (``str()`` of the reason).
    """

    kind: UnservableKind
    message: str
    #: The step it is of (its index); None for the whole run.
    index: int | None = None
    #: What is missing, naming the step but not the run (the words a replay refuses the
    #: step with); the message when the reason is the whole run's.
    what: str = ""

    def __post_init__(self) -> None:
        if not self.what:
            object.__setattr__(self, "what", self.message)

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
            problems.append(step_reason(run, step, "unanswered", reason))
        elif m.output_payload is not None and not m.output_payload.usable:
            said = f"{step.label()}: recorded output cannot be replayed: {m.output_payload.reason}"
            problems.append(step_reason(run, step, "unusable_output", said))
        lost = no_input(run, step)
        if lost is not None:
            problems.append(step_reason(run, step, "no_input", lost))
    return problems


def step_reason(run: Run, step: Step, kind: UnservableKind, said: str) -> Unservable:
    """The reason ``said`` of ``step`` (naming the step), as it names the run too."""
    return Unservable(kind, f"run {run.run_id} {said}", step.index, said)


def unanswered(step: Step, went_on: bool) -> str | None:
    """Why ``step``'s recorded answer cannot be served, or None when it can.

    No output recorded; or an answer that says nothing (no text, no call) while
    the run went on after it (``went_on``: a later model call), so the model
    did answer and the recording lost it.  Served, it would end the agent with
    an empty answer as if that were what the model said.  Or a stream cut short
    (:func:`~otel_replay.runs.failed_calls.cut_stream`) that is not how its run ended
    (the caller asks :func:`~otel_replay.runs.failed_calls.fails_again` first): its first
    deltas served as a whole answer would be an answer the model never gave.
    """
    m = step.model
    assert m is not None
    if not m.output_messages:
        return f"{step.label()}: no output messages were recorded"
    if cut_stream(step):
        return (
            f"{step.label()}: the answer streamed and did not reach its end (no finish "
            "reason recorded), and nothing says the run ended in it: the answer is not "
            "recorded whole"
        )
    if not says_something(m.output_messages) and went_on:
        return (
            f"{step.label()}: the recorded answer is empty, though the run went on after it: "
            "the answer was not recorded"
        )
    return None


def no_input(run: Run, step: Step) -> str | None:
    """Why no request can be checked against model ``step`` (its input messages were not
    recorded), or None when they were."""
    if step.model is None or step.model.input_messages:
        return None
    missing = request_missing(run, step) or (
        "its request is not in the trace (no input messages were recorded)"
    )
    return f"{step.label()}: {missing}; the request sent cannot be checked against it"


def tool_lacks(step: Step) -> list[tuple[UnservableKind, str]]:
    """What a stub of tool ``step`` needs that the trace lacks (kind, and the words naming
    the step), as the verdict names it (``steps[i].arguments``, ``steps[i].result``): its
    arguments, without which a call made cannot be matched to it; its result, unless it
    raised (an exporter drops an output it cannot encode, a run read from messages alone
    may hold none).  Empty: nothing lacking."""
    t = step.tool
    if t is None:
        return []
    found: list[tuple[UnservableKind, str]] = []
    if t.arguments_payload is None or t.arguments_payload.status == "missing":
        found.append(
            ("no_arguments", f"{step.label()}: no arguments were recorded for this tool call")
        )
    p = t.result_payload
    if not t.raised and (p is None or p.status == "missing"):
        found.append(("no_result", f"{step.label()}: no result was recorded for this tool call"))
    return found


def lacking(run: Run) -> list[Unservable]:
    """What an in-process replay of ``run`` needs that it lacks: what keeps its model
    answers from being served (:func:`servable`), and each tool step a stub cannot answer
    (:func:`tool_lacks`), in step order after the model's."""
    problems = servable(run)
    if any(p.kind == "inspect_only" for p in problems):
        return problems
    for step in run.steps:
        if step.kind == "tool":
            problems += [step_reason(run, step, k, said) for k, said in tool_lacks(step)]
    return problems


#: What a step's answer lacks: nothing to serve it with (an override or a live step
#: supplies one), unlike its request or arguments, which the call is still matched by.
_ANSWER: frozenset[UnservableKind] = frozenset({"unanswered", "unusable_output", "no_result"})


def needed(run: Run, options: ReplayOptions) -> list[Unservable]:
    """What an in-process replay of ``run`` with ``options`` will certainly ask for and
    the trace lacks (:func:`lacking`, kept to those): empty when nothing is certain.

    Certain: the steps a complete replay must replay from the recording, up to the
    first step run live (``live_from``) or forked (``override``: past it the agent may
    go anywhere; the step itself needs its request or arguments, which the call is
    matched by, but not its answer).  Not needed: tools run live (policy ``live``,
    ``live_tools``) or refused (policy ``error``), a call the stack answered itself,
    steps of a ``candidate`` model's path, anything of a replay that need not run to
    its end (``require_complete=False``), and model calls of a run that has none (its
    tools are replayed all the same).  A run that recorded no content (``inspect_only``)
    is refused whatever the options: nothing of it can be replayed.
    """
    found = lacking(run)
    if any(item.kind == "inspect_only" for item in found):
        return found
    if options.model == "candidate" or not options.require_complete:
        return []
    ends = [
        *(options.override or {}),
        *([options.live_from] if options.live_from is not None else []),
    ]
    end = min(ends, default=len(run.steps))
    forked = options.live_from is None or end < options.live_from
    out = []
    for item in found:
        if item.index is None:
            continue  # no model calls: the tools replay all the same
        step = run.steps[item.index]
        if item.index > end or (item.index == end and (not forked or item.kind in _ANSWER)):
            continue
        t = step.tool
        if t is not None and (
            t.not_run
            or t.tool_name in options.live_tools
            or options.tool_policy(t.tool_name) != "stub"
        ):
            continue
        out.append(item)
    return out
