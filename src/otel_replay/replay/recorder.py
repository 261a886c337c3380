"""The replayed run, written as spans: so a replay can be diffed against its recording.

A replay session logs every model request it served (the request the agent
actually sent, the recorded answer it got) and every tool call (the
arguments actually passed, the value or exception the stub or live tool
gave back).  :meth:`ReplayLog.spans` turns that log into OTLP spans in the
same GenAI shape capture writes (``gen_ai.input.messages`` and the other
content attributes with their byte-exact companions), under copies of the
recording's agent spans, in a fresh trace.  Steps that matched a recorded
step carry its timestamps (the replay clock stood there); a request that
diverged is written with what the agent sent, no answer, and an ERROR
status naming the divergence.  ``otel-replay diff recording replay`` then
shows a clean replay as equal and names the step where a diverged one left
the recording.
"""

from __future__ import annotations

import dataclasses
import json
import os
import secrets
import time
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from .. import attributes as A
from .. import messages as M
from .._version import __version__
from ..payload.attributes import to_attributes
from ..runs.build import IDS
from ..runs.model import Run, Step
from .divergence import ReplayRefused

#: On the root of a written replay: the id of the recorded run it replays.
REPLAY_OF = "otel_replay.replay_of"
#: ``error.type`` of a step where the replay left the recording.
DIVERGED = "otel_replay.ReplayDivergence"
#: ``error.type`` of the root of a replay refused (the trace lacks what it needs), with an
#: event per item missing: the step's index, what of it is missing, in words.
REFUSED = "otel_replay.ReplayRefused"
REFUSAL_EVENT = "otel_replay.refused"
REFUSAL_KIND = "otel_replay.refused.kind"
REFUSAL_WHAT = "otel_replay.refused.what"
REFUSAL_STEP = "otel_replay.refused.step"
#: The event on that step, carrying what differs and the diff (recorded vs replay), so that a
#: backend showing the replay beside its recording shows where and how they part.
DIVERGENCE_EVENT = "otel_replay.divergence"
DIVERGENCE_WHAT = "otel_replay.divergence.what"
DIVERGENCE_DIFF = "otel_replay.divergence.diff"
DIVERGENCE_STEP = "otel_replay.divergence.step"
SCOPE = InstrumentationScope("otel_replay.replay", __version__)
_PARAM_ALIASES = {
    "stop": "stop_sequences",
    "n": "choice.count",
    "max_completion_tokens": "max_tokens",
}


@dataclasses.dataclass
class ModelEntry:
    step: Step | None  # the recorded step served; None when the request diverged
    near: Step | None  # where it happened in the recording (for placing it)
    messages: list[dict[str, Any]]
    system: Any
    tools: Sequence[Mapping[str, Any]] | None
    params: dict[str, Any]
    at_ns: int
    divergence: str | None = None
    #: The diff of the recorded and the replayed request, where it diverged.
    diff: str = ""
    #: The answer the agent got when it was not the recorded one (live model, an override).
    output: list[dict[str, Any]] | None = None


@dataclasses.dataclass
class ToolEntry:
    step: Step | None
    near: Step | None
    name: str
    call_id: str | None
    arguments: Any
    at_ns: int
    outcome: Any = None
    error: BaseException | None = None
    divergence: str | None = None
    done: bool = False
    #: The diff of the recorded and the replayed call, where it diverged.
    diff: str = ""


