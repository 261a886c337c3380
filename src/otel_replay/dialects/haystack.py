"""Haystack under OpenInference (``openinference.instrumentation.haystack``): messages as reprs.

The instrumentation records a chat generator's ``run`` as an ``LLM`` span
whose flattened ``llm.input_messages`` / ``llm.output_messages`` keep only
roles and text: an assistant turn's tool calls, a tool message's result and
call id are left out.  The whole messages are in ``input.value`` (the run's
inputs: ``{"messages": [...], "tools": [...]}``) and ``output.value``
(``{"replies": [...]}``), each message the Python ``repr`` of Haystack's
``ChatMessage`` (``ChatMessage(_role=<ChatRole.TOOL: 'tool'>,
_content=[ToolCallResult(result=..., origin=ToolCall(...), error=True)])``).
They are read with :mod:`otel_replay.python_repr` (data only, nothing
evaluated) into GenAI messages and tool definitions, which win over the
flattened ones.

The Responses generator (``OpenAIResponsesChatGenerator``, Haystack 2 and 3)
sends an assistant message of its input as its reasoning items, then its
tool calls, then its texts joined with spaces as one message: its input
messages are rebuilt in that order (what the model was sent), its replies
as the API answered them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .. import python_repr
from .span import Dialect, GenAI, SpanView, loads, put

SCOPE = "openinference.instrumentation.haystack"
_CLASS = "__class__"
#: The span name of the Responses API chat generator's ``run``.
_RESPONSES_GENERATOR = "OpenAIResponsesChatGenerator."


def _matches(span: SpanView) -> bool:
    return span.scope == SCOPE and span.get("openinference.span.kind") == "LLM"


def _fill(span: SpanView) -> GenAI:
    # Haystack sends a tool's str result as it is (Haystack 3: any other value as its
    # json.dumps; Haystack 2: str(value)): the text the model was sent is what a tool
    # returning that text gives.
    out: GenAI = {A.TOOL_RESULTS_SENT_AS: "str_as_is"}
    inputs = loads(span.get("input.value"))
    if isinstance(inputs, Mapping):
        messages = _messages(inputs.get("messages"))
        if messages is not None and span.name.startswith(_RESPONSES_GENERATOR):
            messages = [as_responses_input(m) for m in messages]
        put(out, A.INPUT_MESSAGES, messages)
        put(out, A.TOOL_DEFINITIONS, _tools(inputs.get("tools")))
    outputs = loads(span.get("output.value"))
    if isinstance(outputs, Mapping):
        put(out, A.OUTPUT_MESSAGES, _messages(outputs.get("replies")))
    return out


def as_responses_input(message: dict[str, Any]) -> dict[str, Any]:
    """An assistant message as Haystack's Responses generator sends it: its reasoning, its
    tool calls, then its texts joined with spaces (one text); other messages as they are."""
    if message.get("role") != "assistant":
        return message
    parts = message["parts"]
    texts = [p for p in parts if p.get("type") == "text"]
    order = {"reasoning": 0, "tool_call": 1}
    rest = sorted(
        (p for p in parts if p.get("type") != "text"), key=lambda p: order.get(p.get("type"), 2)
    )
    joined = [{"type": "text", "content": " ".join(str(p.get("content") or "") for p in texts)}]
    return {**message, "parts": rest + (joined if texts else [])}


def _objects(items: Any) -> list[dict[str, Any]] | None:
    """Each repr of ``items`` as a dict; None when any is not one (then nothing is taken)."""
    if not isinstance(items, list) or not items:
        return None
    out = []
    for item in items:
        try:
            value = python_repr.loads(item, class_key=_CLASS) if isinstance(item, str) else None
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        out.append(value)
    return out


def _messages(items: Any) -> list[dict[str, Any]] | None:
    objects = _objects(items)
    if objects is None or any(o.get(_CLASS) != "ChatMessage" for o in objects):
        return None
    return [_message(o) for o in objects]


def _message(chat: Mapping[str, Any]) -> dict[str, Any]:
    parts = [_part(c) for c in M.listed(chat.get("_content")) if isinstance(c, Mapping)]
    message: dict[str, Any] = {"role": str(chat.get("_role")), "parts": parts}
    meta = chat.get("_meta")
    if isinstance(meta, Mapping) and isinstance(meta.get("finish_reason"), str):
        message["finish_reason"] = meta["finish_reason"]
    if isinstance(chat.get("_name"), str):
        message["name"] = chat["_name"]
    return message


def _part(content: Mapping[str, Any]) -> dict[str, Any]:
    kind = content.get(_CLASS)
    if kind == "TextContent":
        return {"type": "text", "content": content.get("text")}
    if kind == "ToolCall":
        return _call(content)
    if kind == "ToolCallResult":
        origin = content.get("origin")
        return {
            "type": "tool_call_response",
            "id": _call_id(origin) if isinstance(origin, Mapping) else None,
            "response": M.tool_response(content.get("result")),
        }
    if kind == "ReasoningContent":
        return {"type": "reasoning", "content": content.get("reasoning_text")}
    # Images, files...: kept as recorded, under their Haystack class name.
    return {"type": str(kind), **{k: v for k, v in content.items() if k != _CLASS}}


def _call_id(call: Mapping[str, Any]) -> Any:
    """The model's call id: on the Responses API ``extra["call_id"]`` (``id`` is the item's)."""
    extra = call.get("extra")
    if isinstance(extra, Mapping) and isinstance(extra.get("call_id"), str):
        return extra["call_id"]
    return call.get("id")


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": _call_id(call),
        "name": call.get("tool_name"),
        "arguments": M.parse_arguments(call.get("arguments")),
    }


def _tools(items: Any) -> list[dict[str, Any]] | None:
    objects = _objects(items)
    if objects is None:
        return None
    return [
        {
            "type": "function",
            "name": o.get("name"),
            "description": o.get("description"),
            "parameters": o.get("parameters"),
        }
        for o in objects
        if isinstance(o.get("name"), str)
    ]


DIALECT = Dialect(
    "haystack",
    matches=_matches,
    fill=_fill,
    reads_values=True,
    could_match=lambda scope, names: scope == SCOPE and "openinference.span.kind" in names,
)
