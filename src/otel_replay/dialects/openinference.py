"""OpenInference (Arize): ``openinference.span.kind`` and flattened ``llm.*`` attributes.

Read as documented in the OpenInference semantic conventions:

- kind: ``LLM`` -> chat (text_completion with ``llm.prompts``), ``EMBEDDING`` ->
  embeddings, ``TOOL`` -> execute_tool, ``AGENT`` -> invoke_agent; ``CHAIN`` and
  the rest stay unnamed ("other" steps)
- ``llm.provider``/``llm.system``; ``llm.invocation_parameters`` (JSON: request
  model and parameters); ``llm.model_name`` (the response model, and the
  request model when nothing else names it; not taken as the response model on
  a span that has ``gen_ai.request.model``)
- ``llm.input_messages.<i>.message.{role, content, contents.<j>.message_content.*,
  tool_calls.<j>.tool_call.{id, function.name, function.arguments}, tool_call_id,
  name}`` and ``llm.output_messages...``; without them, the request and response
  bodies in ``input.value``/``output.value`` (JSON)
- ``llm.tools.<i>.tool.json_schema``; ``llm.token_count.*``; ``llm.finish_reason``
- TOOL spans: ``tool.name``, ``tool.description``, ``input.value`` (arguments),
  ``output.value`` (result), ``tool_call.id``/``tool.id``; ``__REDACTED__`` (content
  hidden by the instrumentation's settings) is no value: the step's content is missing
- ``session.id`` -> conversation id, ``agent.name``/``graph.node.name``
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from ..payload import codec as payload
from . import bodies
from . import langchain_serialized as LC
from .flat import path, unflatten
from .span import Dialect, GenAI, SpanView, loads, put

KIND = "openinference.span.kind"
_OPERATIONS = {
    "LLM": A.OP_CHAT,
    "EMBEDDING": "embeddings",
    "TOOL": A.OP_EXECUTE_TOOL,
    "AGENT": A.OP_INVOKE_AGENT,
}
_USAGE = {
    "llm.token_count.prompt": A.USAGE_INPUT_TOKENS,
    "llm.token_count.completion": A.USAGE_OUTPUT_TOKENS,
    "llm.token_count.prompt_details.cache_read": "gen_ai.usage.cache_read.input_tokens",
    "llm.token_count.prompt_details.cache_write": "gen_ai.usage.cache_creation.input_tokens",
}


def _matches(span: SpanView) -> bool:
    return KIND in span.attributes or span.scope.startswith("openinference.")


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    kind = str(span.get(KIND) or "").upper()
    op = _OPERATIONS.get(kind)
    if op == A.OP_CHAT and any(k.startswith("llm.prompts.") for k in span.attributes):
        op = "text_completion"
    put(out, A.OPERATION_NAME, op)
    put(out, A.CONVERSATION_ID, span.text("session.id"))
    if kind == "TOOL":
        _tool(span, out)
    elif kind == "AGENT":
        put(out, A.AGENT_NAME, span.text("agent.name") or span.text("graph.node.name") or span.name)
    elif kind in ("LLM", "EMBEDDING") or any(k.startswith("llm.") for k in span.attributes):
        _model(span, out)
    return out


def _tool(span: SpanView, out: GenAI) -> None:
    put(out, A.TOOL_NAME, span.text("tool.name") or span.name)
    put(out, A.TOOL_DESCRIPTION, span.text("tool.description"))
    put(out, A.TOOL_CALL_ARGUMENTS, _shown(span.get("input.value")))
    result = _shown(span.get("output.value"))
    # A LangChain tool span has no id attribute, but the ToolMessage it returned names the
    # call it ran for: parallel calls of one tool (whose input may be a bare argument
    # value, not their arguments) pair with their own calls by it, not by start order.
    call_id = span.text("tool_call.id") or span.text("tool.id")
    put(out, A.TOOL_CALL_ID, call_id or LC.tool_message_call_id(loads(result)))
    if result == "":
        out[A.TOOL_CALL_RESULT] = result  # a tool that returned empty text has that result
    put(out, A.TOOL_CALL_RESULT, result)
    mime = span.get("output.mime_type")
    if mime == "application/json" and (loads(result) is not None or _is_null(result)):
        # OpenInference JSON-encodes a tool's non-text return value and says so: the
        # value the tool returned is the object, not its text (None, too: "null").
        put(out, A.TYPE + A.TOOL_CALL_RESULT, payload.JSON)
    elif mime == "text/plain" and result is not None:
        put(out, A.TYPE + A.TOOL_CALL_RESULT, payload.STR)  # a text return, even JSON-like


def _is_null(value: Any) -> bool:
    """JSON text of null (which :func:`loads` cannot tell from no JSON)."""
    return isinstance(value, str) and value.strip() == "null"


#: What OpenInference writes in place of a value its hide-inputs/outputs settings keep out.
REDACTED = "__REDACTED__"


def _shown(value: Any) -> Any:
    """A recorded value, or None where it was hidden (a placeholder is not a value)."""
    return None if value == REDACTED else value


def _model(span: SpanView, out: GenAI) -> None:
    put(out, A.PROVIDER_NAME, _lower(span.text("llm.provider") or span.text("llm.system")))
    invocation = span.json("llm.invocation_parameters")
    if not isinstance(invocation, Mapping):
        invocation = {}
    model = span.text("llm.model_name")
    put(
        out,
        A.REQUEST_MODEL,
        span.text("llm.request.model_name") or invocation.get("model") or model,
    )
    # A span that names its request model in GenAI terms (a backend that added
    # ``llm.*`` on ingest, say) gets no response model guessed from ``llm.model_name``.
    guess = None if A.REQUEST_MODEL in span.attributes else model
    put(out, A.RESPONSE_MODEL, span.text("llm.response.model_name") or guess)
    for key, value in bodies.params(invocation).items():
        put(out, key, value)
    for key, name in _USAGE.items():
        put(out, name, span.get(key))
    reason = span.text("llm.finish_reason")
    put(out, A.RESPONSE_FINISH_REASONS, [reason] if reason else None)
    flat_in = flat_messages(span, "llm.input_messages")
    flat_out = flat_messages(span, "llm.output_messages")
    sent, answer = loads(span.get("input.value")), loads(span.get("output.value"))
    inputs = _results_as_sent(_fuller(flat_in, LC.prompt(sent) or _body_messages(sent, True)), sent)
    if invocation.get("_type") == LC.OPENAI_CHAT_TYPE:
        # LangChain's messages, recorded before ChatOpenAI formatted their content blocks.
        inputs = LC.openai_sent_messages(inputs, responses=LC.responses_answered(sent, answer))
    put(out, A.INPUT_MESSAGES, inputs)
    put(out, A.OUTPUT_MESSAGES, _fuller(flat_out, LC.generations(answer) or _body_messages(answer)))
    put(out, A.TOOL_DEFINITIONS, _tools(unflatten(span.attributes, "llm.tools")))
    # The bodies fill what the flattened attributes did not carry.
    if span.get("input.mime_type") in (None, "application/json"):
        request = bodies.request(loads(span.get("input.value")))
        if any(m["role"] == "system" for m in out.get(A.INPUT_MESSAGES, [])):
            request.pop(A.SYSTEM_INSTRUCTIONS, None)  # already a message: not twice
        for key, value in request.items():
            put(out, key, value)
    if span.get("output.mime_type") in (None, "application/json"):
        for key, value in bodies.response(loads(span.get("output.value"))).items():
            put(out, key, value)


def _fuller(flat: list[dict[str, Any]], body: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The flattened messages, or the same messages from the serialized body where the
    flattening lost something: a message's content blocks (OpenInference's LangChain.js
    instrumentation keeps text content only) or a tool call's id."""
    if not body:
        return flat
    if not flat:
        return body
    if [m["role"] for m in flat] != [m["role"] for m in body]:
        # The Responses API's output items are flattened one message each, where the body
        # reads as one answer: weighed as one answer too.
        merged = M.one_answer(flat)
        if [m["role"] for m in merged] != [m["role"] for m in body]:
            return flat
        return body if any(_lost(f, b) for f, b in zip(merged, body, strict=True)) else flat
    return body if any(_lost(f, b) for f, b in zip(flat, body, strict=True)) else flat


