"""pydantic-ai's own instrumentation (scope ``pydantic-ai``), every data-format version.

- versions 2 to 6 write GenAI semconv (``gen_ai.input.messages``...; read by the
  ``genai`` dialect); tool results sit in ``user`` messages before version 6
  and in ``tool`` messages from it (both read as ``tool``, see
  :mod:`otel_replay.messages`)
- version 1 puts the messages in ``events``: a JSON list of GenAI events
  (``{"event.name": "gen_ai.user.message", "role", "content", "tool_calls",
  "id"}``, ``gen_ai.choice`` with ``message``), its tool spans carry
  ``tool_arguments``/``tool_response``, its agent span ``agent_name`` and
  ``all_messages_events``
- every version: ``model_request_parameters`` (JSON, with ``function_tools``
  and ``output_tools``) names the tools the model was offered
- from pydantic-ai 2.60 a tool's error or retry reaches the model as
  ``{"error": <text>}`` unless the provider has an error channel of its own,
  while the messages keep the text alone: its chat spans to such providers
  are marked (:data:`~otel_replay.attributes.TOOL_ERRORS_SENT_AS`)
- a tool's result reaches a model without content blocks of its own (OpenAI and
  the other providers with no error channel) as ``ToolReturnPart.model_response_str()``:
  text as it is, any other value as pydantic's JSON text, and, from 1.69, None
  (or an empty list) as empty text; the messages keep the value
  (:func:`sent_text`), so a list of text blocks the tool returned was read as
  content parts, joined
- every version: a tool call the model sent without an id has one pydantic-ai made
  (:data:`~otel_replay.attributes.CALL_IDS_MADE_AS`)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, loads, put

SCOPE = "pydantic-ai"
_MARKERS = (
    "model_request_parameters",
    "all_messages_events",
    "pydantic_ai.all_messages",
    "tool_arguments",
)
_CHOICE = "gen_ai.choice"


def _matches(span: SpanView) -> bool:
    return span.scope == SCOPE or any(k in span.attributes for k in _MARKERS)


def _fill(span: SpanView) -> GenAI:
    # pydantic-ai gives a call the model sent without an id one of its own, ``pyd_ai_<hex>``.
    out: GenAI = {A.CALL_IDS_MADE_AS: "pyd_ai"}
    if A.TOOL_NAME in span.attributes or "tool_arguments" in span.attributes:
        put(out, A.OPERATION_NAME, A.OP_EXECUTE_TOOL)
        put(out, A.TOOL_CALL_ARGUMENTS, span.get("tool_arguments"))
        if isinstance(span.get("tool_response"), str):
            # (Empty text too: a tool that returned "" has that result, not none.)
            out[A.TOOL_CALL_RESULT] = span.get("tool_response")
    elif span.text("agent_name") and A.OPERATION_NAME not in span.attributes:
        put(out, A.OPERATION_NAME, A.OP_INVOKE_AGENT)
        put(out, A.AGENT_NAME, span.text("agent_name"))
    events = span.json("events")
    if isinstance(events, list):
        inputs = [e for e in events if isinstance(e, Mapping) and e.get("event.name") != _CHOICE]
        choices = [e for e in events if isinstance(e, Mapping) and e.get("event.name") == _CHOICE]
        put(out, A.INPUT_MESSAGES, [_event_message(e) for e in inputs])
        put(out, A.OUTPUT_MESSAGES, [_choice_message(e) for e in choices])
    if _wraps_errors(span):
        out[A.TOOL_ERRORS_SENT_AS] = "error_object"
    params = span.json("model_request_parameters")
    if isinstance(params, Mapping):
        # Each a list of tools, when it is one (a hostile trace's may be anything).
        kinds = (params.get("function_tools"), params.get("output_tools"))
        tools = [t for kind in kinds if isinstance(kind, list) for t in kind]
        put(out, A.TOOL_DEFINITIONS, [_tool(t) for t in tools if isinstance(t, Mapping)])
    return out


#: The first release that wraps errored tool results ({"error": ...}) for the model.
WRAPS_ERRORS_FROM = (2, 60)
#: Providers whose API has its own channel for a tool's error (sent unwrapped).
_ERROR_CHANNELS = frozenset(
    {"anthropic", "aws.bedrock", "bedrock", "gcp.gemini", "gcp.vertex_ai", "google"}
)


def _wraps_errors(span: SpanView) -> bool:
    if span.scope != SCOPE or span.get(A.OPERATION_NAME) != A.OP_CHAT:
        return False
    provider = span.text(A.PROVIDER_NAME) or span.text("gen_ai.system")
    return (
        provider is not None
        and provider not in _ERROR_CHANNELS
        and _version(span) >= WRAPS_ERRORS_FROM
    )


#: The first release that sends a None (or empty list) result as empty text, not ``null``.
EMPTY_AS_TEXT_FROM = (1, 69)
_EXPONENT = re.compile(r"e([+-])0*(\d)")


def _json(value: Any) -> str:
    """``value`` (JSON data) as pydantic-core writes it: compact, UTF-8 (not ASCII-escaped),
    floats with the shortest digits and an unpadded exponent (``1.5e-7``), inf and NaN null."""
    if value is None or value is True or value is False:
        return json.dumps(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return "null"
        return _EXPONENT.sub(r"e\1\2", repr(value))
    if isinstance(value, (int, str)):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = (f"{_json(str(k))}:{_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_json(v) for v in value) + "]"
    return _json(str(value))


def sent_text(result: Any, version: tuple[int, ...] = ()) -> str:
    """What pydantic-ai's ``model_response_str()`` sends for a tool's result, read back as
    JSON data (how its messages record it): text as it is, None and (from 1.69, or an
    unknown release) an empty list as empty text (``null`` and ``[]`` before), anything
    else as its JSON text."""
    if isinstance(result, str):
        return result
    if result is None or result == []:
        return "" if not version or version >= EMPTY_AS_TEXT_FROM else _json(result)
    return _json(result)


def _sends_text(span: SpanView) -> bool:
    """A chat span to a provider that is sent tool results as text (no error channel,
    no content blocks of its own)."""
    provider = span.text(A.PROVIDER_NAME) or span.text("gen_ai.system")
    return provider is not None and provider not in _ERROR_CHANNELS


def _sent_messages(messages: Any, version: tuple[int, ...]) -> list[Any] | None:
    """pydantic-ai's GenAI messages with each tool result (``result``, absent for None)
    as the text the provider was sent."""
    if not isinstance(messages, list) or not _holds_content(messages):
        return None  # content off: no part has its content, a result is absent for that
    out: list[Any] = []
    for message in messages:
        if isinstance(message, Mapping) and isinstance(message.get("parts"), list):
            parts = [
                {**p, "result": sent_text(p.get("result", p.get("response")), version)}
                if isinstance(p, Mapping) and p.get("type") == "tool_call_response"
                else p
                for p in message["parts"]
            ]
            message = {**message, "parts": parts}
        out.append(message)
    return out


def _holds_content(messages: list[Any]) -> bool:
    """Whether the messages were recorded with their content (with it off, pydantic-ai
    writes each part without its text, arguments or result)."""
    return any(
        isinstance(p, Mapping) and any(k in p for k in ("content", "arguments", "result"))
        for m in messages
        if isinstance(m, Mapping) and isinstance(m.get("parts"), list)
        for p in m["parts"]
    )


def _repair(span: SpanView) -> GenAI:
    if span.scope != SCOPE or span.get(A.OPERATION_NAME) != A.OP_CHAT or not _sends_text(span):
        return {}
    recorded = loads(span.get(A.INPUT_MESSAGES))
    messages = _sent_messages(recorded, _version(span))
    return {A.INPUT_MESSAGES: messages} if messages is not None and messages != recorded else {}


def _version(span: SpanView) -> tuple[int, ...]:
    parts = []
    for piece in span.scope_version.split(".")[:2]:
        if not piece.isdigit():
            return ()
        parts.append(int(piece))
    return tuple(parts)


def _event_message(event: Mapping[str, Any]) -> dict[str, Any]:
    """A ``gen_ai.<role>.message`` event (role from the body, else from the event name)."""
    name = str(event.get("event.name", ""))
    role = event.get("role") or name.removeprefix("gen_ai.").removesuffix(".message") or "user"
    message: dict[str, Any] = {"role": role, "content": event.get("content")}
    if event.get("tool_calls"):
        message["tool_calls"] = event["tool_calls"]
    if role == "tool":
        message["tool_call_id"] = event.get("id")
    return M.normalize_message(message)


def _choice_message(event: Mapping[str, Any]) -> dict[str, Any]:
    body = event.get("message")
    out = _event_message({"role": "assistant", **(body if isinstance(body, Mapping) else {})})
    if event.get("finish_reason"):
        out["finish_reason"] = event["finish_reason"]
    return out


def _tool(tool: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "name": tool.get("name")}
    if tool.get("description"):
        out["description"] = tool["description"]
    if "parameters_json_schema" in tool:
        out["parameters"] = tool["parameters_json_schema"]
    return out


DIALECT = Dialect("pydantic_ai", matches=_matches, fill=_fill, repair=_repair)
