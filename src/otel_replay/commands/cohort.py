"""What-if over many runs: replay each recorded run against a candidate, say what changed.

A candidate is one of:

- :class:`AgentCandidate`: the user's agent code (``MODULE:FUNC``, called as
  ``otel-replay replay --agent`` calls it) against the pinned model: a code
  change checked on a recorded run; or, given a candidate model, against that
  model (every request the agent makes answered by the candidate, its tool
  calls by the recording where they match, as for a model driving the loop).
- :class:`ModelLoop`: a candidate model driving the run's own loop, with no
  agent code: the first recorded model request (system instructions,
  messages, tool definitions, parameters) goes to the candidate; each tool
  call it makes is answered from the recording by the tool stubs' rules
  (tool name and JSON-equal arguments, each recorded call once), with what
  the recorded model was sent for that call; a call the recording cannot
  answer ends the run as a new path, naming the call.  No tool runs, but for
  a tool given to run live (``live_tools``), and only where the recording
  cannot answer its call.
- :class:`ModelPerStep`: each recorded model request sent to the candidate
  once, as recorded, its answer compared with the recorded answer.

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

import contextlib
import dataclasses
import itertools
import json
import math
import random
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

from .. import messages as M
from ..payload import codec as payload
from ..replay.candidate_model import Asked, CandidateFailed, CandidateModel, CandidateRefused
from ..replay.divergence import ReplayDivergence, ReplayError, render_diff
from ..replay.matchers import split_system, tool_arguments_key
from ..replay.options import ReplayOptions
from ..replay.recorder import ModelEntry, ReplayLog, ToolEntry, now_ns
from ..replay.tool_stubs import ToolStubs
from ..runs.model import Run, Step
from ..runs.verdict import outcome as recorded_outcome
from ..same_message import message_key
from .regress import RegressError
from .rerun import raised_as_recorded, rerun

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
#: Model turns a candidate driving a run's loop may take before it is stopped.
MAX_TURNS = 20
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
    #: the outcome is final (:meth:`write_replay`); None when none is to be written.
    _write: Callable[[Mapping[str, Any]], str] | None = dataclasses.field(
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

    def write_replay(self) -> None:
        """Write the replay asked for, its root carrying this outcome (kind and JSON), and
        note its run id; once (a second call writes nothing)."""
        write, self._write = self._write, None
        if write is not None:
            said = json.dumps(self.to_json(), ensure_ascii=False, default=str)
            self.replay_run_id = write({COHORT_OUTCOME: self.kind, COHORT_OUTCOME_JSON: said})

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


class Pace:
    """At most ``rate`` requests a second, from any number of threads: each request waits
    for its turn, the turns ``1 / rate`` seconds apart."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next)
            self._next = at + self.interval
        if at > now:
            time.sleep(at - now)


def _paced(pace: Pace | None) -> None:
    if pace is not None:
        pace.wait()


# --- comparing tool calls ---------------------------------------------------------


