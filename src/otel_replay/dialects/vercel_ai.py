"""The Vercel AI SDK's telemetry (``@ai-sdk/otel``; ``experimental_telemetry`` before it).

Its ``LegacyOpenTelemetry`` integration (and every release before the
GenAI one) writes ``ai.*`` attributes, named by ``ai.operationId``:

- ``ai.generateText.doGenerate`` / ``ai.streamText.doStream``: one model
  call.  ``ai.prompt.messages`` is the SDK's prompt (JSON text of messages
  whose content parts are ``text``, ``reasoning``, ``tool-call``
  (``toolCallId``, ``toolName``, ``input``) and ``tool-result``
  (``output``: ``{type, value}``)); ``ai.prompt.tools`` the tools (JSON text
  each); ``ai.response.text``, ``ai.response.toolCalls`` and
  ``ai.response.finishReason`` the answer; ``ai.model.provider`` names the
  provider and its API (``openai.chat``, ``openai.responses``).
- ``ai.toolCall``: one tool run, ``ai.toolCall.name`` / ``.id`` /
  ``.args`` / ``.result`` (``.input`` / ``.output`` in some releases).
- ``ai.generateText`` / ``ai.streamText``: the whole call, an agent run.

A tool's error reaches the model as the provider sends it: OpenAI's
providers send ``{"error": <the error text>}``.  The legacy prompt says
which results are errors (``error-text``, ``error-json``); the GenAI
integration records only the text, so its chat spans are marked
(:data:`~otel_replay.attributes.TOOL_ERRORS_SENT_AS`) and the run builder
wraps the results of the calls whose tool span failed
(:mod:`otel_replay.runs.sent_errors`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, loads, put

OPERATION = "ai.operationId"
#: The GenAI integration's default tracer name.
GENAI_SCOPE = "gen_ai"
_MODEL_CALLS = ("ai.generateText.doGenerate", "ai.streamText.doStream")
_RUNS = ("ai.generateText", "ai.streamText")


def _matches(span: SpanView) -> bool:
    return isinstance(span.get(OPERATION), str) or (
        span.scope == GENAI_SCOPE and span.get(A.OPERATION_NAME) == A.OP_CHAT
    )


def _fill(span: SpanView) -> GenAI:
    operation = span.get(OPERATION)
    if operation is None:  # the GenAI integration: how its provider sends a tool's error
        out: GenAI = {}
        if _wraps_errors(span.text(A.PROVIDER_NAME)):
            out[A.TOOL_ERRORS_SENT_AS] = "error_object"
        return out
    if operation in _MODEL_CALLS:
        return _model_call(span)
    if operation == "ai.toolCall":
        return _tool_call(span)
    if operation in _RUNS:
        return {A.OPERATION_NAME: A.OP_INVOKE_AGENT}
    return {}


def _wraps_errors(provider: str | None) -> bool:
    return provider is not None and provider.split(".")[0] == "openai"


def _model_call(span: SpanView) -> GenAI:
    provider = span.text("ai.model.provider")
    out: GenAI = {A.OPERATION_NAME: A.OP_CHAT}
    put(out, A.PROVIDER_NAME, provider.split(".")[0] if provider else None)
    put(out, A.REQUEST_MODEL, span.text("ai.model.id"))
    prompt = span.json("ai.prompt.messages")
    if isinstance(prompt, list):
        wrap = _wraps_errors(provider)
        put(out, A.INPUT_MESSAGES, [_message(m, wrap) for m in prompt if isinstance(m, Mapping)])
    tools = span.get("ai.prompt.tools")
    if isinstance(tools, (list, tuple)):
        defs = [loads(t) for t in tools]
        put(out, A.TOOL_DEFINITIONS, [M.tool_definition(d) for d in defs if isinstance(d, Mapping)])
    answer = _answer(span)
    if answer is not None:
        out[A.OUTPUT_MESSAGES] = [answer]
    return out


def _answer(span: SpanView) -> dict[str, Any] | None:
    text, calls = span.get("ai.response.text"), span.json("ai.response.toolCalls")
    if text is None and calls is None:
        return None  # outputs not recorded
    parts: list[dict[str, Any]] = []
    if isinstance(text, str) and text:
        parts.append({"type": "text", "content": text})
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, Mapping):
            parts.append(_call(call))
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    reason = span.text("ai.response.finishReason")
    if reason:
        message["finish_reason"] = reason
    return message


def _call(part: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": part.get("toolCallId"),
        "name": part.get("toolName"),
        "arguments": M.parse_arguments(part.get("input", part.get("args"))),
    }


def _message(message: Mapping[str, Any], wrap_errors: bool) -> dict[str, Any]:
    role = str(message.get("role", "user"))
    content = message.get("content")
    if isinstance(content, str):
        return M.normalize_message({"role": role, "content": content})
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "tool-call":
            parts.append(_call(part))
        elif kind == "tool-result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": part.get("toolCallId"),
                    "response": _output(part.get("output", part.get("result")), wrap_errors),
                }
            )
        elif kind in ("text", "reasoning") and isinstance(part.get("text"), str):
            parts.append({"type": kind, "content": part["text"]})
        else:
            parts.append(M.normalize_part(dict(part)))
    return {"role": role, "parts": parts}


def _output(output: Any, wrap_errors: bool) -> Any:
    """A tool result's ``{type, value}`` as the model was sent it."""
    if not isinstance(output, Mapping) or "type" not in output:
        return M.tool_response(output)
    value = output.get("value")
    if output["type"] in ("error-text", "error-json"):
        return {"error": value} if wrap_errors else value
    return M.tool_response(value)


def _tool_call(span: SpanView) -> GenAI:
    out: GenAI = {A.OPERATION_NAME: A.OP_EXECUTE_TOOL}
    put(out, A.TOOL_NAME, span.text("ai.toolCall.name"))
    put(out, A.TOOL_CALL_ID, span.text("ai.toolCall.id"))
    args = _first(span, "ai.toolCall.args", "ai.toolCall.input")
    put(out, A.TOOL_CALL_ARGUMENTS, M.parse_arguments(args))
    result = _first(span, "ai.toolCall.result", "ai.toolCall.output")
    if result is not None:
        out[A.TOOL_CALL_RESULT] = M.parse_arguments(result)
    return out


def _first(span: SpanView, *keys: str) -> Any:
    return next((span.get(k) for k in keys if k in span.attributes), None)


DIALECT = Dialect("vercel_ai", matches=_matches, fill=_fill, reads_values=True)
