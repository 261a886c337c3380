"""What every command says of a run: three questions, always in the same words and order.

A **replay kit** is what a trace must hold for a run to be replayed offline:
each model call's input and output messages, each tool call's arguments and
its result (or the error it raised), byte-exact, and the order they came in.
Of every run ``ls``, ``check``, ``show``, the HTML page and their ``--json``
answer three separate questions:

**recorded**
    how much of the kit the trace holds: ``full`` (all of it), ``model-only``
    (the model's messages, but some tool result or model output is missing or
    not usable), ``inspect-only`` (no content: the run can be looked at, not
    replayed).  See :mod:`.kit`.
**replays**
    ``replays``, or ``does not replay: REASON``, the reasons from the closed
    set below (:data:`REASONS`), in that order.
**outcome**
    how the run itself went: ``ok``; ``error: TYPE: MESSAGE`` when the agent
    run raised; ``N of M tool calls failed``; ``N of M model calls failed``.

E.g. ``full · replays · error: ValueError: no order`` or
``full · does not replay: 1 payload damaged · ok``.  Each part has a meaning
(:data:`GOOD`, :data:`WARN`, :data:`BAD`) that the commands colour by: a run
that raised, or whose tool calls failed, is never all good.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from .. import attributes as A

if TYPE_CHECKING:
    from .model import Run, Step

#: The meanings a part of a verdict is coloured by.
GOOD: Final = "good"
WARN: Final = "warn"
BAD: Final = "bad"

#: What the trace holds, and what that means.
RECORDED: Final = {"full": GOOD, "model-only": WARN, "inspect-only": BAD}

REPLAYS: Final = "replays"
DOES_NOT_REPLAY: Final = "does not replay"

# Why a run does not replay: a closed set, reported in this order.
#: The input had a cut or corrupt record where the run's spans were.
CUT_RECORDS: Final = "cut records"
#: Content capture was off, or no model step has any text, arguments or results.
NO_CONTENT: Final = "no content recorded"
#: Tools ran on a model's request, and no model call is in the trace.
NO_MODEL_CALLS: Final = "model calls not recorded"
#: A payload a replay serves or matches on is not byte-exact, not found, or repr() only.
DAMAGED: Final = "damaged"
#: A model call failed: there is no answer to serve.
MODEL_CALL_FAILED: Final = "a model call failed"
#: A model step's output messages are absent or say nothing.
OUTPUT_NOT_RECORDED: Final = "output not recorded"
#: A model step's output is there but is not GenAI messages.
OUTPUT_UNREADABLE: Final = "output unreadable"
#: A tool step has no result, or a tool call the model made has no tool step.
RESULTS_NOT_RECORDED: Final = "tool results not recorded"
#: Tool steps are taken from the messages (no tool spans): unverified, untimed.
TOOLS_FROM_MESSAGES: Final = "tool steps taken from messages"
#: A model input was recorded without the conversation it was sent.
HISTORY_NOT_RECORDED: Final = "input history not recorded"
#: A value holds what an instrumentation writes where it left content out (``<replaced>``).
LEFT_OUT: Final = "content left out by the tracing"

#: Every reason, in report order.
REASONS: Final = (
    CUT_RECORDS,
    NO_CONTENT,
    NO_MODEL_CALLS,
    DAMAGED,
    MODEL_CALL_FAILED,
    OUTPUT_NOT_RECORDED,
    OUTPUT_UNREADABLE,
    RESULTS_NOT_RECORDED,
    TOOLS_FROM_MESSAGES,
    HISTORY_NOT_RECORDED,
    LEFT_OUT,
)


def damaged(n: int) -> str:
    """The reason of ``n`` damaged payloads: ``2 payloads damaged``."""
    return f"{n} payload{'' if n == 1 else 's'} {DAMAGED}"


def replay_problem(reasons: Mapping[str, int]) -> str | None:
    """The reasons a run does not replay, in :data:`REASONS` order (``reasons`` maps each
    reason to how many times it was met); None when there is none."""
    said = [damaged(reasons[r]) if r == DAMAGED else r for r in REASONS if reasons.get(r, 0) > 0]
    return ", ".join(said) or None


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How the run itself went: whether the agent run raised, and which calls failed."""

    #: The agent run raised (its root span ended in error).
    raised: bool = False
    error_type: str | None = None
    error_message: str | None = None
    tool_calls: int = 0
    tool_calls_failed: int = 0
    model_calls: int = 0
    model_calls_failed: int = 0

    @property
    def error(self) -> str | None:
        """``TYPE: MESSAGE`` (or either alone) when the run raised."""
        if not self.raised:
            return None
        said = ": ".join(x for x in (self.error_type, self.error_message) if x)
        return said or "(no type or message recorded)"

    @property
    def ok(self) -> bool:
        return not self.raised and not self.tool_calls_failed and not self.model_calls_failed

    def same_error(self, other: Outcome) -> bool:
        """Whether both runs raised the same error (type and message), or neither raised."""
        if not (self.raised and other.raised):
            return self.raised == other.raised
        return self.error_message == other.error_message and same_type(
            self.error_type, other.error_type
        )

    def words(self, limit: int | None = None) -> str:
        """``ok``, or what went wrong; the error message cut at ``limit`` characters."""
        said = []
        if self.raised:
            error = self.error or ""
            if limit is not None and len(error) > limit:
                error = error[: limit - 1] + "…"
            said.append(f"error: {error}")
        if self.tool_calls_failed:
            said.append(f"{self.tool_calls_failed} of {self.tool_calls} tool calls failed")
        if self.model_calls_failed:
            said.append(f"{self.model_calls_failed} of {self.model_calls} model calls failed")
        return ", ".join(said) or "ok"

    @property
    def meaning(self) -> str:
        if self.raised or (self.tool_calls and self.tool_calls_failed >= self.tool_calls):
            return BAD
        return GOOD if self.ok else WARN

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "words": self.words(),
            "error": (
                {"type": self.error_type, "message": self.error_message} if self.raised else None
            ),
            "tool_calls": self.tool_calls,
            "tool_calls_failed": self.tool_calls_failed,
            "model_calls": self.model_calls,
            "model_calls_failed": self.model_calls_failed,
        }