def _call_keys(calls: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
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


def _short_diff(recorded: Any, actual: Any) -> str:
    lines = render_diff(recorded, actual).splitlines()
    if len(lines) > DIFF_LINES:
        lines = [*lines[:DIFF_LINES], f"… {len(lines) - DIFF_LINES} more line(s)"]
    return "\n".join(lines)


def first_turn_apart(
    recorded: Sequence[Sequence[Mapping[str, Any]]],
    actual: Sequence[Sequence[Mapping[str, Any]]],
    steps: Sequence[Step],
) -> FirstDivergence | None:
    """The first model turn whose tool calls differ (``recorded[i]`` answered at
    ``steps[i]``), or None when every turn made the same calls."""
    for i, (rec, act) in enumerate(itertools.zip_longest(recorded, actual)):
        rec, act = rec or [], act or []
        if _call_keys(rec) == _call_keys(act):
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
        return FirstDivergence(
            where.index if where is not None else None,
            "model",
            what,
            _short_diff(_calls_view(rec), _calls_view(act)),
        )
    return None


# --- the user's code against the pinned model ---------------------------------------


class _Counted:
    """A candidate model as a session's live model, its answers' tokens counted."""

    def __init__(self, model: CandidateModel, max_turns: int, pace: Pace | None = None) -> None:
        self.model = model
        self.max_turns = max_turns
        self.pace = pace
        #: True once the agent asked for more than ``max_turns`` answers: refused, so that
        #: an agent's loop the candidate never ends costs no more than that.
        self.stopped = False
        self.asked: list[Asked] = []
        #: The candidate's first failure: an agent reaching it over HTTP sees only the
        #: replay server's error, and its SDK's words for it.
        self.failed: CandidateFailed | CandidateRefused | None = None

    def __call__(self, messages: Sequence[Mapping[str, Any]], **given: Any) -> dict[str, Any]:
        if len(self.asked) >= self.max_turns:
            self.stopped = True
            self.failed = CandidateFailed(f"no answer within {self.max_turns} model calls")
            raise self.failed
        _paced(self.pace)
        try:
            asked = self.model.ask(messages, **given)
        except (CandidateFailed, CandidateRefused) as exc:
            self.failed = self.failed or exc
            raise
        self.asked.append(asked)
        return asked.message

    def put(self, out: Outcome) -> Outcome:
        out.model_calls = len(self.asked)
        ins = [a.input_tokens for a in self.asked if a.input_tokens is not None]
        outs = [a.output_tokens for a in self.asked if a.output_tokens is not None]
        out.input_tokens = sum(ins) if ins else None
        out.output_tokens = sum(outs) if outs else None
        return out


@dataclasses.dataclass
class AgentCandidate:
    """The user's agent, ``MODULE:FUNC``, against the pinned model (as ``replay --agent``),
    or against ``model`` when given; ``live_tools`` run live where the recording cannot
    answer their calls."""

    ref: str
    kwargs: Sequence[str] = ()
    record_to: str | None = None
    cohort_id: str | None = None
    model: CandidateModel | None = None
    live_tools: tuple[str, ...] = ()
    #: Model calls the agent may make of ``model`` in one run before it is stopped.
    max_turns: int = MAX_TURNS
    pace: Pace | None = None
    needs_replayable: bool = dataclasses.field(default=True, init=False)
    exclusive: bool = dataclasses.field(default=True, init=False)

    @property
    def label(self) -> str:
        return f"agent {self.ref}" + (f" on {self.model.label}" if self.model else "")

    def replay(self, run: Run, comparator: Comparator) -> Outcome:
        counted = (
            _Counted(self.model, self.max_turns, self.pace) if self.model is not None else None
        )
        options = ReplayOptions(
            model="candidate" if counted is not None else "pinned",
            live=counted,
            live_tools=self.live_tools,
            require_complete=counted is None,
        )
        began = time.perf_counter()
        try:
            # What the agent prints goes to stderr: stdout is the cohort's (its --json).
            with STDOUT, contextlib.redirect_stdout(sys.stderr):
                done = rerun(run, self.ref, kwargs=self.kwargs, options=options)
        except (RegressError, ReplayError, ValueError) as exc:
            return Outcome("refused", _line(str(exc)))
        took = (time.perf_counter() - began) * 1000
        if counted is not None:
            if counted.failed is not None:
                done.error = counted.failed
            out = counted.put(self._against_model(run, done, comparator))
            if counted.stopped:
                out.kind, out.detail, out.answer = "other_path", "", None
                out.divergence = FirstDivergence(None, "model", str(counted.failed))
            out.latency_ms = round(took, 3)
            return out
        report = done.report
        calls = done.session.tool_calls
        answer = done.answer if isinstance(done.answer, str) else None
        base = Outcome("same", answer=answer, tool_calls=calls, latency_ms=round(took, 3))
        base._write = self._writer(done.session)
        base.model_calls = sum(1 for _, kind, _ in report.replayed if kind == "model")
        div = report.divergence
        recorded = recorded_outcome(run)
        if div is not None and div.kind != "output":
            base.kind = "other_path"
            base.divergence = FirstDivergence(
                div.index, div.kind or "step", div.what, _short_diff(div.expected, div.actual)
            )
            return base
        if done.error is not None and not raised_as_recorded(recorded, done.error):
            base.kind, base.detail = "error", _line(f"{type(done.error).__name__}: {done.error}")
            return base
        if done.error is not None:
            return base  # raised as the recorded run did: the recording followed
        replayed = Replayed(self.label, answer, calls)
        if not comparator.same_answer(run, replayed, run.final_output()):
            base.kind = "other_answer"
            if div is not None:
                base.detail = _line(div.diff.replace("\n", " ")) if div.diff else div.what
        return base

    def _writer(self, session: Any) -> Callable[[Mapping[str, Any]], str] | None:
        """Writes the session's replay to ``record_to`` (None when there is none)."""
        path = self.record_to
        if path is None:
            return None

        def write(more: Mapping[str, Any]) -> str:
            session.log.root_attributes.update({**_written(self), **more})
            with WRITING:
                return str(session.write(path))

        return write

    def _against_model(self, run: Run, done: Any, comparator: Comparator) -> Outcome:
        """The outcome of the agent's run against the candidate model (``done``: its
        :class:`~otel_replay.commands.rerun.Rerun`), judged as a model driving the loop
        is: a call the recording cannot answer is a new path, else the turns' tool calls
        and the answer against the recorded ones."""
        session = done.session
        answer = done.answer if isinstance(done.answer, str) else None
        out = Outcome("same", answer=answer, tool_calls=session.tool_calls)
        out._write = self._writer(session)
        div = done.report.divergence
        if div is not None and div.kind == "tool":
            shown = _line(f"{div.name}({payload.canonical(payload.plain(_args_of(div)))})")
            out.kind, out.detail = "new_path", f"{shown} is not recorded"
            diff = _short_diff(div.expected, div.actual) if div.expected is not None else ""
            out.divergence = FirstDivergence(div.index, "tool", out.detail, diff)
            return out
        error = done.error
        if isinstance(error, CandidateRefused):
            out.kind, out.detail = "refused", _line(str(error))
            return out
        if error is not None and not raised_as_recorded(recorded_outcome(run), error):
            out.kind, out.detail = "error", _line(f"{type(error).__name__}: {error}")
            return out
        steps = _model_steps(run)
        turns = [
            M.tool_calls(e.output or [])
            for e in session.log.entries
            if isinstance(e, ModelEntry) and e.output is not None
        ]
        apart = first_turn_apart(_recorded_turns(steps), turns, steps)
        if apart is not None:
            out.kind, out.divergence = "other_path", apart
        elif error is None:
            replayed = Replayed(self.label, answer, out.tool_calls)
            if not comparator.same_answer(run, replayed, run.final_output()):
                out.kind = "other_answer"
        return out


def _args_of(div: ReplayDivergence) -> Any:
    actual = div.actual
    return actual.get("arguments") if isinstance(actual, Mapping) else None


#: Held while a replay is appended to its file: replays run at once write one at a time.
WRITING = threading.Lock()
#: Held while stdout is sent to stderr (the process's one stdout, which replays run at
#: once would otherwise put back out of turn, leaving it on stderr).
STDOUT = threading.Lock()


def _written(candidate: Candidate) -> dict[str, Any]:
    """What the root of a replay written for ``candidate`` says of the cohort."""
    out = {COHORT_CANDIDATE: candidate.label}
    if candidate.cohort_id is not None:
        out[COHORT_ID] = candidate.cohort_id
    return out


# --- a candidate model driving the run's own loop --------------------------------------


def _model_steps(run: Run) -> list[Step]:
    return [s for s in run.steps if s.kind == "model" and s.model is not None]


def _results_sent(run: Run) -> dict[str, Any]:
    """Call id -> the tool result as the recorded model was sent it (first seen)."""
    sent: dict[str, Any] = {}
    for step in _model_steps(run):
        assert step.model is not None
        for message in step.model.input_messages or []:
            for part in message.get("parts") or []:
                if isinstance(part, Mapping) and part.get("type") == "tool_call_response":
                    call_id = part.get("id")
                    if isinstance(call_id, str) and call_id not in sent:
                        sent[call_id] = part.get("response")
    return sent


def _recorded_answer_of(taken: Step | ReplayDivergence, sent: Mapping[str, Any]) -> Any:
    """What the recorded model was sent for the call ``taken`` answers, or the refusal
    saying what the recording lacks (None for a call it does not hold)."""
    if not isinstance(taken, Step):
        return None
    tool = taken.tool
    assert tool is not None
    if tool.call_id is not None and tool.call_id in sent:
        return sent[tool.call_id]
    if tool.error is not None and not tool.error.returned:
        return Outcome(
            "refused",
            f"{taken.label()}: the tool failed and no recorded request tells the model so",
        )
    if tool.result_payload is None or not tool.result_payload.usable:
        return Outcome("refused", f"{taken.label()}: its result was not recorded")
    return payload.plain(tool.result)


def _recorded_turns(steps: Sequence[Step]) -> list[list[dict[str, Any]]]:
    return [M.tool_calls(s.model.output_messages or []) for s in steps if s.model is not None]


def _recorded_answer(steps: Sequence[Step]) -> str | None:
    last = steps[-1].model if steps else None
    return M.last_text(last.output_messages or []) if last is not None else None


class _Tally:
    """Model calls, tokens and time of one run's candidate requests, and what the replay
    did (a :class:`~.recorder.ReplayLog`), written as a trace when ``record_to`` is set."""

    def __init__(
        self, run: Run, record_to: str | None, root: Mapping[str, Any], pace: Pace | None
    ) -> None:
        self.pace = pace
        self.calls = 0
        self.tokens_in: int | None = None
        self.tokens_out: int | None = None
        self.began = time.perf_counter()
        self.log = ReplayLog(run)
        self.log.root_attributes.update(root)
        self.record_to = record_to

    def ask(
        self,
        model: CandidateModel,
        messages: Sequence[Mapping[str, Any]],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        params: Mapping[str, Any],
        at: Step | None,
    ) -> Asked | Outcome:
        """The candidate's answer, counted and logged in place of recorded step ``at``
        (None: past the recording); or the outcome that ends the run (a request that
        cannot be sent is refused, a failed endpoint an error)."""
        recorded = _model_steps(self.log.run)
        near = at if at is not None else (recorded[-1] if recorded else None)
        entry = ModelEntry(at, near, M.normalize(messages), system, tools, dict(params), now_ns())
        self.log.model(entry)
        _paced(self.pace)
        try:
            asked = model.ask(messages, system=system, tools=tools, **params)
        except CandidateRefused as exc:
            entry.divergence = str(exc)
            return Outcome("refused", str(exc))
        except CandidateFailed as exc:
            entry.divergence = str(exc)
            return Outcome("error", str(exc))
        entry.output = [asked.message]
        self.add(asked)
        return asked

    def tool(self, step: Step | ReplayDivergence, name: str, arguments: Any, result: Any) -> None:
        """A tool call the candidate made, answered from ``step`` (or not: the divergence)."""
        taken: Step | None
        near: Step | None
        if isinstance(step, Step):
            taken, near, missed = step, step, None
        else:
            taken, near, missed = None, step.step, step.what
        entry = ToolEntry(taken, near, name, None, arguments, now_ns(), result, None, missed, True)
        self.log.tool(entry)

    def add(self, asked: Asked) -> None:
        self.calls += 1
        if asked.input_tokens is not None:
            self.tokens_in = (self.tokens_in or 0) + asked.input_tokens
        if asked.output_tokens is not None:
            self.tokens_out = (self.tokens_out or 0) + asked.output_tokens

    def put(self, out: Outcome) -> Outcome:
        out.model_calls = self.calls
        out.latency_ms = round((time.perf_counter() - self.began) * 1000, 3)
        out.input_tokens, out.output_tokens = self.tokens_in, self.tokens_out
        if self.record_to is not None and self.log.entries:
            out._write = self._writer(self.record_to, out)
        return out

    def _writer(self, path: str, out: Outcome) -> Callable[[Mapping[str, Any]], str]:
        def write(more: Mapping[str, Any]) -> str:
            self.log.final_answer = out.answer
            self.log.root_attributes.update(more)
            with WRITING:
                return self.log.write(path)

        return write


def _request_of(step: Step, system_prompt: str | None) -> tuple[Any, list[dict[str, Any]]]:
    """The system instructions and messages ``step`` sent, with ``system_prompt`` in place
    of the recorded instructions when given."""
    assert step.model is not None
    m = step.model
    if m.input_messages is None:
        raise CandidateRefused(f"{step.label()}: its input messages were not recorded")
    if system_prompt is None:
        return m.system_instructions, list(m.input_messages)
    _, rest = split_system(M.normalize(m.input_messages), m.system_instructions)
    return system_prompt, rest


@dataclasses.dataclass
class ModelLoop:
    """A candidate model driving each run's own loop (see the module)."""

    model: CandidateModel
    max_turns: int = MAX_TURNS
    system_prompt: str | None = None
    record_to: str | None = None
    cohort_id: str | None = None
    #: Tool name -> the function that runs a call of it the recording cannot answer.
    live_tools: Mapping[str, Callable[..., Any]] = dataclasses.field(default_factory=dict)
    pace: Pace | None = None
    needs_replayable: bool = dataclasses.field(default=False, init=False)
    exclusive: bool = dataclasses.field(default=False, init=False)

    @property
    def label(self) -> str:
        return self.model.label + (" + system prompt" if self.system_prompt is not None else "")

    def replay(self, run: Run, comparator: Comparator) -> Outcome:
        steps = _model_steps(run)
        tally = _Tally(run, self.record_to, _written(self), self.pace)
        if not steps:
            return Outcome("refused", "no model calls recorded")
        try:
            system, messages = _request_of(steps[0], self.system_prompt)
        except CandidateRefused as exc:
            return Outcome("refused", str(exc))
        first = steps[0].model
        assert first is not None
        missing = _tools_not_recorded(steps)
        if missing is not None:
            return Outcome("refused", missing)
        stubs = ToolStubs(run)
        sent = _results_sent(run)
        turns: list[list[dict[str, Any]]] = []
        made: list[tuple[str, Any]] = []
        answer: str | None = None
        for turn in range(self.max_turns):
            at = steps[turn] if turn < len(steps) else None
            asked = tally.ask(
                self.model, messages, system, first.tool_definitions, first.params, at
            )
            if isinstance(asked, Outcome):
                asked.tool_calls = made
                return tally.put(asked)
            reply = asked.message
            calls = M.tool_calls([reply])
            turns.append(calls)
            messages.append(reply)
            if not calls:
                answer = M.last_text([reply]) or ""
                break
            for call in calls:
                arguments = M.parse_arguments(call.get("arguments"))
                name = str(call.get("name"))
                made.append((name, payload.plain(arguments)))
                result = self._answer_call(stubs, sent, name, arguments, tally, self.live_tools)
                if isinstance(result, Outcome):
                    result.tool_calls = made
                    return tally.put(result)
                messages.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": call.get("id"), "response": result}
                        ],
                    }
                )
        else:
            return tally.put(
                Outcome(
                    "other_path",
                    tool_calls=made,
                    divergence=FirstDivergence(
                        None, "model", f"no answer within {self.max_turns} model calls"
                    ),
                )
            )
        out = tally.put(Outcome("same", answer=answer, tool_calls=made))
        apart = first_turn_apart(_recorded_turns(steps), turns, steps)
        if apart is not None:
            out.kind, out.divergence = "other_path", apart
            return out
        replayed = Replayed(self.label, answer, made, messages)
        if not comparator.same_answer(run, replayed, _recorded_answer(steps)):
            out.kind = "other_answer"
        return out

    @staticmethod
    def _answer_call(
        stubs: ToolStubs,
        sent: Mapping[str, Any],
        name: str,
        arguments: Any,
        tally: _Tally,
        live: Mapping[str, Callable[..., Any]],
    ) -> Any:
        """What the recording answers this call with (what its model was sent), what the
        tool's live function returns where the recording cannot answer it, or the outcome
        that ends the run: a new path naming the call, or a refusal."""
        shown = _line(f"{name}({payload.canonical(payload.plain(arguments))})")
        if not isinstance(arguments, dict):
            return Outcome("new_path", f"{shown}: its arguments are not a JSON object")
        taken = stubs.take(name, arguments)
        if isinstance(taken, ReplayDivergence) and name in live:
            result = _run_live(live[name], arguments)
            tally.log.tool(
                ToolEntry(None, taken.step, name, None, arguments, now_ns(), result, done=True)
            )
            return result
        result = _recorded_answer_of(taken, sent)
        tally.tool(taken, name, arguments, None if isinstance(result, Outcome) else result)
        if isinstance(taken, ReplayDivergence):
            diff = _short_diff(taken.expected, taken.actual) if taken.expected is not None else ""
            return Outcome(
                "new_path",
                f"{shown} is not recorded",
                divergence=FirstDivergence(taken.index, "tool", f"{shown} is not recorded", diff),
            )
        return result


