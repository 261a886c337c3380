"""The replay-kit check: what a run carries, what is missing, whether it replays.

Verdicts:

``full``
    every model step's output messages and every tool step's result (or
    error) are recorded and usable, and every tool call the model made before
    the run went on has its tool step;
``model-only``
    model content is there, but some tool result, or model output, is missing,
    not usable, or only derived from a later model input (a derived tool
    step: its arguments and result come from the messages, it has no
    timestamps);
``inspect-only``
    no content was captured (content capture off, or no model step has any
    text, arguments or results in its messages): the run can be looked at,
    not replayed.

A run whose input had a cut or corrupt record that may have held its spans
(:attr:`Run.read_faults`) is never ``full``: ``missing`` names each such
fault as ``records: <file> cut at byte N``.

A run is replayable when its verdict is ``full`` and no payload a replay
serves or matches on (model input/output messages, tool arguments, results,
exception arguments) is damaged (digest ``mismatch``), ``missing`` (blob not
found) or recorded as ``repr()`` only.  Each reason it does not replay is
counted in :attr:`KitReport.reasons`, from the closed set of
:data:`~otel_replay.runs.verdict.REASONS`.

``missing`` lists what the run used, or a replay needs, and was not recorded;
an optional field absent from the whole run (a request parameter, an id, the
commit: see :data:`OPTIONAL_FIELDS`) is ``not_set``, which is not a failure.
A field some model calls have and others lack is ``missing`` for the latter.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from collections import Counter
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .. import attributes as A
from .. import messages as M
from ..dialects.placeholders import left_out, placeholder_in
from ..otlp.errors import FormatError
from ..payload import codec as payload
from ..payload.attributes import Payload
from . import verdict as V
from .failed_calls import (
    cut_stream,
    cut_unrecorded,
    failed_end,
    fails_again,
    request_not_in_trace,
)

if TYPE_CHECKING:
    from .model import Run, Step

#: Run-level fields of the replay kit (fingerprint keys), in report order.
FINGERPRINT_FIELDS = ("commit", "packages", "flags", "user.id", "tenant.id", "session.id")
#: Model-call fields reported per run when no model step has them, else per step.
MODEL_FIELDS = ("provider", "request_model")
#: Request parameters, same rule.
PARAM_FIELDS = ("temperature", "top_p", "seed")
#: Fields a run may leave out: absent from the whole run, they are not set, not missing.
OPTIONAL_FIELDS = (*FINGERPRINT_FIELDS, "system_instructions", *PARAM_FIELDS)

_NOT_USABLE = ("mismatch", "missing")


def lost_records(fault: FormatError) -> str:
    """The ``missing`` entry of a run that may have lost records to ``fault``."""
    return f"records: {fault.shown_path} cut at {fault.place}"


@dataclasses.dataclass
class KitReport:
    """What a run carries of the replay kit, and whether it replays."""

    #: "full", "model-only" or "inspect-only".
    verdict: str
    replayable: bool
    #: Replay-kit fields the run used or a replay needs that were not recorded, e.g.
    #: ``steps[3].result``, ``steps[2].temperature`` (set on other model calls).
    missing: list[str]
    #: Readable reasons, one per problem, naming the step.
    problems: list[str]
    #: Optional fields absent from the whole run (``tenant.id``, ``commit``, ``top_p``):
    #: not set, which is not a failure.
    not_set: list[str] = dataclasses.field(default_factory=list)
    #: Why the run does not replay: each reason of
    #: :data:`~otel_replay.runs.verdict.REASONS` met, and how many times.
    reasons: dict[str, int] = dataclasses.field(default_factory=dict)

    @property
    def replay_problem(self) -> str | None:
        """Why the run does not replay, in the words every command uses; None when it does."""
        return None if self.replayable else V.replay_problem(self.reasons)


def check_kit(run: Run) -> KitReport:
    """Check ``run`` for what a replay needs: what it carries, what is missing, its verdict."""
    return _Check(run).report()


def kit_verdict(run: Run) -> tuple[str, bool, str | None]:
    """The verdict, whether it replays and why not, as :attr:`Run.kit` says them.

    Taken from the run's kit when it was checked already; else the checks the
    three answers follow from are made, not the run-wide lists of optional
    fields set or not (an ``ls`` line asks for no more, of every run).
    """
    report = run.checked_kit or _Check(run, lists=False).report()
    return report.verdict, report.replayable, report.replay_problem


def _damaged(p: Payload | None) -> bool:
    """True when ``p`` cannot be served back exactly."""
    return p is not None and (p.status in _NOT_USABLE or p.type == payload.REPR)


def _says_something(messages: list[dict[str, Any]] | None) -> bool:
    """True when a message carries content: some text, arguments or result.

    With content capture off, some stacks (pydantic-ai) keep the structure:
    parts with their types, tool names and call ids, every value left out.
    """
    for message in messages or []:
        for part in message.get("parts") or []:
            if not isinstance(part, dict):
                return True
            kind = part.get("type")
            if kind == "tool_call":
                value = part.get("arguments")
            elif kind == "tool_call_response":
                value = part.get("response", part.get("result"))
            else:
                value = part.get("content", part.get("text"))
                value = value if kind in ("text", "reasoning") else part
            if value not in (None, ""):
                return True
    return False


def _calls(messages: list[dict[str, Any]] | None) -> bool:
    """True when an assistant message of ``messages`` calls tools."""
    return any(
        isinstance(p, dict) and p.get("type") == "tool_call"
        for m in messages or []
        if m.get("role") == "assistant"
        for p in m.get("parts") or []
    )


def _answer(step: Step) -> list[dict[str, Any]]:
    assert step.model is not None
    return step.model.output_messages or []


def _why(what: str, p: Payload) -> str:
    if p.status == "mismatch":
        return f"{what} not byte-exact: {p.reason}"
    if p.status == "missing":
        return f"{what} missing: {p.reason}"
    return f"{what} recorded as repr() only; it cannot be restored"


class _Check:
    def __init__(self, run: Run, *, lists: bool = True) -> None:
        self.run = run
        #: Make the run-wide lists too (fields not set or missing, content capture off):
        #: they tell no verdict, reason or replay apart.
        self.lists = lists
        self.models = [s for s in run.steps if s.kind == "model" and s.model is not None]
        self.tools = [s for s in run.steps if s.kind == "tool" and s.tool is not None]
        self.missing: list[str] = []
        self.not_set: list[str] = []
        self.problems: list[str] = []
        #: Why the run does not replay (see :data:`~.verdict.REASONS`), counted.
        self.reasons: Counter[str] = Counter()
        #: Something the verdict "full" needs is absent or unusable.
        self.incomplete = False
        #: A payload replay needs is damaged.
        self.damaged = False

    def report(self) -> KitReport:
        self._read_faults()
        if self.lists:
            self._no_content()
            self._run_fields()
        for step in self.run.steps:
            # What the reader could not tell: said, not guessed silently.
            self.problems.extend(f"{step.label()}: {note}" for note in step.notes)
            if step.kind == "model" and step.model is not None:
                self._model_step(step)
            elif step.kind == "tool" and step.tool is not None:
                self._tool_step(step)
            elif step.kind == "agent" and step.model is not None:
                self._agent_step(step)
        self._unanswered_calls()
        self._lost_history()
        asked_unseen = self._no_model_call()
        if not self._has_content() or asked_unseen:
            verdict = "inspect-only"
            if not asked_unseen:
                self.reasons[V.NO_CONTENT] += 1
            # Nothing to replay with: what else is absent follows from that.
            keep = (V.CUT_RECORDS, V.NO_CONTENT, V.NO_MODEL_CALLS)
            self.reasons = Counter({r: n for r, n in self.reasons.items() if r in keep})
        elif self.incomplete:
            verdict = "model-only"
        else:
            verdict = "full"
        replayable = verdict == "full" and not self.damaged
        return KitReport(
            verdict=verdict,
            replayable=replayable,
            missing=self._ordered_missing() if self.lists else self.missing,
            problems=self.problems,
            not_set=self.not_set,
            reasons={} if replayable else dict(self.reasons),
        )

    # --- run level ----------------------------------------------------------------
    def _read_faults(self) -> None:
        """Records the input lost where this run's spans were: any step may be gone."""
        for fault in self.run.read_faults:
            self.missing.append(lost_records(fault))
            self.problems.append(f"spans of this run may be missing: {fault}")
            self.incomplete = True
            self.reasons[V.CUT_RECORDS] += 1

    def _no_content(self) -> None:
        off = [s for s in self.run.steps if s.attributes.get(A.CONTENT) == "NO_CONTENT"]
        if not off:
            return
        off_ids = {s.span_id for s in off}
        if all(s.span_id in off_ids for s in self.models + self.tools):
            self.problems.append(
                "content capture was off (NO_CONTENT): messages and tool I/O were not recorded"
            )
            return
        for s in off:
            self.problems.append(f"{s.label()}: content capture was off for this span (NO_CONTENT)")

    def _has_content(self) -> bool:
        if self.models:
            return any(
                s.model is not None
                and (
                    _says_something(s.model.input_messages)
                    or _says_something(s.model.output_messages)
                )
                for s in self.models
            )
        return any(
            s.tool is not None
            and (s.tool.result_payload is not None or s.tool.arguments_payload is not None)
            for s in self.tools
        )

    def _run_fields(self) -> None:
        fp = self.run.fingerprint
        for field in FINGERPRINT_FIELDS:
            if field == "session.id" and A.CONVERSATION_ID in fp:
                continue
            if fp.get(field) in (None, "", []):
                self.not_set.append(field)
        if not self.models:
            return
        for field in MODEL_FIELDS:
            self._per_model(field, [getattr(s.model, field) in (None, "") for s in self.models])
        unknown = any(s.model is not None and s.model.system_not_recorded for s in self.models)
        if not unknown and not any(self._has_system(s) for s in self.models):
            self.not_set.append("system_instructions")
        if self._uses_tools() and not any(
            s.model is not None and s.model.tool_definitions for s in self.models
        ):
            self.missing.append("tool_definitions")
        for param in PARAM_FIELDS:
            self._per_model(
                param, [s.model is None or param not in s.model.params for s in self.models]
            )

    def _per_model(self, field: str, lacking: list[bool]) -> None:
        """``field`` when no model step has it (not set, when it is optional), else
        ``steps[i].field`` for those lacking it (the run used it: not recorded)."""
        if all(lacking):
            (self.not_set if field in OPTIONAL_FIELDS else self.missing).append(field)
            return
        pairs = zip(self.models, lacking, strict=True)
        self.missing.extend(f"steps[{s.index}].{field}" for s, lack in pairs if lack)

    @staticmethod
    def _has_system(step: Step) -> bool:
        m = step.model
        if m is None:
            return False
        if m.system_instructions:
            return True
        # OpenAI-style requests carry the system prompt as the first message.
        return any(msg.get("role") == "system" for msg in m.input_messages or [])

    def _uses_tools(self) -> bool:
        if self.tools:
            return True
        return any(
            p.get("type") in ("tool_call", "tool_call_response")
            for s in self.models
            if s.model is not None
            for msgs in (s.model.input_messages, s.model.output_messages)
            for msg in msgs or []
            for p in msg.get("parts", [])
            if isinstance(p, dict)
        )

    # --- per step -----------------------------------------------------------------
    def _payload(self, step: Step, what: str, p: Payload | None, *, blocking: bool) -> bool:
        """Report a damaged payload; True when it was."""
        if not _damaged(p):
            return False
        assert p is not None
        self.problems.append(f"{step.label()}: {_why(what, p)}")
        if blocking:
            self.damaged = True
            self.reasons[V.DAMAGED] += 1
        return True

    def _model_step(self, step: Step) -> None:
        m = step.model
        assert m is not None
        inp, out = m.input_payload, m.output_payload
        no_input = m.input_messages is None and (inp is None or inp.status == "missing")
        if no_input:
            self.missing.append(f"steps[{step.index}].input_messages")
        elif m.input_messages is not None and not _says_something(m.input_messages):
            # The structure without a value (content capture off, pydantic-ai): not recorded.
            self.missing.append(f"steps[{step.index}].input_messages")
        self._payload(step, "input messages", inp, blocking=True)
        if m.output_messages is None and out is None and failed_end(self.run, step):
            # How the run ended (its client raised): a replay fails it again, if it can
            # tell the request (a span saying only that the call failed cannot).
            if no_input:
                self.problems.append(request_not_in_trace(step))
            elif cut := cut_unrecorded(self.run, step):
                # What streamed before the failure is what a replay needs to fail it again.
                self.incomplete = True
                self.missing.append(f"steps[{step.index}].output_messages")
                self.problems.append(cut)
                self.reasons[V.OUTPUT_NOT_RECORDED] += 1
        elif m.output_messages is None:
            self.incomplete = True
            if step.status == "ERROR" and out is None:
                self.problems.append(
                    f"{step.label()}: the call failed ({step.status_message or 'ERROR'}); "
                    "a failed model call has no output to serve"
                )
                self.reasons[V.MODEL_CALL_FAILED] += 1
            elif out is None or out.status == "missing":
                self.missing.append(f"steps[{step.index}].output_messages")
                if out is None:
                    self.problems.append(f"{step.label()}: no output messages recorded")
                    self.reasons[V.OUTPUT_NOT_RECORDED] += 1
                # A blob not found is counted as a damaged payload below.
            elif not _damaged(out):
                self.problems.append(f"{step.label()}: output messages are not GenAI messages")
                self.reasons[V.OUTPUT_UNREADABLE] += 1
        elif m.output_messages and not _says_something(m.output_messages):
            self.incomplete = True
            self.missing.append(f"steps[{step.index}].output_messages")
            self.reasons[V.OUTPUT_NOT_RECORDED] += 1
        if cut_stream(step) and m.output_messages and not fails_again(self.run, step):
            # Its first deltas, and the run did not end in it: not the whole answer.
            self.incomplete = True
            self.missing.append(f"steps[{step.index}].finish_reasons")
            self.problems.append(
                f"{step.label()}: the answer streamed and did not reach its end (no finish "
                "reason recorded), and nothing says the run ended in it: not recorded whole"
            )
            self.reasons[V.OUTPUT_NOT_RECORDED] += 1
        if self._payload(step, "output messages", out, blocking=True):
            self.incomplete = True
        self._left_out(step, "input messages", "input_messages", m.input_messages)
        self._left_out(step, "output messages", "output_messages", m.output_messages)
        if m.text_beside_calls == "not_recorded" and _calls(m.output_messages):
            # Whether the model wrote any is not known: named, not counted against the run.
            self.missing.append(f"steps[{step.index}].output_messages.text_beside_calls")
            self.problems.append(
                f"{step.label()}: the answer's tool calls are recorded without any text the "
                "model wrote beside them (the stack leaves it out): that text, if any, is not "
                "in the trace"
            )

        if m.system_not_recorded and not self._has_system(step):
            # Whether the agent sent any is not known: named, not counted against the run.
            self.missing.append(f"steps[{step.index}].system_instructions")
            self.problems.append(
                f"{step.label()}: the tracing records the input without the system "
                "instructions sent beside it: those instructions, if any, are not in the trace"
            )

    def _left_out(self, step: Step, what: str, field: str, value: Any) -> None:
        """Report a value holding an instrumentation's placeholder for content it left out."""
        marker = placeholder_in(value)
        if marker is None:
            return
        self.missing.append(f"steps[{step.index}].{field}")
        self.problems.append(f"{step.label()}: " + left_out(what, marker))
        self.incomplete = True
        self.reasons[V.LEFT_OUT] += 1

    def _tool_step(self, step: Step) -> None:
        t = step.tool
        assert t is not None
        args = t.arguments_payload
        if args is None or args.status == "missing":
            self.missing.append(f"steps[{step.index}].arguments")
        self._payload(step, "arguments", args, blocking=True)
        self._left_out(step, "arguments", "arguments", t.arguments)
        if t.derived:
            # The result is there, as the model was given it: not exact, but not a gap either.
            self.problems.append(
                f"{step.label()}: no tool span; arguments and result are taken from the "
                "messages (as the model saw them, unverified) and the call has no timing"
            )
            self.incomplete = True
            self.reasons[V.TOOLS_FROM_MESSAGES] += 1
        if not step.timed:
            self.missing.append(f"steps[{step.index}].timestamps")
        if t.error is not None:
            if self._payload(step, "exception arguments", t.error.args_payload, blocking=True):
                self.incomplete = True
            if t.raised:
                return
        self._left_out(step, "result", "result", t.result)
        p = t.result_payload
        if p is None or p.status == "missing":
            self.missing.append(f"steps[{step.index}].result")
            self.incomplete = True
            if p is None:
                self.problems.append(f"{step.label()}: no result recorded")
                self.reasons[V.RESULTS_NOT_RECORDED] += 1
        if self._payload(step, "result", p, blocking=True):
            self.incomplete = True

    def _agent_step(self, step: Step) -> None:
        m = step.model
        assert m is not None
        # The agent's own I/O is compared, not served: damage is worth saying, not blocking.
        self._payload(step, "agent input", m.input_payload, blocking=False)
        self._payload(step, "agent output", m.output_payload, blocking=False)

    def _no_model_call(self) -> bool:
        """An agent offered its tools to a model and they ran, and no model call is recorded:
        what asked for them is not in the trace (Semantic Kernel's Responses agent traces the
        agent and its tools alone).  Nothing to replay the model with.  (A run of tools with
        no model, as a pipeline records it, is not this.)"""
        offered = any(
            s.kind == "agent" and s.attributes.get(A.TOOL_DEFINITIONS) for s in self.run.steps
        )
        if self.models or not self.tools or not offered:
            return False
        self.missing.append("model_calls")
        self.reasons[V.NO_MODEL_CALLS] += 1
        self.problems.append(
            f"{len(self.tools)} tool step(s) and no model call: what the model was sent and "
            "answered is not in the trace"
        )
        return True

    def _unanswered_calls(self) -> None:
        """Tool calls the model made, the run went on, and no tool step answers."""
        # The first deltas of an answer cut partway (a call failed again on replay) reached
        # no tool: the client raised on them.
        cut = {s.span_id for s, _ in self._in_call_order if fails_again(self.run, s)}
        calls = [c for c in self._model_tool_calls() if c[0].span_id not in cut]
        called_ids = {c.get("id") for _, _, c in calls if c.get("id")}
        by_id = {s.tool.call_id for s in self.tools if s.tool is not None and s.tool.call_id}
        by_name = Counter(
            s.tool.tool_name
            for s in self.tools
            if s.tool is not None and s.tool.call_id not in called_ids
        )
        last_start = max((s.start_ns for s in self.models), default=0)
        answered: set[str] | None = None
        for step, k, call in calls:
            call_id, name = call.get("id"), str(call.get("name"))
            if call_id and call_id in by_id:
                continue
            if by_name[name] > 0:
                by_name[name] -= 1
                continue
            if step.start_ns >= last_start:
                continue  # no model call after this one: nothing consumed the call
            self.missing.append(f"steps[{step.index}].tool_calls[{k}].result")
            if answered is None:
                answered = self._answered_ids()
            where = (
                "its result is only in a later model input"
                if call_id and call_id in answered
                else "no result was recorded"
            )
            ident = f" (id {call_id})" if call_id else ""
            self.problems.append(
                f"{step.label()}: tool call {name}{ident} has no tool span; {where}"
            )
            self.incomplete = True
            self.reasons[V.RESULTS_NOT_RECORDED] += 1

    def _lost_history(self) -> None:
        """A model input recorded without the conversation it was sent.

        The model asked for tools, tool steps ran them, and the next model
        call's recorded input is no more than the earlier call's (its first
        messages, unchanged) and holds none of those calls: what the model was
        sent is not what the span says (the OpenTelemetry bridge of
        openai-agents with a Responses model records the first user message
        alone).  An input that says something new, if not the calls (an
        agent that tells the model only that a tool failed), is what it was.
        """
        ran = {s.tool.call_id for s in self.tools if s.tool is not None and s.tool.call_id}
        for (before, calls), (after, _) in itertools.pairwise(self._in_call_order):
            m, n = before.model, after.model
            assert m is not None and n is not None
            if m.input_messages is None or n.input_messages is None:
                continue
            asked = {c.get("id") for c in calls} & ran
            prefix = m.input_messages[: len(n.input_messages)]
            if not asked or n.input_messages != prefix:
                continue
            seen = {
                p.get("id")
                for msg in n.input_messages
                for p in msg.get("parts") or []
                if isinstance(p, dict)
            }
            if asked & seen:
                continue
            self.missing.append(f"steps[{after.index}].input_messages")
            self.problems.append(
                f"{after.label()}: its input holds no more than the call before it and none of "
                f"that call's {len(asked)} tool call(s) and results: recorded incompletely"
            )
            self.incomplete = True
            self.reasons[V.HISTORY_NOT_RECORDED] += 1

    @functools.cached_property
    def _in_call_order(self) -> list[tuple[Step, list[dict[str, Any]]]]:
        """The model steps in call order (start, then tree order), each with the tool calls
        of its answer: read by two checks, made once."""
        ordered = sorted(self.models, key=lambda s: (s.start_ns, s.index))
        return [(s, M.tool_calls(_answer(s))) for s in ordered]

    def _model_tool_calls(self) -> Iterator[tuple[Step, int, dict[str, Any]]]:
        for s, calls in self._in_call_order:
            for k, call in enumerate(calls):
                yield s, k, call

    def _answered_ids(self) -> set[str]:
        """Call ids some model input answers with a ``tool_call_response`` part."""
        return {
            str(p.get("id"))
            for s in self.models
            if s.model is not None
            for msg in s.model.input_messages or []
            for p in msg.get("parts", [])
            if isinstance(p, dict) and p.get("type") == "tool_call_response" and p.get("id")
        }

    def _ordered_missing(self) -> list[str]:
        """Run-level fields first (in kit order), then per step by index: deterministic."""
        run_level = [m for m in self.missing if not m.startswith("steps[")]
        per_step = [m for m in self.missing if m.startswith("steps[")]
        per_step.sort(key=lambda m: int(m[len("steps[") : m.index("]")]))  # stable within a step
        return run_level + per_step
