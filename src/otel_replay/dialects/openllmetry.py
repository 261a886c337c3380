"""OpenLLMetry (Traceloop): ``llm.request.type``, ``traceloop.*`` and the indexed content scheme.

Current OpenLLMetry writes GenAI semconv (read by the ``genai`` dialect); this
module reads what its semantic-conventions-ai package defined before that:

- ``llm.request.type`` (chat, completion, embedding) -> operation;
  ``traceloop.span.kind`` (tool, agent, workflow, task) with
  ``traceloop.entity.{name, input, output}`` for decorated functions
- ``gen_ai.prompt.<i>.{role, content, tool_call_id, tool_calls.<j>.{id, name,
  arguments}}`` and ``gen_ai.completion.<i>.{role, content, finish_reason,
  tool_calls.<j>.*, function_call.*}``; a content that is a JSON list of typed
  blocks is read as those blocks
- ``llm.request.functions.<i>.{name, description, parameters}``
- ``llm.top_k``, ``llm.frequency_penalty``, ``llm.presence_penalty``,
  ``llm.chat.stop_sequences``, ``llm.response.{finish,stop}_reason``

Repaired: its LangChain instrumentation (scope
``opentelemetry.instrumentation.langchain``) writes GenAI messages, but with
the OpenAI Responses API a function call the model made reaches
``gen_ai.output.messages`` (and the later ``gen_ai.input.messages`` that send
it back) as a text part holding the Responses item as JSON (``{"type":
"function_call", "call_id": ..., "name": ..., "arguments": ...}``), sometimes
beside the same call as a ``tool_call`` part.  Such a text part is read as the
item it holds (a ``tool_call``, or a ``tool_call_response`` for a
``function_call_output``), once per call id.  A tool's result that LangChain
sent as content blocks (a ``ToolMessage`` whose content is a list: the
provider's request carries the list) is recorded as ``json.dumps`` of the list;
it is read as the blocks (:func:`tool_content`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from . import langchain_serialized as LC
from .flat import unflatten
from .span import Dialect, GenAI, SpanView, loads, put

_REQUEST_TYPES = {"chat": A.OP_CHAT, "completion": "text_completion", "embedding": "embeddings"}
_SPAN_KINDS = {"tool": A.OP_EXECUTE_TOOL, "agent": A.OP_INVOKE_AGENT, "workflow": "invoke_workflow"}
_INDEXED = ("gen_ai.prompt.", "gen_ai.completion.", "llm.request.functions.")
_PARAMS = {
    "llm.top_k": "top_k",
    "llm.frequency_penalty": "frequency_penalty",
    "llm.presence_penalty": "presence_penalty",
    "llm.chat.stop_sequences": "stop_sequences",
}


LANGCHAIN_SCOPE = "opentelemetry.instrumentation.langchain"
#: Responses items the LangChain instrumentation writes as JSON text parts.
_ITEMS = ("function_call", "function_call_output")


def _matches(span: SpanView) -> bool:
    return (
        span.scope == LANGCHAIN_SCOPE
        or "llm.request.type" in span.attributes
        or "traceloop.span.kind" in span.attributes
        or any(k.startswith(_INDEXED) for k in span.attributes)
    )


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    put(out, A.OPERATION_NAME, _REQUEST_TYPES.get(str(span.get("llm.request.type"))))
    kind = span.text("traceloop.span.kind")
    if kind is not None:
        _entity(span, kind, out)
    for key, name in _PARAMS.items():
        put(out, A.REQUEST_PREFIX + name, span.get(key))
    prompts = [
        _message(p) for p in unflatten(span.attributes, "gen_ai.prompt") if isinstance(p, Mapping)
    ]
    completions = [
        _message(c, "assistant")
        for c in unflatten(span.attributes, "gen_ai.completion")
        if isinstance(c, Mapping)
    ]
    put(out, A.INPUT_MESSAGES, prompts)
    put(out, A.OUTPUT_MESSAGES, completions)
    reason = span.text("llm.response.finish_reason") or span.text("llm.response.stop_reason")
    reasons = (
        [reason] if reason else [m["finish_reason"] for m in completions if m.get("finish_reason")]
    )
    put(out, A.RESPONSE_FINISH_REASONS, reasons)
    functions = unflatten(span.attributes, "llm.request.functions")
    put(
        out,
        A.TOOL_DEFINITIONS,
        [_function(f) for f in functions if isinstance(f, Mapping) and f.get("name")],
    )
    return out


def _entity(span: SpanView, kind: str, out: GenAI) -> None:
    op = _SPAN_KINDS.get(kind)
    put(out, A.OPERATION_NAME, op)
    name = span.text("traceloop.entity.name")
    if op == A.OP_EXECUTE_TOOL:
        put(out, A.TOOL_NAME, name)
        entity_input = span.json("traceloop.entity.input")
        # The decorator records {"args": [...], "kwargs": {...}}; keyword calls are the common case.
        if isinstance(entity_input, Mapping) and not entity_input.get("args"):
            entity_input = entity_input.get("kwargs", entity_input)
        put(out, A.TOOL_CALL_ARGUMENTS, entity_input)
        put(out, A.TOOL_CALL_RESULT, span.get("traceloop.entity.output"))
    elif op == A.OP_INVOKE_AGENT:
        put(out, A.AGENT_NAME, name)


def _message(m: Mapping[str, Any], default_role: str = "user") -> dict[str, Any]:
    role = str(m.get("role") or default_role)
    content = m.get("content")
    if isinstance(content, str) and role != "tool":
        blocks = loads(content) if content.startswith("[") else None
        if (
            isinstance(blocks, list)
            and blocks
            and all(isinstance(b, Mapping) and "type" in b for b in blocks)
        ):
            content = blocks
    message: dict[str, Any] = {"role": role, "content": content}
    if m.get("tool_call_id") is not None:
        message["tool_call_id"] = m["tool_call_id"]
    calls = [c for c in M.listed(m.get("tool_calls")) if isinstance(c, Mapping)]
    fn = m.get("function_call")
    if isinstance(fn, Mapping) and fn.get("name"):
        calls.append({"id": None, "name": fn["name"], "arguments": fn.get("arguments")})
    if calls:
        message["tool_calls"] = [
            {
                "id": c.get("id"),
                "function": {"name": c.get("name"), "arguments": c.get("arguments")},
            }
            for c in calls
        ]
    out = M.normalize_message(message)
    if m.get("finish_reason"):
        out["finish_reason"] = m["finish_reason"]
    return out


def _function(f: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "function", "name": f["name"]}
    if f.get("description"):
        out["description"] = f["description"]
    parameters = loads(f.get("parameters"))
    if parameters is not None:
        out["parameters"] = parameters
    return out


def _repair(span: SpanView) -> GenAI:
    out: GenAI = {}
    if span.scope != LANGCHAIN_SCOPE:
        return out
    # LangChain's messages, recorded before ChatOpenAI formatted their content blocks.
    openai = span.get("traceloop.association.properties.ls_provider") == "openai"
    for key in (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES):
        messages = loads(span.get(key))
        if isinstance(messages, list):
            repaired = [_items_read(m) if isinstance(m, Mapping) else m for m in messages]
            if openai and key == A.INPUT_MESSAGES:
                responses = _responses_answered(loads(span.get(A.OUTPUT_MESSAGES)))
                repaired = LC.openai_sent_messages(repaired, responses=responses)
            if repaired != messages:
                out[key] = repaired
    return out


def _responses_answered(outputs: Any) -> bool:
    """Whether a ``ChatOpenAI`` call recorded with ``outputs`` called the Responses API: its
    answer has no finish reason (a Responses answer's metadata has none, and the instrumentation
    writes ``""``; a Chat Completions answer always has one)."""
    answers = [m for m in outputs if isinstance(m, Mapping)] if isinstance(outputs, list) else []
    return bool(answers) and all(m.get("finish_reason") == "" for m in answers)


def _items_read(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` with its text parts that hold a Responses item read as that item."""
    parts = [p for p in M.listed(message.get("parts")) if isinstance(p, Mapping)]
    fixed: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for part in parts:
        if part.get("type") == "tool_call_response" and "response" in part:
            part = {**part, "response": tool_content(part["response"])}
        item = _item(part)
        for new in [dict(part)] if item is None else M.from_items([item])[0]["parts"]:
            key = (str(new.get("type")), str(new.get("id")))
            if new.get("type") in ("tool_call", "tool_call_response") and new.get("id"):
                if key in seen:
                    continue  # the same call again
                seen.add(key)
            fixed.append(new)
    return {**message, "parts": fixed}


