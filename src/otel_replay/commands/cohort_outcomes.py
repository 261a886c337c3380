"""What a run replayed against a candidate came to, and how it is told apart from the
recorded run: the :class:`Outcome` kinds, the :class:`Comparator` of answers, the first
turn whose tool calls differ, and the :class:`Candidate` protocol every candidate meets.

Each run gets an :class:`Outcome`: ``same`` (the same tool calls, turn by
turn, and the same answer), ``other_answer`` (the same tool calls, another
answer), ``other_path`` (the first place the tool calls differ: the recorded
step, its kind, a diff), ``new_path`` (a tool call the recording cannot
answer), ``error`` (the agent raised, or the candidate's endpoint failed) or
``refused`` (the run lacks what the candidate needs, named).  Tool calls of
one turn are compared as a set (parallel calls in another order are the same
calls), their arguments as JSON values; answers by a :class:`Comparator`.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .. import messages as M
from ..payload import codec as payload
from ..replay.divergence import render_diff
from ..replay.matchers import tool_arguments_key
from ..replay.recorder import run_id_of
from ..runs.failed_calls import fails_again
from ..runs.model import Run, Step
from ..same_message import message_key

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

    from .cohort_recorded import Pace

OutcomeKind = Literal["same", "other_answer", "other_path", "new_path", "error", "refused"]
#: Each outcome, in the order tables count them.
OUTCOMES: tuple[OutcomeKind, ...] = (
    "same",
    "other_answer",
    "other_path",
    "new_path",
    "error",
    "refused",
)
#: How the terminal says each outcome.
WORDS: dict[str, str] = {
    "same": "same",
    "other_answer": "same tools, other answer",
    "other_path": "other path",
    "new_path": "new path",
    "error": "error",
    "refused": "refused",
}
#: Lines of a divergence's diff kept in an outcome (the whole diff is the step's to show).
DIFF_LINES = 12
#: On the root of a replay written by a cohort: the cohort's id, the candidate's label.
COHORT_ID = "otel_replay.cohort.id"
COHORT_CANDIDATE = "otel_replay.cohort.candidate"
#: On the root of a replay written by a cohort: its outcome's kind, and the whole outcome
#: as JSON (what a rerun of the cohort into the same directory reports it from).
COHORT_OUTCOME = "otel_replay.cohort.outcome"
COHORT_OUTCOME_JSON = "otel_replay.cohort.outcome_json"


@dataclasses.dataclass
class Replayed:
    """What a candidate did with one run, as a judge receives it beside the recorded run."""

    candidate: str
    answer: str | None
    #: ``(tool name, arguments)`` of each tool call, in order.
    tool_calls: list[tuple[str, Any]]
    #: The conversation the candidate held (GenAI messages), where it drove the loop.
    messages: list[dict[str, Any]] | None = None


#: ``judge(recorded run, replayed) -> bool``: the answers say the same.
Judge = Callable[[Run, Replayed], Any]


@dataclasses.dataclass(frozen=True)
class Comparator:
    """When two answers are the same: ``exact`` (the same text), ``normalized`` (the same
    message as replay and stitching define it: whitespace at the ends and repeated
    aside), and, where those differ, the user's ``judge`` when given."""

    how: Literal["exact", "normalized"] = "normalized"
    judge: Judge | None = None

    def same_text(self, recorded: str | None, actual: str | None) -> bool:
        """No text and an empty text are the same (a stack records a turn of tool calls
        with an empty text part, another with none)."""
        if self.how == "exact":
            return (recorded or "") == (actual or "")
        return _text_key(recorded or "") == _text_key(actual or "")

    def same_answer(self, run: Run, replayed: Replayed, recorded: str | None) -> bool:
        if self.same_text(recorded, replayed.answer):
            return True
        return self.judge is not None and bool(self.judge(run, replayed))


def _text_key(text: str) -> str | None:
    return message_key({"role": "assistant", "parts": [{"type": "text", "content": text}]})


