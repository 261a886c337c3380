"""Strands Agents' built-in tracing (scope ``strands.telemetry.tracer``): tool I/O in span events.

With the default (legacy) conventions an ``execute_tool`` span keeps the
call's input and output in span events only: ``gen_ai.tool.message``
(``content``: the arguments as JSON text) and ``gen_ai.choice``
(``message``: the result as JSON text of Amazon Bedrock Converse content
blocks, ``[{"text": ...}]``).  They become ``gen_ai.tool.call.arguments``
and ``gen_ai.tool.call.result``; the current conventions write those
attributes themselves.

A tool's result is recorded as Strands holds it, content blocks (``text``,
``json``, ``image``, ``document``), in the tool span and in the next model
call's messages (per-message events, or ``gen_ai.input.messages``).  The
model was sent what Strands' model providers make of those blocks
(:func:`sent_result`): its OpenAI-compatible providers (Chat Completions,
Responses, LiteLLM) send one text, and so do its Anthropic provider and
Bedrock for a result of one text block, the result of almost every tool.
Model messages in events are otherwise read by the loader's GenAI event
reader (:mod:`otel_replay.runs.log_events`); a chat span's are read here, so
that its tool results are rendered from the blocks as recorded (key order
and all) before any other reading.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, in_scope, loads, put

SCOPE = "strands.telemetry.tracer"
#: The event of the current conventions that holds a call's messages.
_DETAILS = "gen_ai.client.inference.operation.details"
#: The per-message events of the legacy conventions -> their message's role.
_MESSAGE_EVENTS = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}
#: The blocks of a tool result Strands sends as text.
_TEXT_BLOCKS = frozenset({"text", "json"})


def sent_result(blocks: Any) -> Any:
    """A Strands tool result's content blocks as its model providers send them.

    Strands' ``OpenAIModel.format_request_tool_message`` (and its Responses
    provider's): a ``json`` block is ``json.dumps(value, ensure_ascii=False)``,
    adjacent texts are joined with a newline, and a result of text only is
    that one string (``""`` for no blocks).  A result with an image or a
    document is sent as parts (Chat Completions moves the image to a user
    message): those blocks are returned as recorded, their bytes are not in
    the trace (Strands records them as ``"<replaced>"``).  Anything that is
    not a list of blocks is returned as it is.
    """
    if not isinstance(blocks, list) or not all(_block(b) for b in blocks):
        return blocks
    if not all(set(b) <= _TEXT_BLOCKS for b in blocks):
        return blocks
    return "\n".join(
        b["text"] if "text" in b else json.dumps(b["json"], ensure_ascii=False) for b in blocks
    )


def _block(value: Any) -> bool:
    """A content block of a Strands tool result: one key, its kind, with a text where a
    text is due."""
    if not isinstance(value, dict) or len(value) != 1:
        return False
    return "text" not in value or isinstance(value["text"], str)


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    operation = span.get(A.OPERATION_NAME)
    if operation == A.OP_CHAT:
        put(out, A.INPUT_MESSAGES, _event_inputs(span))
        return out
    if operation == A.OP_INVOKE_AGENT:
        put(out, A.OUTPUT_MESSAGES, _agent_output(span))
        return out
    if operation != A.OP_EXECUTE_TOOL:
        return out
    for event in span.events:
        attributes = event.get("attributes") or {}
        if event.get("name") == "gen_ai.tool.message":
            arguments = M.parse_arguments(attributes.get("content"))
            if arguments is not None:  # {} too: the arguments of a tool that takes none
                out.setdefault(A.TOOL_CALL_ARGUMENTS, arguments)
        elif event.get("name") == "gen_ai.choice":
            result = sent_result(M.parse_arguments(attributes.get("message")))
            if result is not None:  # "" too: a tool that returned empty text
                out.setdefault(A.TOOL_CALL_RESULT, result)
    return out


def _agent_output(span: SpanView) -> list[dict[str, Any]] | None:
    """The agent's answer as its span's ``gen_ai.choice`` event holds it (the legacy
    conventions): the text of its ``AgentResult``, which is not the model's text where
    that came in several text blocks (each block's text ends with a newline there)."""
    for event in span.events:
        attributes = event.get("attributes")
        if event.get("name") != "gen_ai.choice" or not isinstance(attributes, Mapping):
            continue
        text = attributes.get("message")
        if not isinstance(text, str):
            return None
        message: dict[str, Any] = {
            "role": "assistant",
            "parts": [{"type": "text", "content": text}],
        }
        reason = attributes.get("finish_reason")
        if isinstance(reason, str):
            message["finish_reason"] = reason
        return [message]
    return None


def _event_inputs(span: SpanView) -> list[dict[str, Any]] | None:
    """A chat span's input messages from its events, tool results as they were sent."""
    legacy: list[dict[str, Any]] = []
    for event in span.events:
        attributes = event.get("attributes")
        if not isinstance(attributes, Mapping):
            continue
        name = event.get("name")
        if name == _DETAILS:
            messages = _sent_messages(loads(attributes.get(A.INPUT_MESSAGES)))
            if messages is not None:
                return messages
        elif name in _MESSAGE_EVENTS:
            content = M.parse_arguments(attributes.get("content"))
            if isinstance(content, list):
                content = [_sent_block(b) for b in content]
            legacy.append({"role": _MESSAGE_EVENTS[str(name)], "content": content})
    return legacy or None


def _sent_block(block: Any) -> Any:
    """A message's content block, a ``toolResult`` one as the result part that was sent."""
    if isinstance(block, Mapping) and set(block) == {"toolResult"}:
        result = block["toolResult"]
        if isinstance(result, Mapping):
            return {
                "type": "tool_call_response",
                "id": result.get("toolUseId"),
                "response": sent_result(result.get("content")),
            }
    return block


def _sent_messages(messages: Any) -> list[dict[str, Any]] | None:
    """GenAI messages (the current conventions) with their tool results as sent."""
    if not isinstance(messages, list):
        return None
    out = []
    for message in messages:
        if isinstance(message, Mapping) and isinstance(message.get("parts"), list):
            parts = [_sent_part(p) for p in message["parts"]]
            message = {**message, "parts": parts}
        out.append(message)
    return out


def _sent_part(part: Any) -> Any:
    if isinstance(part, Mapping) and part.get("type") == "tool_call_response":
        return {**part, "response": sent_result(part.get("response"))}
    return part


def _repair(span: SpanView) -> GenAI:
    out: GenAI = {}
    operation = span.get(A.OPERATION_NAME)
    if operation == A.OP_EXECUTE_TOOL:
        recorded = span.get(A.TOOL_CALL_RESULT)
        result = sent_result(M.parse_arguments(recorded))
        if isinstance(recorded, str) and result != M.parse_arguments(recorded):
            out[A.TOOL_CALL_RESULT] = result
    elif operation == A.OP_CHAT and A.INPUT_MESSAGES in span.attributes:
        # Content as span attributes (``gen_ai_span_attributes_only``): the same messages.
        recorded = loads(span.get(A.INPUT_MESSAGES))
        messages = _sent_messages(recorded)
        if messages is not None and messages != recorded:
            out[A.INPUT_MESSAGES] = messages
    return out


DIALECT = Dialect("strands", matches=in_scope(SCOPE), fill=_fill, repair=_repair)