class ReplayLog:
    """What a replay session did, in order; :meth:`write` makes it a trace file."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.entries: list[ModelEntry | ToolEntry] = []
        self.final_answer: str | None = None
        #: What the agent raised out of the replay (not a divergence): its run ends so.
        self.raised: BaseException | None = None
        #: The refusal the replay ended with (the trace lacks what it needs), if any.
        self.refusal: ReplayRefused | None = None
        #: Attributes the written replay's root carries besides REPLAY_OF (the cohort it
        #: belongs to, the candidate replayed against).
        self.root_attributes: dict[str, Any] = {}

    def model(self, entry: ModelEntry) -> None:
        self.entries.append(entry)

    def tool(self, entry: ToolEntry) -> None:
        self.entries.append(entry)

    # --- spans ----------------------------------------------------------------------
    def spans(self) -> list[ReadableSpan]:
        """The replayed run as finished spans (a fresh trace id), parents before children."""
        return _Writer(self).spans()

    def write(self, path: str | os.PathLike[str]) -> str:
        """Append the replayed run to ``path`` (our file format); returns its run (trace) id."""
        return run_id_of(self.export(path))

    def export(self, path: str | os.PathLike[str]) -> list[ReadableSpan]:
        """Append the replayed run to ``path`` (our file format); returns the spans written."""
        # The file exporter only when the replayed run is written.
        from ..export.file_exporter import FileSpanExporter

        spans = self.spans()
        exporter = FileSpanExporter(path)
        try:
            exporter.export(spans)
        finally:
            exporter.shutdown()
        return spans


def run_id_of(spans: Sequence[ReadableSpan]) -> str:
    """The run (trace) id of a replay's ``spans`` ("" when there are none)."""
    return format(spans[0].context.trace_id, "032x") if spans else ""