def _results_as_sent(flat: list[dict[str, Any]], items: Any) -> list[dict[str, Any]]:
    """The messages, each tool result as the Responses input items ``items`` carried it.

    The OpenAI Agents SDK's instrumentation records a Responses request's input items as
    ``input.value`` and flattens a result sent as content parts (``input_text``,
    ``input_image``...) into one JSON text, as it would a result that was that text: the
    items tell the two apart.  Paired in order, the call ids agreeing; else left as they are.
    """
    if not isinstance(items, list):
        return flat
    outputs = [
        i for i in items if isinstance(i, Mapping) and i.get("type") == "function_call_output"
    ]
    responses = [p for m in flat for p in m["parts"] if p["type"] == "tool_call_response"]
    if not outputs or len(outputs) != len(responses):
        return flat
    for part, item in zip(responses, outputs, strict=True):
        output = item.get("output")
        if part.get("id") == item.get("call_id") and isinstance(output, list):
            part["response"] = M.tool_response(output)
    return flat


def _body_messages(body: Any, request: bool = False) -> list[dict[str, Any]] | None:
    """The messages of a request (``request``) or response body in ``input.value`` /
    ``output.value``, to weigh against the flattened ones (see :func:`_fuller`).

    A request recorded as its list of chat messages (the Agents SDK's generation spans) is
    those messages."""
    if request and isinstance(body, list) and body and all(_chat_message(m) for m in body):
        return bodies.messages(body)
    genai = bodies.request(body) if request else bodies.response(body)
    found = genai.get(A.INPUT_MESSAGES if request else A.OUTPUT_MESSAGES)
    return found if isinstance(found, list) else None