@dataclasses.dataclass
class FirstDivergence:
    """Where a candidate first left the recording: the recorded step (None: past its end),
    the step's kind, what differs, and a short diff (recorded vs candidate)."""

    step: int | None
    kind: str
    what: str
    diff: str = ""

    def __str__(self) -> str:
        where = f"step {self.step}" if self.step is not None else "after the recording"
        return f"{where} ({self.kind}): {self.what}"

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass
class Outcome:
    """One run replayed against one candidate."""

    kind: OutcomeKind
    #: Why, in a line: the error, what was refused, the call the recording cannot answer.
    detail: str = ""
    divergence: FirstDivergence | None = None
    answer: str | None = None
    tool_calls: list[tuple[str, Any]] = dataclasses.field(default_factory=list)
    model_calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    #: Wall time of the run's replay, the candidate's requests included.
    latency_ms: float | None = None
    #: US dollars the candidate's tokens cost, where its price is known (:class:`Price`).
    cost: float | None = None
    #: Per recorded model step (``--per-step``): index, same, what differs.
    steps: list[dict[str, Any]] = dataclasses.field(default_factory=list)
    #: The replay's run (trace) id in the file it was written to, when one was asked for.
    replay_run_id: str | None = None
    #: True when the outcome was read from a replay written by an earlier run of the cohort.
    resumed: bool = False
    #: Writes the replay with these attributes on its root (more of the cohort's), once
    #: the outcome is final (:meth:`write_replay`), and gives the spans written; None
    #: when none is to be written.
    _write: Callable[[Mapping[str, Any]], list[ReadableSpan]] | None = dataclasses.field(
        default=None, repr=False, compare=False
    )

    @property
    def tokens(self) -> int | None:
        if self.input_tokens is None and self.output_tokens is None:
            return None
        return (self.input_tokens or 0) + (self.output_tokens or 0)

    def __str__(self) -> str:
        said = WORDS[self.kind]
        if self.divergence is not None:
            return f"{said} at {self.divergence}"
        return f"{said}: {self.detail}" if self.detail else said

    def write_replay(self) -> list[ReadableSpan]:
        """Write the replay asked for, its root carrying this outcome (kind and JSON), and
        note its run id; once (a second call writes nothing).  The spans written, for
        whoever shows the replay now (the outcome does not keep them: a cohort keeps its
        outcomes to the end)."""
        write, self._write = self._write, None
        if write is None:
            return []
        said = json.dumps(self.to_json(), ensure_ascii=False, default=str)
        spans = write({COHORT_OUTCOME: self.kind, COHORT_OUTCOME_JSON: said})
        self.replay_run_id = run_id_of(spans)
        return spans

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Outcome:
        """The outcome :meth:`to_json` wrote; ``ValueError`` when ``doc`` is not one."""
        kind = doc.get("outcome")
        if kind not in OUTCOMES:
            raise ValueError(f"not an outcome: {kind!r}")
        div = doc.get("divergence")
        return cls(
            kind,
            detail=str(doc.get("detail") or ""),
            divergence=FirstDivergence(**div) if isinstance(div, Mapping) else None,
            answer=doc.get("answer"),
            tool_calls=[(str(c.get("name")), c.get("arguments")) for c in doc["tool_calls"]],
            model_calls=int(doc.get("model_calls") or 0),
            input_tokens=doc.get("input_tokens"),
            output_tokens=doc.get("output_tokens"),
            latency_ms=doc.get("latency_ms"),
            cost=doc.get("cost"),
            steps=list(doc.get("steps") or []),
            replay_run_id=doc.get("replay_run_id"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "outcome": self.kind,
            "words": str(self),
            "detail": self.detail or None,
            "divergence": self.divergence.to_json() if self.divergence else None,
            "answer": self.answer,
            "tool_calls": [{"name": n, "arguments": a} for n, a in self.tool_calls],
            "model_calls": self.model_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "tokens": self.tokens,
            "latency_ms": self.latency_ms,
            "cost": self.cost,
            "steps": self.steps,
            "replay_run_id": self.replay_run_id,
            "resumed": self.resumed,
        }


class Candidate(Protocol):
    """What a run is replayed against."""

    @property
    def label(self) -> str: ...

    #: Only a run that replays (the kit's verdict) can be replayed against it; a model
    #: candidate takes a run whose tool results are known only as its model was sent them.
    needs_replayable: bool
    #: A trace file each replay is appended to (None: none is written), and the id of the
    #: cohort its root names.
    record_to: str | None
    cohort_id: str | None
    #: Its replay changes process-wide state (an agent's replay session: the frozen
    #: clock, the tools' interception, the network guard): no other replay may run beside it.
    exclusive: bool
    #: Spaces out its requests to a candidate model (``--rate``); None: no limit.
    pace: Pace | None

    def replay(self, run: Run, comparator: Comparator) -> Outcome: ...


# --- comparing tool calls ---------------------------------------------------------


def call_keys(calls: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """A turn's tool calls as comparable keys: name and JSON-equal arguments, any order."""
    return sorted(
        (str(c.get("name")), tool_arguments_key(M.parse_arguments(c.get("arguments"))))
        for c in calls
    )


def _calls_view(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"name": c.get("name"), "arguments": payload.plain(M.parse_arguments(c.get("arguments")))}
        for c in calls
    ]


def short_diff(recorded: Any, actual: Any) -> str:
    """The diff of ``recorded`` and ``actual``, its first :data:`DIFF_LINES` lines."""
    lines = render_diff(recorded, actual).splitlines()
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more line(s)"]
    return "\n".join(lines)


def first_turn_apart(
    recorded: Sequence[Sequence[Mapping[str, Any]]],
    actual: Sequence[Sequence[Mapping[str, Any]]],
    steps: Sequence[Step],
    run: Run | None = None,
) -> FirstDivergence | None:
    """The first model turn whose tool calls differ (``recorded[i]`` answered at
    ``steps[i]``), or None when every turn made the same calls.  Where that turn is a call
    of ``run`` that failed in the recording (a replay fails it again), the words say so:
    what the recording holds of it is only what came before the failure."""
    for i, (rec, act) in enumerate(itertools.zip_longest(recorded, actual)):
        rec, act = rec or [], act or []
        if call_keys(rec) == call_keys(act):
            continue
        names_r = sorted(str(c.get("name")) for c in rec)
        names_a = sorted(str(c.get("name")) for c in act)
        if i >= len(recorded):
            what = f"called {', '.join(names_a)} after the recorded run's answer"
        elif not act and i >= len(actual):
            what = f"answered before the recorded calls of {', '.join(names_r)}"
        elif names_r != names_a:
            what = f"tool calls {names_r or 'none'} recorded, {names_a or 'none'} by the candidate"
        else:
            what = "tool-call arguments differ"
        where = steps[i] if i < len(steps) else None
        if run is not None and where is not None and fails_again(run, where):
            what = f"the recorded call failed and the candidate answered it ({what})"
        return FirstDivergence(
            where.index if where is not None else None,
            "model",
            what,
            short_diff(_calls_view(rec), _calls_view(act)),
        )
    return None


def one_line(text: str, limit: int = 200) -> str:
    """``text`` on one line, its whitespace single spaces, cut at ``limit`` characters."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"
