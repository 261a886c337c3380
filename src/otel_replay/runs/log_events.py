"""GenAI content sent as events, joined to the model steps of their spans.

Instrumentations that keep message content off the span send it as events:
log records tied to the span by its id, or (older versions) span events.
Both schemes in use are read, from either carrier:

- ``gen_ai.client.inference.operation.details``: one event per model call
  (e.g. the ``EVENT_ONLY`` mode of the OTel GenAI instrumentations) with
  ``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.system_instructions`` and ``gen_ai.tool.definitions`` as
  attributes (structured values or JSON strings) or in the body;
- one event per message (semantic conventions 1.30 and before):
  ``gen_ai.system.message``, ``gen_ai.user.message``,
  ``gen_ai.assistant.message`` and ``gen_ai.tool.message`` are the input
  messages in event order, ``gen_ai.choice`` the output messages by
  ``index``; their fields (``content``, ``tool_calls``, ``id``, ``message``,
  ``finish_reason``) are in the body of a log record, in the attributes of
  a span event.

Content the span itself carries wins: events fill only what it lacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from ..store.records import LogRecord
from .model import ModelCall, Run, Step
from .steps import current_attributes, model_call

INFERENCE_DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
#: Per-message input events -> the role of their message.
MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
GENAI_EVENTS = frozenset({INFERENCE_DETAILS, CHOICE, *MESSAGE_EVENTS})
_CONTENT = ("input_messages", "output_messages", "system_instructions", "tool_definitions")

#: (event name, body, attributes) of one event, from a log record or a span event.
Event = tuple[str, Any, Mapping[str, Any]]


def _key(trace_id: str, span_id: str) -> tuple[str, str]:
    return (trace_id, span_id)


def _steps(runs: Iterable[Run]) -> dict[tuple[str, str], Step]:
    return {_key(s.trace_id, s.span_id): s for run in runs for s in run.steps}


def join_events(runs: Iterable[Run], logs: Iterable[LogRecord] = ()) -> None:
    """Fill the model steps of ``runs`` from their GenAI span events and log records."""
    steps = _steps(runs)
    events: dict[tuple[str, str], list[Event]] = {}
    for key, step in steps.items():
        for e in step.events:
            if e["name"] in GENAI_EVENTS:
                events.setdefault(key, []).append((e["name"], None, e["attributes"]))
    seen: set[tuple[Any, ...]] = set()
    for r in logs:
        key = _key(r.trace_id, r.span_id)
        if r.event_name not in GENAI_EVENTS or key not in steps:
            continue
        # The same dump given twice (as JSON and as proto, say) must not double the messages.
        ident = (key, r.time_ns, r.event_name, repr(r.body), repr(r.attributes))
        if ident in seen:
            continue
        seen.add(ident)
        events.setdefault(key, []).append((r.event_name, r.body, r.attributes))
    for key, found in events.items():
        _fill(steps[key], found)


def unjoined(runs: Iterable[Run], logs: Iterable[LogRecord]) -> list[LogRecord]:
    """The log records tied to no step of ``runs``: no span id, or a span not loaded."""
    steps = _steps(runs)
    return [r for r in logs if _key(r.trace_id, r.span_id) not in steps]


def _fill(step: Step, events: list[Event]) -> None:
    call = content_of(events)
    if step.model is None:
        if step.kind != "other":
            return  # a tool or agent step: its events are not a model call's
        # A span that said nothing of itself, whose events tell a model call.
        step.kind = "model"
        step.model = call
        return
    for name in _CONTENT:
        if getattr(step.model, name) is None:
            setattr(step.model, name, getattr(call, name))


def content_of(events: Iterable[Event]) -> ModelCall:
    """The model call the GenAI ``events`` of one span describe (see module docstring)."""
    attrs: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    choices: list[tuple[int, int, dict[str, Any]]] = []
    for name, body, attributes in events:
        if name == INFERENCE_DETAILS:
            fields = {**body, **attributes} if isinstance(body, Mapping) else attributes
            for k, v in current_attributes(fields).items():
                attrs.setdefault(k, v)
            continue
        # Span events carry the fields as attributes, nested values as JSON strings.
        fields = body if isinstance(body, Mapping) else attributes
        if name == CHOICE:
            message = M.parse_arguments(fields.get("message"))
            message = dict(message) if isinstance(message, Mapping) else {}
            message["role"] = message.get("role") or "assistant"
            if fields.get("finish_reason") is not None:
                message["finish_reason"] = fields["finish_reason"]
            message["tool_calls"] = M.parse_arguments(message.get("tool_calls"))
            index = fields.get("index")
            choices.append((index if isinstance(index, int) else 0, len(choices), message))
        elif name in MESSAGE_EVENTS:
            role = MESSAGE_EVENTS[name]
            message = {"role": role, "content": fields.get("content")}
            if role == "assistant":
                message["tool_calls"] = M.parse_arguments(fields.get("tool_calls"))
            elif role == "tool":
                message["tool_call_id"] = fields.get("id")
            inputs.append(message)
    if inputs:
        attrs.setdefault(A.INPUT_MESSAGES, inputs)
    if choices:
        attrs.setdefault(A.OUTPUT_MESSAGES, [m for _, _, m in sorted(choices)])
    return model_call(attrs)
