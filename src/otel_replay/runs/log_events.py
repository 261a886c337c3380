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
  ``finish_reason``) are in the body of a log record (a map, or JSON text of
  one when the record came through Python's logging), in the attributes of a
  span event.

Content the span itself carries wins: events fill only what it lacks.

A log record sent without span context (OpenLLMetry's Anthropic events) is
joined by time: to the one model span of the same process whose time window
holds it, of the record's own instrumentation scope when several do (a call
traced twice); when none or several do still, it stays unjoined.  Per-message events of
the Anthropic API follow its shapes: a ``gen_ai.user.message`` whose content
is ``{"tools": [...]}`` gives the tool definitions, and the ``gen_ai.choice``
events of one call (one per content block) form one assistant message.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from .. import attributes as A
from .. import json_text
from .. import messages as M
from ..dialects import openai_v2
from ..otlp.records import LogRecord
from .model import ModelCall, Run, Step
from .steps import current_attributes, model_call
from .stitch import process_key, process_key_of

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
#: What a message event holds in place of content that was not captured (Google ADK).
ELIDED = frozenset({"<elided>"})
_CONTENT = ("input_messages", "output_messages", "system_instructions", "tool_definitions")

#: (event name, body, attributes) of one event, from a log record or a span event.
Event = tuple[str, Any, Mapping[str, Any]]


def _key(trace_id: str, span_id: str) -> tuple[str, str]:
    return (trace_id, span_id)


def _steps(runs: Iterable[Run]) -> dict[tuple[str, str], Step]:
    return {_key(s.trace_id, s.span_id): s for run in runs for s in run.steps}


def join_events(runs: Iterable[Run], logs: Iterable[LogRecord] = ()) -> None:
    """Fill the model steps of ``runs`` from their GenAI span events and log records."""
    runs = runs if isinstance(runs, list) else list(runs)
    logs = logs if isinstance(logs, list) else list(logs)
    if not logs and not any(s.events for run in runs for s in run.steps):
        return  # most traces: content on attributes, no event to join
    steps = _steps(runs)
    events: dict[tuple[str, str], list[Event]] = {}
    for key, step in steps.items():
        for e in step.events:
            if e["name"] in GENAI_EVENTS:
                events.setdefault(key, []).append((e["name"], None, e["attributes"]))
    seen: set[tuple[Any, ...]] = set()
    by_time = _Windows.lazily(runs)
    for r in logs:
        key = _key(r.trace_id, r.span_id)
        if r.event_name not in GENAI_EVENTS:
            continue
        if not r.span_id:
            key = by_time().find(r) or key
        if key not in steps:
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
    """The log records tied to no step of ``runs``: no span, or a span not loaded."""
    logs = list(logs)
    if not logs:
        return []
    runs = list(runs)
    steps = _steps(runs)
    by_time = _Windows.lazily(runs)
    return [
        r
        for r in logs
        if _key(r.trace_id, r.span_id) not in steps
        and not (r.span_id == "" and r.event_name in GENAI_EVENTS and by_time().find(r))
    ]


class _Windows:
    """Model spans by process and start time, to place records that name no span."""

    @classmethod
    def lazily(cls, runs: Iterable[Run]) -> Callable[[], _Windows]:
        """The windows of ``runs``, built when first asked for (most dumps have no such record)."""
        built: list[_Windows] = []

        def get() -> _Windows:
            if not built:
                built.append(cls(runs))
            return built[0]

        return get

    def __init__(self, runs: Iterable[Run]) -> None:
        found: dict[str, list[tuple[int, int, tuple[str, str]]]] = {}
        self._scopes: dict[tuple[str, str], str] = {}
        for run in runs:
            here = process_key(run)
            for s in run.steps:
                if s.kind == "model" and s.timed:
                    found.setdefault(here, []).append(
                        (s.start_ns, s.end_ns, _key(s.trace_id, s.span_id))
                    )
                    self._scopes[_key(s.trace_id, s.span_id)] = s.scope
        self._by_process = {k: sorted(v) for k, v in found.items()}
        self._starts = {k: [w[0] for w in v] for k, v in self._by_process.items()}
        self._longest = {k: max(e - s for s, e, _ in v) for k, v in self._by_process.items()}

    def find(self, record: LogRecord) -> tuple[str, str] | None:
        """The one model span of the record's process whose window holds its time."""
        here = process_key_of(record.resource)
        windows = self._by_process.get(here)
        if not windows:
            return None
        t = record.time_ns
        holding = []
        i = bisect.bisect_right(self._starts[here], t) - 1
        # Only spans that started at most the longest span's length ago can hold t.
        while i >= 0 and windows[i][0] >= t - self._longest[here]:
            if windows[i][1] >= t:
                holding.append(windows[i][2])
            i -= 1
        if len(holding) > 1:
            holding = [k for k in holding if self._scopes.get(k) == record.scope_name]
        return holding[0] if len(holding) == 1 else None


def _fill(step: Step, events: list[Event]) -> None:
    call = content_of(events)
    if step.model is None:
        if step.kind != "other" or any(c.kind == "model" for c in step.children):
            # A tool step's events are not a model call's, nor are those of a span
            # around a model call (Strands' event-loop cycle).
            return
        # A span that said nothing of itself, whose events tell a model call.
        step.kind = "model"
        step.model = call
        return
    if openai_v2.chat_completions(step.scope, step.attributes):
        # Its EVENT_ONLY mode writes the messages its spans would hold, in the same order.
        for name in ("input_messages", "output_messages"):
            found = getattr(call, name)
            if found is not None:
                setattr(call, name, [openai_v2.text_first(m) for m in found])
    for name in _CONTENT:
        if getattr(step.model, name) is None:
            setattr(step.model, name, getattr(call, name))


def _structured(body: Any) -> Any:
    """An event body sent as JSON text (through Python's logging, the record's message is the
    text: Semantic Kernel) as the map it spells; any other body as it is."""
    if isinstance(body, str) and body[:1] == "{":
        try:
            return json_text.loads(body)
        except ValueError:
            return body
    return body


def _content(value: Any) -> bool:
    """A google-genai ``Content``: ``{"role": ..., "parts": [...]}``."""
    return isinstance(value, Mapping) and isinstance(value.get("parts"), list) and "role" in value


def content_of(events: Iterable[Event]) -> ModelCall:
    """The model call the GenAI ``events`` of one span describe (see module docstring)."""
    attrs: dict[str, Any] = {}
    inputs: list[dict[str, Any]] = []
    choices: list[tuple[int, int, dict[str, Any]]] = []
    anthropic = False
    elided = False
    for name, recorded, attributes in events:
        body = _structured(recorded)
        provider = attributes.get(A.PROVIDER_NAME, attributes.get("gen_ai.system"))
        anthropic = anthropic or provider == "anthropic"
        if name == INFERENCE_DETAILS:
            fields = {**body, **attributes} if isinstance(body, Mapping) else attributes
            for k, v in current_attributes(fields).items():
                attrs.setdefault(k, v)
            continue
        # Span events carry the fields as attributes, nested values as JSON strings.
        fields = body if isinstance(body, Mapping) else attributes
        if name == CHOICE:
            message = M.parse_arguments(fields.get("message"))
            if message is None and _content(fields.get("content")):
                message = fields["content"]  # a google-genai Content (Google ADK)
            if isinstance(message, (list, str)):  # the content alone (Strands)
                message = {"content": message}
            message = dict(message) if isinstance(message, Mapping) else {}
            message["role"] = message.get("role") or "assistant"
            if fields.get("finish_reason") is not None:
                message["finish_reason"] = fields["finish_reason"]
            # OpenLLMetry puts the calls beside the message, not in it.
            calls = message.get("tool_calls") or fields.get("tool_calls")
            message["tool_calls"] = M.parse_arguments(calls)
            index = fields.get("index")
            choices.append((index if isinstance(index, int) else 0, len(choices), message))
        elif name in MESSAGE_EVENTS:
            role = MESSAGE_EVENTS[name]
            content = M.parse_arguments(fields.get("content"))
            if isinstance(content, str) and content in ELIDED:
                elided = True
                continue
            if role == "user" and isinstance(content, Mapping) and set(content) == {"tools"}:
                # The request's tool list, sent as a message (OpenLLMetry, Anthropic).
                tools = content["tools"] if isinstance(content["tools"], list) else []
                defs = [M.tool_definition(t) for t in tools if isinstance(t, Mapping)]
                attrs.setdefault(A.TOOL_DEFINITIONS, defs)
                continue
            if _content(content):
                # A google-genai Content, with its own role: ADK sends every input
                # message, the model's turns included, as a user message event.
                inputs.append(dict(content))
                continue
            # Content blocks may come as JSON text of a list (Strands: span event attributes
            # hold no list); text stays text.  A tool's result in a structured body is as
            # it was sent: its text, even text that spells blocks (Semantic Kernel sends
            # a list a tool returned as its JSON text), stays text.
            if (
                role == "tool"
                and isinstance(body, Mapping)
                and isinstance(fields.get("content"), str)
            ):
                content = fields["content"]
            message = {
                "role": role,
                "content": content if isinstance(content, list) else fields.get("content"),
            }
            if role == "assistant":
                message["tool_calls"] = M.parse_arguments(fields.get("tool_calls"))
            elif role == "tool":
                message["tool_call_id"] = fields.get("id", fields.get("tool_call_id"))
            inputs.append(message)
    if elided:
        # Content capture off: the messages are placeholders, the answer an empty shell.
        inputs, choices = [], [c for c in choices if c[2].get("content") or c[2].get("parts")]
    if inputs:
        attrs.setdefault(A.INPUT_MESSAGES, inputs)
    if choices:
        attrs.setdefault(A.OUTPUT_MESSAGES, [m for _, _, m in sorted(choices)])
    call = model_call(attrs)
    out = call.output_messages
    if anthropic and out and len(out) > 1:
        # Anthropic answers with one message; each choice event is one of its blocks.
        parts = [p for m in out for p in m.get("parts") or []]
        call.output_messages = [{**out[-1], "parts": parts}]
    return call
