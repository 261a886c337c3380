"""A candidate model as a candidate, with no agent code:

- :class:`ModelLoop`: a candidate model driving the run's own loop: the first
  recorded model request (system instructions, messages, tool definitions,
  parameters) goes to the candidate; each tool call it makes is answered from
  the recording by the tool stubs' rules (tool name and JSON-equal arguments,
  each recorded call once), with what the recorded model was sent for that
  call; a call the recording cannot answer ends the run as a new path, naming
  the call.  No tool runs, but for a tool given to run live (``live_tools``),
  and only where the recording cannot answer its call.
- :class:`ModelPerStep`: each recorded model request sent to the candidate
  once, as recorded, its answer compared with the recorded answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from .. import messages as M
from ..payload import codec as payload
from ..replay.candidate_model import Asked, CandidateFailed, CandidateModel, CandidateRefused
from ..replay.divergence import ReplayDivergence
from ..replay.recorder import ModelEntry, ReplayLog, ToolEntry, now_ns
from ..replay.tool_stubs import ToolStubs
from ..runs.model import Run, Step
from .cohort_outcomes import (
    Comparator,
    FirstDivergence,
    Outcome,
    Replayed,
    call_keys,
    first_turn_apart,
    one_line,
    short_diff,
)
from .cohort_recorded import (
    MAX_TURNS,
    STDOUT,
    WRITING,
    Pace,
    model_steps,
    paced,
    recorded_answer,
    recorded_answer_of,
    recorded_turns,
    request_of,
    results_sent,
    tools_not_recorded,
    written,
)


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
        recorded = model_steps(self.log.run)
        near = at if at is not None else (recorded[-1] if recorded else None)
        entry = ModelEntry(at, near, M.normalize(messages), system, tools, dict(params), now_ns())
        self.log.model(entry)
        paced(self.pace)
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

    def _writer(self, path: str, out: Outcome) -> Callable[[Mapping[str, Any]], list[ReadableSpan]]:
        def write(more: Mapping[str, Any]) -> list[ReadableSpan]:
            self.log.final_answer = out.answer
            self.log.root_attributes.update(more)
            with WRITING:
                return self.log.export(path)

        return write


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
        steps = model_steps(run)
        tally = _Tally(run, self.record_to, written(self), self.pace)
        if not steps:
            return Outcome("refused", "no model calls recorded")
        try:
            system, messages = request_of(steps[0], self.system_prompt)
        except CandidateRefused as exc:
            return Outcome("refused", str(exc))
        first = steps[0].model
        assert first is not None
        missing = tools_not_recorded(steps)
        if missing is not None:
            return Outcome("refused", missing)
        stubs = ToolStubs(run)
        sent = results_sent(run)
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
        apart = first_turn_apart(recorded_turns(steps), turns, steps, run)
        if apart is not None:
            out.kind, out.divergence = "other_path", apart
            return out
        replayed = Replayed(self.label, answer, made, messages)
        if not comparator.same_answer(run, replayed, recorded_answer(steps)):
            out.kind = "other_answer"
        return out

    @staticmethod
    def _answer_call(
        stubs: ToolStubs,
        sent: Mapping[int, Any],
        name: str,
        arguments: Any,
        tally: _Tally,
        live: Mapping[str, Callable[..., Any]],
    ) -> Any:
        """What the recording answers this call with (what its model was sent), what the
        tool's live function returns where the recording cannot answer it, or the outcome
        that ends the run: a new path naming the call, or a refusal."""
        shown = one_line(f"{name}({payload.canonical(payload.plain(arguments))})")
        if not isinstance(arguments, dict):
            return Outcome("new_path", f"{shown}: its arguments are not a JSON object")
        taken = stubs.take(name, arguments)
        # A call the framework ran again after it raised: the model was sent what its last
        # attempt gave (the stubs give each attempt in turn, then the tool step).
        while isinstance(taken, Step) and taken.retried_as is not None:
            taken = stubs.take(name, arguments)
        if isinstance(taken, ReplayDivergence) and name in live:
            result = _run_live(live[name], arguments)
            tally.log.tool(
                ToolEntry(None, taken.step, name, None, arguments, now_ns(), result, done=True)
            )
            return result
        result = recorded_answer_of(taken, sent)
        tally.tool(taken, name, arguments, None if isinstance(result, Outcome) else result)
        if isinstance(taken, ReplayDivergence):
            diff = short_diff(taken.expected, taken.actual) if taken.expected is not None else ""
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
        steps = model_steps(run)
        tally = _Tally(run, self.record_to, written(self), self.pace)
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
            missing = tools_not_recorded(steps, at)
            if missing is not None:
                return tally.put(Outcome("refused", missing, steps=entries))
            try:
                system, messages = request_of(step, self.system_prompt)
            except CandidateRefused as exc:
                return tally.put(Outcome("refused", str(exc), steps=entries))
            asked = tally.ask(self.model, messages, system, m.tool_definitions, m.params, step)
            if isinstance(asked, Outcome):
                asked.steps = entries
                return tally.put(asked)
            recorded_calls = M.tool_calls(m.output_messages)
            calls = M.tool_calls([asked.message])
            tools_same = call_keys(recorded_calls) == call_keys(calls)
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
                entry["diff"] = short_diff(m.output_messages, [asked.message])
            entries.append(entry)
            texts_same = texts_same and text_same
            if not tools_same and apart is None:
                apart = first_turn_apart([recorded_calls], [calls], [step], run)
        out = tally.put(Outcome("same", steps=entries))
        if apart is not None:
            out.kind, out.divergence = "other_path", apart
        elif not texts_same:
            changed = [str(e["index"]) for e in entries if not e["same"]]
            out.kind, out.detail = "other_answer", f"text differs at step {', '.join(changed)}"
        return out