def _recorded(step: Step) -> tuple[Link, ...]:
    """A link to the recorded span ``step`` is, so that a backend shows a replay's root
    beside the root of the run it replays (none for ids a trace did not spell in hex)."""
    try:
        context = SpanContext(
            int(step.trace_id, 16),
            int(step.span_id, 16),
            is_remote=True,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
    except ValueError:
        return ()
    return (Link(context),) if context.is_valid else ()


def _qualified(exc: BaseException) -> str:
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


class _Writer:
    def __init__(self, log: ReplayLog) -> None:
        self.log = log
        self.run = log.run
        self.trace_id = int.from_bytes(secrets.token_bytes(16), "big") or 1
        self.resource = Resource(dict(self.run.resource) or {"service.name": "otel-replay"})
        self.out: list[ReadableSpan] = []
        #: recorded span id -> written span context (for the agent spans and other ancestors)
        self.copies: dict[str, SpanContext] = {}
        self.by_id = {s.span_id: s for s in self.run.steps}
        self._last_ns = 0

    def _context(self) -> SpanContext:
        span_id = int.from_bytes(secrets.token_bytes(8), "big") or 1
        return SpanContext(
            self.trace_id, span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.SAMPLED)
        )

    def _span(
        self,
        name: str,
        parent: SpanContext | None,
        start: int,
        end: int,
        attrs: dict[str, Any],
        *,
        kind: SpanKind = SpanKind.INTERNAL,
        status: Status | None = None,
        events: Sequence[Event] = (),
        links: Sequence[Link] = (),
    ) -> SpanContext:
        ctx = self._context()
        self.out.append(
            ReadableSpan(
                name=name,
                context=ctx,
                parent=parent,
                resource=self.resource,
                attributes=attrs,
                events=events,
                links=links,
                kind=kind,
                status=status or Status(StatusCode.UNSET),
                start_time=start,
                end_time=max(end, start),
                instrumentation_scope=SCOPE,
            )
        )
        return ctx

    def spans(self) -> list[ReadableSpan]:
        entries = self.log.entries
        keep = {s.span_id for s in self.run.steps if s.kind == "agent"}
        for e in entries:
            anchor = e.step or e.near
            parent_id = anchor.parent_span_id if anchor is not None else None
            seen: set[str] = set()  # a trace may close a loop of parents: each once
            while parent_id and parent_id in self.by_id and parent_id not in seen:
                seen.add(parent_id)
                keep.add(parent_id)
                parent_id = self.by_id[parent_id].parent_span_id
        # With no agent span recorded (client-only traces) the model and tool
        # spans stay roots, as recorded, so both runs align by depth.
        first_root = True
        for step in self.run.steps:  # pre-order: parents first
            if step.span_id not in keep:
                continue
            parent = self.copies.get(step.parent_span_id or "")
            is_root = first_root and parent is None
            attrs = self._ancestor_attributes(step, is_root)
            first_root = False
            status: Status | None = None
            events: tuple[Event, ...] = ()
            raised = self.log.raised
            if is_root and self.log.refusal is not None:
                status, events = _refused(self.log.refusal, attrs, step.end_ns)
            elif is_root and step.kind == "agent" and raised is not None:
                # The run raised, as a recorded one that raised is written: the agent span
                # in error, the exception's type and message on it.
                attrs[A.ERROR_TYPE] = _qualified(raised)
                status = Status(StatusCode.ERROR, str(raised))
                event = {
                    "exception.type": _qualified(raised),
                    "exception.message": str(raised),
                }
                events = (Event("exception", event, timestamp=step.end_ns),)
            self.copies[step.span_id] = self._span(
                step.name,
                parent,
                step.start_ns,
                step.end_ns,
                attrs,
                status=status,
                events=events,
                links=_recorded(step) if REPLAY_OF in attrs else (),
            )
        for e in entries:
            if isinstance(e, ModelEntry):
                self._model(e)
            else:
                self._tool(e)
        return self.out

    def _parent_of(self, step: Step | None) -> SpanContext | None:
        if step is None:
            return next(iter(self.copies.values()), None)
        return self.copies.get(step.parent_span_id or "")

    def _ancestor_attributes(self, step: Step, is_root: bool) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        if step.kind == "agent":
            attrs[A.OPERATION_NAME] = step.attributes.get(A.OPERATION_NAME) or A.OP_INVOKE_AGENT
            name = step.attributes.get(A.AGENT_NAME)
            if name:
                attrs[A.AGENT_NAME] = name
            if step.model is not None and step.model.input_messages is not None:
                attrs.update(to_attributes(A.INPUT_MESSAGES, step.model.input_messages))
        if is_root:
            attrs.update(self.log.root_attributes)
            attrs[REPLAY_OF] = self.run.run_id
            for key, value in self.run.fingerprint.items():
                name = key if key in IDS else A.FP + key
                attrs[name] = _attr(value)
            if (
                step.kind == "agent"
                and self.log.final_answer is not None
                and self.log.raised is None
            ):
                text = {"type": "text", "content": self.log.final_answer}
                answer = [{"role": "assistant", "parts": [text]}]
                attrs.update(to_attributes(A.OUTPUT_MESSAGES, answer))
        return attrs

    def _times(self, step: Step | None, at_ns: int) -> tuple[int, int]:
        # A call with no recorded step (live, or diverged) is placed after the one
        # before it: the clock stood still meanwhile, and order must survive the reload.
        if step is not None:
            start, end = step.start_ns, step.end_ns
        else:
            start = end = max(at_ns, self._last_ns + 1)
        self._last_ns = max(self._last_ns, start)
        return start, end

    def _model(self, e: ModelEntry) -> None:
        recorded = e.step.model if e.step is not None and e.step.model is not None else None
        near = e.near.model if e.near is not None and e.near.model is not None else None
        source = recorded or near
        attrs: dict[str, Any] = {A.OPERATION_NAME: A.OP_CHAT}
        if source is not None:
            if source.provider:
                attrs[A.PROVIDER_NAME] = source.provider
            if source.request_model:
                attrs[A.REQUEST_MODEL] = source.request_model
        params = dict(source.params) if source is not None else {}
        for key, value in e.params.items():
            if value is not None:
                params[_PARAM_ALIASES.get(key, key)] = value
        for key, value in params.items():
            attrs[A.REQUEST_PREFIX + key] = _attr(value)
        system = M.system_parts(e.system) if e.system is not None else None
        if system is None and source is not None:
            system = source.system_instructions
        if system is not None:
            attrs.update(to_attributes(A.SYSTEM_INSTRUCTIONS, system))
        tools = [M.tool_definition(t) for t in e.tools] if e.tools is not None else None
        if tools is None and source is not None:
            tools = source.tool_definitions
        if tools is not None:
            attrs.update(to_attributes(A.TOOL_DEFINITIONS, tools))
        attrs.update(to_attributes(A.INPUT_MESSAGES, e.messages))
        status = None
        if recorded is not None:
            if recorded.response_model:
                attrs[A.RESPONSE_MODEL] = recorded.response_model
            if recorded.response_id:
                attrs[A.RESPONSE_ID] = recorded.response_id
            if recorded.finish_reasons:
                attrs[A.RESPONSE_FINISH_REASONS] = list(recorded.finish_reasons)
            for key, value in recorded.usage.items():
                attrs[f"gen_ai.usage.{key}"] = value
            if recorded.output_messages is not None and e.output is None:
                attrs.update(to_attributes(A.OUTPUT_MESSAGES, recorded.output_messages))
        if e.output is not None:
            attrs.update(to_attributes(A.OUTPUT_MESSAGES, e.output))
        events: list[Event] = []
        if e.divergence is not None:
            attrs[A.ERROR_TYPE] = DIVERGED
            status = Status(StatusCode.ERROR, f"replay diverged: {e.divergence}")
            events.append(_diverged(e.divergence, e.diff, e.near, e.at_ns))
        model = (source.request_model if source is not None else None) or "model"
        start, end = self._times(e.step, e.at_ns)
        self._span(
            f"chat {model}",
            self._parent_of(e.step or e.near),
            start,
            end,
            attrs,
            kind=SpanKind.CLIENT,
            status=status,
            events=events,
        )

    def _tool(self, e: ToolEntry) -> None:
        attrs: dict[str, Any] = {
            A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
            A.TOOL_NAME: e.name,
            A.TOOL_TYPE: "function",
        }
        if e.call_id is not None:
            attrs[A.TOOL_CALL_ID] = e.call_id
        attrs.update(to_attributes(A.TOOL_CALL_ARGUMENTS, e.arguments))
        status = None
        events: list[Event] = []
        if e.divergence is not None:
            attrs[A.ERROR_TYPE] = DIVERGED
            status = Status(StatusCode.ERROR, f"replay diverged: {e.divergence}")
            events.append(_diverged(e.divergence, e.diff, e.near, e.at_ns))
        elif e.error is not None:
            qualified = _qualified(e.error)
            attrs[A.ERROR_TYPE] = qualified
            attrs.update(to_attributes(A.EXCEPTION_ARGS, tuple(e.error.args)))
            status = Status(StatusCode.ERROR, str(e.error))
            events.append(
                Event(
                    "exception",
                    {"exception.type": qualified, "exception.message": str(e.error)},
                    timestamp=e.step.end_ns if e.step is not None else e.at_ns,
                )
            )
        elif e.done:
            attrs.update(to_attributes(A.TOOL_CALL_RESULT, e.outcome))
        start, end = self._times(e.step, e.at_ns)
        self._span(
            f"{A.OP_EXECUTE_TOOL} {e.name}",
            self._parent_of(e.step or e.near),
            start,
            end,
            attrs,
            status=status,
            events=events,
        )