def tool_content(response: Any) -> Any:
    """A tool result as the LangChain instrumentation records it, read as what LangChain sent:
    a ``ToolMessage``'s text as it is; its content blocks (``[{"type": ...}, ...]``), which
    it writes as ``json.dumps`` text (ASCII, ``", "``), as those blocks.  (Text a tool
    returned that is that very JSON text reads the same: the record cannot tell them apart.)"""
    if not isinstance(response, str) or not response.startswith("[{"):
        return response
    blocks = loads(response)
    if (
        isinstance(blocks, list)
        and all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in blocks)
        and json.dumps(blocks) == response
    ):
        return blocks
    return response


def _item(part: Mapping[str, Any]) -> dict[str, Any] | None:
    """The Responses function-call item a text part holds as JSON, else None."""
    content = part.get("content")
    if part.get("type") != "text" or not isinstance(content, str) or not content.startswith("{"):
        return None
    item = loads(content)
    if isinstance(item, dict) and item.get("type") in _ITEMS and item.get("call_id"):
        return item
    return None


DIALECT = Dialect("openllmetry", matches=_matches, fill=_fill, repair=_repair)


def returned_message(value: Any) -> dict[str, Any] | None:
    """The model's message a LangChain task span of this instrumentation returned, in the
    GenAI shape: its ``traceloop.entity.output`` is ``{"outputs": message}`` (a runnable
    that ends in the model) or ``{"outputs": {"messages": [..., message]}}`` (a graph node
    that returns it).  None for any other value."""
    body = loads(value)
    outputs = body.get("outputs") if isinstance(body, Mapping) else None
    if isinstance(outputs, Mapping) and not LC.is_message(outputs):
        messages = outputs.get("messages")
        outputs = messages[-1] if isinstance(messages, list) and messages else None
    if not isinstance(outputs, Mapping) or not LC.is_message(outputs):
        return None
    read = LC.message(outputs)
    return read if read.get("role") == "assistant" else None