def _run_live(fn: Callable[..., Any], arguments: Mapping[str, Any]) -> Any:
    """``fn(**arguments)`` as the model is sent it: its value as JSON values, or, when it
    raises, the error's type and message (as agent frameworks tell a model a tool failed).
    What it prints goes to stderr: stdout is the cohort's."""
    try:
        with STDOUT, contextlib.redirect_stdout(sys.stderr):
            return payload.plain(fn(**arguments))
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"


# --- each recorded model step sent once ----------------------------------------------


@dataclasses.dataclass
class ModelPerStep:
    """Each recorded model request sent to a candidate model once, as recorded."""

    model: CandidateModel
    system_prompt: str | None = None
    record_to: str | None = None
    cohort_id: str | None = None
    pace: Pace | None = None
    needs_replayable: bool = dataclasses.field(default=False, init=False)
    exclusive: bool = dataclasses.field(default=False, init=False)

    @property
    def label(self) -> str:
        said = self.model.label + (" + system prompt" if self.system_prompt is not None else "")
        return said + " per step"

    def replay(self, run: Run, comparator: Comparator) -> Outcome:
        steps = _model_steps(run)
        tally = _Tally(run, self.record_to, _written(self), self.pace)
        if not steps:
            return Outcome("refused", "no model calls recorded")
        entries: list[dict[str, Any]] = []
        apart: FirstDivergence | None = None
        texts_same = True
        for at, step in enumerate(steps):
            m = step.model
            assert m is not None
            if not m.output_messages:
                return tally.put(
                    Outcome(
                        "refused", f"{step.label()}: its output was not recorded", steps=entries
                    )
                )
            missing = _tools_not_recorded(steps, at)
            if missing is not None:
                return tally.put(Outcome("refused", missing, steps=entries))
            try:
                system, messages = _request_of(step, self.system_prompt)
            except CandidateRefused as exc:
                return tally.put(Outcome("refused", str(exc), steps=entries))
            asked = tally.ask(self.model, messages, system, m.tool_definitions, m.params, step)
            if isinstance(asked, Outcome):
                asked.steps = entries
                return tally.put(asked)
            recorded_calls = M.tool_calls(m.output_messages)
            calls = M.tool_calls([asked.message])
            tools_same = _call_keys(recorded_calls) == _call_keys(calls)
            text_same = comparator.same_text(
                M.last_text(m.output_messages), M.last_text([asked.message])
            )
            entry: dict[str, Any] = {
                "index": step.index,
                "same": tools_same and text_same,
                "tools_same": tools_same,
                "input_tokens": asked.input_tokens,
                "output_tokens": asked.output_tokens,
                "latency_ms": round(asked.latency_ms, 3),
            }
            if not (tools_same and text_same):
                entry["diff"] = _short_diff(m.output_messages, [asked.message])
            entries.append(entry)
            texts_same = texts_same and text_same
            if not tools_same and apart is None:
                apart = first_turn_apart([recorded_calls], [calls], [step])
        out = tally.put(Outcome("same", steps=entries))
        if apart is not None:
            out.kind, out.divergence = "other_path", apart
        elif not texts_same:
            changed = [str(e["index"]) for e in entries if not e["same"]]
            out.kind, out.detail = "other_answer", f"text differs at step {', '.join(changed)}"
        return out