@dataclasses.dataclass(frozen=True)
class RunVerdict:
    """The three answers of one run (see the module docstring)."""

    #: ``full``, ``model-only`` or ``inspect-only``.
    recorded: str
    #: Why the run does not replay; None when it replays.
    replay_problem: str | None
    outcome: Outcome

    @property
    def replays(self) -> bool:
        return self.replay_problem is None

    def parts(self, limit: int | None = None) -> tuple[tuple[str, str], ...]:
        """The three answers as (words, meaning), in order."""
        replays = (
            (REPLAYS, GOOD)
            if self.replay_problem is None
            else (f"{DOES_NOT_REPLAY}: {self.replay_problem}", BAD)
        )
        return (
            (self.recorded, RECORDED.get(self.recorded, BAD)),
            replays,
            (self.outcome.words(limit), self.outcome.meaning),
        )

    def words(self, limit: int | None = None) -> str:
        """``full · replays · ok``: the three answers in one line."""
        return " · ".join(text for text, _ in self.parts(limit))

    def to_json(self) -> dict[str, Any]:
        """The fields every ``--json`` carries beside its own (``verdict`` is ``recorded``)."""
        return {
            "verdict": self.recorded,
            "replays": self.replays,
            "replay_problem": self.replay_problem,
            "outcome": self.outcome.to_json(),
            "verdict_words": self.words(),
        }


_MAIN = "__main__."


def same_type(a: str | None, b: str | None) -> bool:
    """Whether two recorded exception type names name one class: the same name, or the
    same but for the module a script's own classes get when it runs as ``__main__``
    (recorded from ``python agent.py``, replayed with ``agent`` imported)."""
    if a == b:
        return True
    if a is None or b is None:
        return False
    for main, other in ((a, b), (b, a)):
        if main.startswith(_MAIN):
            name = main[len(_MAIN) :]
            if other == name or other.endswith("." + name):
                return True
    return False


def step_error(step: Step) -> tuple[str | None, str | None] | None:
    """(type, message) of the error ``step`` ended with; None when it did not fail."""
    if step.tool is not None and step.tool.error is not None:
        return step.tool.error.type or None, step.tool.error.message or None
    error_type = _text(step.attributes.get(A.ERROR_TYPE))
    if step.status != "ERROR" and error_type is None:
        return None
    # The last exception event is the one that ended the span (earlier ones were retried).
    exc = next((e for e in reversed(step.events) if e.get("name") == "exception"), None)
    ev: Mapping[str, Any] = (exc or {}).get("attributes") or {}
    kind = error_type or _text(ev.get("exception.type"))
    message = _text(ev.get("exception.message")) or _text(step.status_message)
    return kind, message


def _text(value: Any) -> str | None:
    return None if value in (None, "") else str(value)


def _failed(step: Step) -> bool:
    return step.status == "ERROR" or (step.tool is not None and step.tool.error is not None)


def outcome(run: Run) -> Outcome:
    """How ``run`` went: the error its root raised (an agent or other root span that ended
    in error; a failed model or tool call is counted as such), and its failed calls."""
    models = [s for s in run.steps if s.kind == "model" and s.model is not None]
    tools = [s for s in run.steps if s.kind == "tool" and s.tool is not None]
    error: tuple[str | None, str | None] | None = None
    for root in run.roots:
        if root.kind in ("model", "tool") or root.retried_as is not None:
            continue  # a call's failed attempt, a root of a stitched run: retried, not raised
        error = step_error(root)
        if error is not None:
            break
    return Outcome(
        raised=error is not None,
        error_type=error[0] if error else None,
        error_message=error[1] if error else None,
        tool_calls=len(tools),
        tool_calls_failed=sum(map(_failed, tools)),
        model_calls=len(models),
        model_calls_failed=sum(map(_failed, models)),
    )


def run_verdict(run: Run) -> RunVerdict:
    """The three answers of ``run``."""
    kit = run.kit
    problem = kit.replay_problem
    if problem is None and not kit.replayable:
        # Every path of the kit check that refuses a replay names its reason; this one
        # did not: say so rather than call the run replayable.
        problem = "reason not named"
    return RunVerdict(kit.verdict, None if kit.replayable else problem, outcome(run))