def _diverged(what: str, diff: str, near: Step | None, at_ns: int) -> Event:
    """The divergence as an event: what differs, the diff, and the recorded step's index."""
    attrs: dict[str, Any] = {DIVERGENCE_WHAT: what}
    if diff:
        attrs[DIVERGENCE_DIFF] = diff
    if near is not None:
        attrs[DIVERGENCE_STEP] = near.index
    return Event(DIVERGENCE_EVENT, attrs, timestamp=at_ns)


def _refused(
    refusal: ReplayRefused, attrs: dict[str, Any], at_ns: int
) -> tuple[Status, tuple[Event, ...]]:
    """The root's status and events for a replay refused: not a divergence (the agent did
    nothing wrong), each item the trace lacks an event."""
    attrs[A.ERROR_TYPE] = REFUSED
    events = []
    for item in refusal.items:
        said: dict[str, Any] = {REFUSAL_KIND: item.kind, REFUSAL_WHAT: item.what}
        if item.index is not None:
            said[REFUSAL_STEP] = item.index
        events.append(Event(REFUSAL_EVENT, said, timestamp=at_ns))
    first = refusal.items[0].what if refusal.items else ""
    return Status(StatusCode.ERROR, f"replay refused: {first}"), tuple(events)


def _attr(value: Any) -> Any:
    """A value an attribute can hold: itself, a list of strings, else JSON text."""
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return json.dumps(value, default=str, sort_keys=True)


def now_ns() -> int:
    """The replay clock's now (frozen at the current recorded step, when frozen)."""
    return time.time_ns()