def _tools_not_recorded(steps: Sequence[Step], at: int = 0) -> str | None:
    """Why the model step ``steps[at]``, recorded without its tool definitions, cannot be
    sent as it was asked when it or a later model step (``steps``: the run's) called
    tools: a model offered no tools calls none, and its "other path" would be the
    trace's gap, not the candidate's.  None when it has them or nothing called tools."""
    step = steps[at].model
    if step is None or step.tool_definitions is not None:
        return None
    for later in steps[at:]:
        if later.model is not None and M.tool_calls(later.model.output_messages or []):
            who = "it" if later is steps[at] else later.label()
            return (
                f"{steps[at].label()}: the trace holds no tool definitions, so the candidate "
                f"could not be offered the tools {who} called"
            )
    return None


def _line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


# --- cost --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Price:
    """What a model's tokens cost: US dollars per million input and per million output
    tokens (no price list is shipped: prices change, and each deployment has its own)."""

    input: float
    output: float

    @classmethod
    def parse(cls, text: str) -> tuple[str, Price]:
        """``MODEL=IN/OUT`` (``gpt-4.1-mini=0.4/1.6``; MODEL as the candidate names it,
        with or without its ``PROVIDER:``): the model and its price; ``ValueError`` naming
        what is wrong."""
        model, sep, rates = text.rpartition("=")
        said_in, slash, said_out = rates.partition("/")
        try:
            price = cls(float(said_in), float(said_out))
        except ValueError:
            price = None
        if not sep or not model.strip() or not slash or price is None:
            raise ValueError(f"{text!r}: give it as MODEL=IN/OUT, dollars per million tokens")
        if (
            not all(map(math.isfinite, (price.input, price.output)))
            or min(price.input, price.output) < 0
        ):
            raise ValueError(f"{text!r}: a price is a finite number, not negative")
        return model.strip(), price

    def cost(self, input_tokens: int | None, output_tokens: int | None) -> float | None:
        """The tokens' cost; None when neither count is known."""
        if input_tokens is None and output_tokens is None:
            return None
        return ((input_tokens or 0) * self.input + (output_tokens or 0) * self.output) / 1e6