def _chat_message(item: Any) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get("role"), str) and "type" not in item


def _lost(flat: dict[str, Any], body: dict[str, Any]) -> bool:
    if not flat["parts"] and body["parts"]:
        return True
    # An empty result ("" or []): OpenInference flattens it to no content at all, read as
    # empty text, where the body holds what was sent.
    if any(
        f["type"] == b["type"] == "tool_call_response"
        and f.get("response") in (None, "")
        and b.get("response") not in (None, f.get("response"))
        for f, b in zip(flat["parts"], body["parts"], strict=False)
    ):
        return True
    # Blocks of a tool's result the flattening has no attributes for (an MCP image block,
    # ``{"type": "image", "data", "mimeType"}``, beside a text): the body holds them all.
    if any(
        f["type"] == b["type"] == "tool_call_response"
        and isinstance(b.get("response"), list)
        and f.get("response") != b.get("response")
        for f, b in zip(flat["parts"], body["parts"], strict=False)
    ):
        return True
    calls = [p for p in body["parts"] if p["type"] == "tool_call"]
    ids = {p.get("id") for p in calls if p.get("id")}
    flat_calls = [p for p in flat["parts"] if p["type"] == "tool_call"]
    if ids and any(not p.get("id") for p in flat_calls):
        return True
    # An empty id the model sent (a server that gives calls none may send ""): the
    # flattening writes no attribute for it, the body keeps it (a client may tell "" apart
    # from a made-up id: the Agents SDK refuses two calls of one answer with the same id).
    if len(flat_calls) == len(calls) and any(
        f.get("id") is None and b.get("id") == "" for f, b in zip(flat_calls, calls, strict=True)
    ):
        return True
    # Arguments the flattening left out (the Responses API's "{}": OpenInference writes
    # no attribute for them) that the body holds.
    return len(flat_calls) == len(calls) and any(
        f.get("arguments") is None and b.get("arguments") is not None
        for f, b in zip(flat_calls, calls, strict=True)
    )


def flat_messages(span: SpanView, prefix: str) -> list[dict[str, Any]]:
    """The GenAI messages of the flattened ``<prefix>.<i>.message.*`` attributes."""
    return _messages(unflatten(span.attributes, prefix))


def _messages(items: list[Any]) -> list[dict[str, Any]]:
    return [
        _message(path(item, "message"))
        for item in items
        if isinstance(path(item, "message"), Mapping)
    ]