def price_of(model: CandidateModel, prices: Mapping[str, Price]) -> Price | None:
    """``model``'s price in ``prices`` (by ``PROVIDER:MODEL``, else ``MODEL``), if given."""
    return prices.get(f"{model.provider}:{model.model}") or prices.get(model.model)


# --- totals ----------------------------------------------------------------------------

#: How many runs each candidate's totals name as its slowest and as its costliest.
WORST = 3


@dataclasses.dataclass
class Totals:
    """Per candidate: how many runs had each outcome, tokens, time and cost where known,
    and the slowest and costliest runs."""

    candidate: str
    counts: dict[str, int] = dataclasses.field(default_factory=lambda: dict.fromkeys(OUTCOMES, 0))
    input_tokens: int | None = None
    output_tokens: int | None = None
    latency_ms: float = 0.0
    cost: float | None = None
    #: First-divergence steps, by recorded step index (``None``: past the recording).
    diverged_at: dict[str, int] = dataclasses.field(default_factory=dict)
    #: ``(latency ms, run id)`` of the slowest runs, ``(cost, run id)`` of the costliest,
    #: the most first (a few: the totals stay the same size however many runs there are).
    slowest: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    costliest: list[tuple[float, str]] = dataclasses.field(default_factory=list)
    #: Runs not replayed against it: a cap was reached, or the command stopped, first.
    not_run: int = 0

    def add(self, out: Outcome, run_id: str = "") -> None:
        self.counts[out.kind] += 1
        if out.input_tokens is not None:
            self.input_tokens = (self.input_tokens or 0) + out.input_tokens
        if out.output_tokens is not None:
            self.output_tokens = (self.output_tokens or 0) + out.output_tokens
        if out.latency_ms is not None:
            self.latency_ms += out.latency_ms
            _keep(self.slowest, (out.latency_ms, run_id))
        if out.cost is not None:
            self.cost = (self.cost or 0.0) + out.cost
            _keep(self.costliest, (out.cost, run_id))
        if out.divergence is not None:
            key = "end" if out.divergence.step is None else str(out.divergence.step)
            self.diverged_at[key] = self.diverged_at.get(key, 0) + 1

    @property
    def runs(self) -> int:
        return sum(self.counts.values())

    def rate(self, kind: str) -> float | None:
        return self.counts[kind] / self.runs if self.runs else None

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate,
            "runs": self.runs,
            "counts": dict(self.counts),
            "same_rate": self.rate("same"),
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "latency_ms": round(self.latency_ms, 3),
            "latency_ms_per_run": round(self.latency_ms / self.runs, 3) if self.runs else None,
            "cost": self.cost,
            "first_divergence_steps": dict(self.diverged_at),
            "slowest": [{"run_id": r, "latency_ms": ms} for ms, r in self.slowest],
            "costliest": [{"run_id": r, "cost": c} for c, r in self.costliest],
            "not_run": self.not_run,
        }


def _keep(worst: list[tuple[float, str]], one: tuple[float, str]) -> None:
    worst.append(one)
    worst.sort(key=lambda w: -w[0])  # the same value: the earlier run stays first
    del worst[WORST:]


T = TypeVar("T")


def drawn(items: Sequence[T], sample: int | None, seed: int | None, limit: int | None) -> list[T]:
    """The cohort: ``sample`` of ``items`` drawn with ``seed`` (all when there are no more),
    kept in their order, then the first ``limit``.  The same seed draws the same items."""
    picked = list(items)
    if sample is not None and sample < len(picked):
        chosen = random.Random(seed).sample(range(len(picked)), sample)
        picked = [picked[i] for i in sorted(chosen)]
    return picked if limit is None else picked[:limit]


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