def _message(m: Mapping[str, Any]) -> dict[str, Any]:
    role = str(m.get("role") or "user")
    content = m.get("content")
    parts: list[dict[str, Any]] = []
    contents = M.listed(m.get("contents"))
    if role == "tool" or (m.get("tool_call_id") is not None and role != "assistant"):
        if content is None and not contents:
            # OpenInference writes a message's content only when it is not empty: a tool's
            # result recorded with none was empty text (LlamaIndex's ToolOutput of no
            # blocks; LangChain's empty text, or an empty list: the body tells).
            content = ""
        if content is None and contents:
            # A result sent as content parts (LangChain's and the OpenAI Agents SDK's list of
            # blocks, the request's ``content`` array): recorded as ``contents`` items, with
            # no ``content``.  The result is those parts, not a null beside tool texts.
            blocks = [_sent_block(path(item, "message_content")) for item in contents]
            content = [b for b in blocks if b is not None]
            contents = []
        parts.append(
            {"type": "tool_call_response", "id": m.get("tool_call_id"), "response": content}
        )
    elif isinstance(content, str) and not m.get("contents"):
        # With ``contents`` the items are the message; ``content`` repeats their text.
        parts.append({"type": "text", "content": content})
    # Content items keep their order; a ``tool_use`` item carries its call beside it.
    for item in contents:
        if path(item, "message_content", "type") == "tool_use" and isinstance(
            path(item, "tool_call"), Mapping
        ):
            parts.append(_tool_call(item["tool_call"]))
        else:
            part = _content_part(path(item, "message_content"))
            if part is not None:
                parts.append(part)
    # Ids as recorded: text, or anything else a hostile trace puts there (compared, not hashed).
    seen = [p.get("id") for p in parts if p["type"] == "tool_call" and p.get("id")]
    for call in M.listed(m.get("tool_calls")):
        tc = path(call, "tool_call")
        if isinstance(tc, Mapping) and (tc.get("id") is None or tc.get("id") not in seen):
            parts.append(_tool_call(tc))
    if m.get("function_call_name"):
        parts.append(
            {
                "type": "tool_call",
                "id": None,
                "name": m["function_call_name"],
                "arguments": M.parse_arguments(m.get("function_call_arguments_json")),
            }
        )
    out = M.normalize_message({"role": role, "parts": parts})
    if m.get("name"):
        out["name"] = m["name"]
    return out


def _tool_call(tc: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": tc.get("id"),
        "name": _name(path(tc, "function", "name")),
        "arguments": M.parse_arguments(path(tc, "function", "arguments")),
    }


#: A name written as its Python text, quotes and all (CrewAI's event listener: ``'lookup_order'``).
_QUOTED_NAME = re.compile(r"'([\w.:-]+)'")


def _name(name: Any) -> Any:
    """A tool name, unquoted where the instrumentation recorded its Python text.

    No model API allows quotes in a tool name, so a quoted one is the name in quotes."""
    found = _QUOTED_NAME.fullmatch(name) if isinstance(name, str) else None
    return found.group(1) if found else name


def _sent_block(c: Any) -> Any:
    """A ``contents`` item of a tool's result as the request carried it: a text block
    (``{"type": "text", "text": ...}``; its empty text is recorded as no text), a bare
    string (LangChain's, recorded as a text with no type), an image URL block."""
    if not isinstance(c, Mapping):
        return None
    kind = c.get("type")
    if kind is None and isinstance(c.get("text"), str):
        return c["text"]
    if kind == "text":
        return {"type": "text", "text": c.get("text", "")}
    url = path(c, "image", "image", "url") or path(c, "image", "url")
    if isinstance(url, str):
        return {"type": "image_url", "image_url": {"url": url}}
    return _content_part(c)


def _content_part(c: Any) -> dict[str, Any] | None:
    if not isinstance(c, Mapping):
        return None
    kind = c.get("type")
    if kind in ("text", None) and "text" in c:
        return {"type": "text", "content": c["text"]}
    if kind == "reasoning":
        return {"type": "reasoning", "content": c.get("text")}
    url = path(c, "image", "image", "url") or path(c, "image", "url")
    if isinstance(url, str):
        return {"type": "uri", "modality": "image", "uri": url}
    return {"type": str(kind or "unknown"), **{k: v for k, v in c.items() if k != "type"}}


def _tools(items: list[Any]) -> list[dict[str, Any]]:
    out = []
    for item in items:
        tool = path(item, "tool")
        if not isinstance(tool, Mapping):
            continue
        schema = loads(tool.get("json_schema"))
        if isinstance(schema, Mapping):
            out.append(M.tool_definition(schema))
        elif tool.get("name"):
            parameters = loads(tool.get("parameters"))
            out.append(
                {
                    "type": "function",
                    "name": tool["name"],
                    "description": tool.get("description"),
                    **({"parameters": parameters} if parameters is not None else {}),
                }
            )
    return out


def _lower(value: str | None) -> str | None:
    return value.lower() if value else None


DIALECT = Dialect("openinference", matches=_matches, fill=_fill)
