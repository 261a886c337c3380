"""GenAI semconv messages: normalize the shapes found in the wild into one.

The one shape (``gen_ai.input.messages`` / ``gen_ai.output.messages``)::

    {"role": "user"|"assistant"|"system"|"tool", "parts": [...],
     "name"?: str, "finish_reason"?: str}

with parts ``{"type": "text", "content"}``, ``{"type": "tool_call", "id",
"name", "arguments"}`` (arguments parsed into JSON values),
``{"type": "tool_call_response", "id", "response"}`` (older ``result`` accepted),
``reasoning``, ``blob``, ``uri``, ``file``... kept as they come, and
``{"type": "item_reference", "id"}``: a Responses API input item that named an
item the server stored (an earlier answer's message) in place of its content.

Provider shapes are accepted too, so capture helpers take what the user's code
already has and third-party traces read the same: OpenAI chat messages
(``content``, ``tool_calls``, ``tool_call_id``), Anthropic content blocks
(``text``, ``tool_use``, ``tool_result``, ``thinking``), OpenAI Responses
items (``message``, ``function_call``, ``function_call_output``) and Amazon
Bedrock Converse blocks (``{"text"}``, ``{"toolUse"}``, ``{"toolResult"}``).  A user
message that only answers tool calls (Anthropic's ``tool_result`` blocks,
pydantic-ai before instrumentation version 6) gets the role ``tool``, and a
tool response made of text blocks only is their text: so a tool result reads
the same whichever provider carried it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from . import json_text

Message = dict[str, Any]

#: The type of a Responses API input item (and of the part it is read as) that stands for
#: an item the server stored, by its id: ``{"type": "item_reference", "id": "msg_..."}``.
ITEM_REFERENCE = "item_reference"


def parse_arguments(arguments: Any) -> Any:
    """Tool-call arguments as JSON values: a JSON string is parsed, others kept."""
    if isinstance(arguments, str):
        try:
            return json_text.loads(arguments)
        except ValueError:
            return arguments
    return arguments


#: Text part types of the providers: OpenAI chat and Responses, Anthropic.
_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})


def tool_response(value: Any) -> Any:
    """A tool result as carried in a message: a list of text blocks is their text."""
    if isinstance(value, list) and value and all(_is_text_block(b) for b in value):
        return "".join(str(b.get("text", b.get("content", ""))) for b in value)
    return value


def _is_text_block(block: Any) -> bool:
    return isinstance(block, Mapping) and block.get("type") in _TEXT_TYPES


def normalize_part(part: Any) -> dict[str, Any]:
    if type(part) is dict:  # (a Mapping, told without the ABC check)
        kind = part.get("type")
        if kind == "text" and "content" in part:
            return dict(part)  # already a GenAI text part: the common case, kept cheap
        p = part  # only read below (copied where it is kept as it came)
    elif isinstance(part, str):
        return {"type": "text", "content": part}
    elif not isinstance(part, Mapping):
        return {"type": "text", "content": str(part)}
    else:
        p = dict(part)
        kind = p.get("type")
    if not isinstance(kind, str):
        kind = None
    if kind in ("tool_call", "tool_use", "function_call") or (
        kind == "function" and isinstance(p.get("function"), Mapping)
    ):
        fn = p.get("function")
        if fn is None or not isinstance(fn, Mapping):  # (None first: the common case)
            fn = p
        call_id = p.get("call_id") if kind == "function_call" else p.get("id")
        out: dict[str, Any] = {"type": "tool_call", "id": call_id, "name": fn.get("name")}
        if "arguments" in fn or "input" in fn:
            out["arguments"] = parse_arguments(fn.get("arguments", fn.get("input")))
        return out
    if kind == "tool_call_response":
        response = p["response"] if "response" in p else p.get("result")
        return {
            "type": "tool_call_response",
            "id": p.get("id"),
            "response": tool_response(response),
        }
    if kind == "tool_result":  # Anthropic
        return {
            "type": "tool_call_response",
            "id": p.get("tool_use_id"),
            "response": tool_response(p.get("content")),
        }
    if kind == "function_call_output":  # OpenAI Responses
        return {
            "type": "tool_call_response",
            "id": p.get("call_id"),
            "response": tool_response(p.get("output")),
        }
    if kind == "thinking" and "thinking" in p:  # Anthropic
        return {"type": "reasoning", "content": p["thinking"]}
    if kind is None:
        gemini = _gemini_part(p)
        if gemini is not None:
            return gemini
    if kind is None and len(p) == 1:
        converse = _converse_block(p)
        if converse is not None:
            return converse
    if (kind is None or kind in _TEXT_TYPES) and "content" not in p and "text" in p:
        return {"type": "text", "content": p["text"]}
    return dict(p) if p is part else p


def _gemini_part(part: Mapping[str, Any]) -> dict[str, Any] | None:
    """A part of a google-genai ``Content`` (Google ADK records them so, unset fields as
    None): ``{"text": ...}`` (``thought`` set: reasoning), ``{"function_call": ...}``,
    ``{"function_response": ...}``, in snake or camel case."""
    p = {k: v for k, v in part.items() if v is not None}
    call = p.get("function_call", p.get("functionCall"))
    if isinstance(call, Mapping):
        return {
            "type": "tool_call",
            "id": call.get("id"),
            "name": call.get("name"),
            "arguments": parse_arguments(call.get("args")),
        }
    response = p.get("function_response", p.get("functionResponse"))
    if isinstance(response, Mapping):
        return {
            "type": "tool_call_response",
            "id": response.get("id"),
            "response": tool_response(response.get("response")),
        }
    if isinstance(p.get("text"), str) and len(part) > 1:
        kind = "reasoning" if p.get("thought") is True else "text"
        return {"type": kind, "content": p["text"]}
    return None


def _converse_block(block: Mapping[str, Any]) -> dict[str, Any] | None:
    """A content block of Amazon Bedrock's Converse shape (Strands Agents records its
    messages so): ``{"toolUse": ...}``, ``{"toolResult": ...}``, ``{"reasoningContent": ...}``."""
    ((key, value),) = block.items()
    if not isinstance(value, Mapping):
        return None
    if key == "toolUse":
        return {
            "type": "tool_call",
            "id": value.get("toolUseId"),
            "name": value.get("name"),
            "arguments": parse_arguments(value.get("input")),
        }
    if key == "toolResult":
        content = value.get("content")
        if isinstance(content, list) and len(content) == 1 and isinstance(content[0], Mapping):
            only = content[0]
            content = only["json"] if set(only) == {"json"} else content
        return {
            "type": "tool_call_response",
            "id": value.get("toolUseId"),
            "response": tool_response(content),
        }
    if key == "reasoningContent":
        text = value.get("reasoningText")
        return {
            "type": "reasoning",
            "content": text.get("text") if isinstance(text, Mapping) else text,
        }
    return None


#: What a message's ``get`` gives for a key it lacks (a key may hold None).
_MISSING: Any = object()


def normalize_message(message: Mapping[str, Any]) -> Message:
    """One message in the GenAI shape (see module docstring)."""
    role = message.get("role", _MISSING)
    if role is _MISSING:
        kind = message.get("type")
        if kind in ("function_call", "function_call_output"):
            # A Responses API item that is a message of its own.
            role = "assistant" if kind == "function_call" else "tool"
            return {"role": role, "parts": [normalize_part(message)]}
        if kind == ITEM_REFERENCE:
            # A Responses API input item that names an item the server stored (an earlier
            # answer's message, which clients send back so) in place of its content.
            reference = {"type": ITEM_REFERENCE, "id": message.get("id")}
            return {"role": "assistant", "parts": [reference]}
        role = "user"
    elif type(role) is not str:
        role = str(role)
    if role == "model":  # Gemini's name for the assistant
        role = "assistant"
    given = message.get("parts", _MISSING)
    if given is not _MISSING:
        parts = [normalize_part(p) for p in given] if isinstance(given, list) else []
        call_id = message.get("tool_call_id")
        if role == "tool" and call_id is not None and not _responses(parts):
            # The result as text parts, its call id beside them (LiteLLM's converter).
            parts = [{"type": "tool_call_response", "id": call_id, "response": _text(parts)}]
    else:
        parts = []
        content = message.get("content")
        if isinstance(content, Mapping) and isinstance(content.get("type"), str):
            content = [content]  # one part object, not a list of them (OpenLLMetry, streaming)
        blocks = [normalize_part(p) for p in content] if isinstance(content, list) else []
        if role == "tool" and blocks and _responses(blocks):
            parts.extend(blocks)  # results as blocks that carry their own ids (Converse)
        elif role == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "response": tool_response(content),
                }
            )
        elif isinstance(content, str):
            parts.append({"type": "text", "content": content})
        elif isinstance(content, list):
            parts.extend(blocks)
        for call in listed(message.get("tool_calls")):
            if not isinstance(call, Mapping):
                continue  # no call: a hostile trace's number or text
            fn = call.get("function", call)
            if not isinstance(fn, Mapping):
                fn = {}
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": fn.get("name"),
                    "arguments": parse_arguments(fn.get("arguments")),
                }
            )
    if (
        role == "user"
        and parts
        and parts[0].get("type") == "tool_call_response"  # (most user messages: text)
        and all(p.get("type") == "tool_call_response" for p in parts)
    ):
        role = "tool"
    out: Message = {"role": role, "parts": parts}
    name, reason = message.get("name"), message.get("finish_reason")
    if name is not None:
        out["name"] = name
    if reason is not None:
        out["finish_reason"] = reason
    return out


def listed(value: Any) -> list[Any]:
    """``value`` when it is a list; else no items (a recorded field may be anything)."""
    return value if isinstance(value, list) else []


def _responses(parts: list[dict[str, Any]]) -> bool:
    return any(p.get("type") == "tool_call_response" for p in parts)


def _text(parts: list[dict[str, Any]]) -> Any:
    """Text parts as the one string they spell; other parts as they are."""
    if all(p.get("type") == "text" for p in parts):
        return "".join(str(p.get("content", "")) for p in parts)
    return parts


def one_answer(messages: list[Message]) -> list[Message]:
    """An output's consecutive assistant messages that are one answer, as one message.

    The Responses API answers with a list of items, and instrumentations
    record one assistant message per item (a text, each parallel function
    call): they are parts of one answer.  Messages that each end with their
    own ``finish_reason`` are separate choices (``n`` > 1) and stay apart.
    A streamed answer recorded as each partial response and then the whole
    (Google ADK: only the whole has a ``finish_reason``) is the whole, when
    the partials spell exactly its text and calls.
    """
    if len(messages) < 2:
        return list(messages)  # (one message is one answer: every model call's, most often)
    messages = _without_partials(messages)
    out: list[Message] = []
    for message in messages:
        last = out[-1] if out else None
        if (
            last is not None
            and last.get("role") == message.get("role") == "assistant"
            and "finish_reason" not in last
        ):
            merged = {**last, **message, "parts": [*last["parts"], *message["parts"]]}
            out[-1] = merged
        else:
            out.append(message)
    return out


def _without_partials(messages: list[Message]) -> list[Message]:
    """``[partial, ..., whole]`` as ``[whole]`` when the partials spell exactly the whole."""
    if len(messages) < 2 or any(m.get("role") != "assistant" for m in messages):
        return messages
    *partials, whole = messages
    if not whole.get("finish_reason") or any(m.get("finish_reason") for m in partials):
        return messages
    text = "".join(last_text([m]) or "" for m in partials)
    ids = {c.get("id") for c in tool_calls(partials)}
    if text != (last_text([whole]) or "") or not ids <= {c.get("id") for c in tool_calls([whole])}:
        return messages
    return [whole]


def normalize(messages: Iterable[Mapping[str, Any]] | None) -> list[Message]:
    return [normalize_message(m) for m in messages or []]


def from_items(items: Any) -> list[Message]:
    """OpenAI Responses ``input``/``output`` (a string or a list of items) as GenAI messages.

    The items of one assistant turn (text, reasoning, each function call) become
    one assistant message, as Chat Completions would carry them.
    """
    if isinstance(items, str):
        return [{"role": "user", "parts": [{"type": "text", "content": items}]}]
    out: list[Message] = []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, Mapping):
            continue
        if item.get("type") == "reasoning" and "role" not in item:
            summary = [
                s.get("text", "") for s in listed(item.get("summary")) if isinstance(s, Mapping)
            ]
            msg: Message = {
                "role": "assistant",
                "parts": [{"type": "reasoning", "content": "".join(summary)}],
            }
        else:
            msg = normalize_message(item)
        if msg["role"] == "assistant" and out and out[-1]["role"] == "assistant":
            out[-1]["parts"].extend(msg["parts"])
        else:
            out.append(msg)
    return out


def system_parts(instructions: Any) -> list[dict[str, Any]] | None:
    """``gen_ai.system_instructions`` shape: a list of parts."""
    if instructions is None:
        return None
    if isinstance(instructions, str):
        return [{"type": "text", "content": instructions}]
    return [normalize_part(p) for p in instructions]


def last_text(messages: Iterable[Mapping[str, Any]]) -> str | None:
    """The text of the last message that has any."""
    found: str | None = None
    for m in messages:
        texts = [
            str(p.get("content", ""))
            for p in m.get("parts", [])
            if isinstance(p, Mapping) and p.get("type") == "text"
        ]
        if texts:
            found = "".join(texts)
    return found


def tool_calls(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every ``tool_call`` part, in order; an ``id`` or ``name`` recorded as another value
    than text (a list, a map: a hostile trace's) as its JSON text, so that calls can be
    told apart, counted and shown by them."""
    calls = []
    for m in messages:
        for p in m.get("parts", []):
            if isinstance(p, Mapping) and p.get("type") == "tool_call":
                call = dict(p)
                for key in ("id", "name"):
                    value = call.get(key)
                    if value is not None and not isinstance(value, str):
                        call[key] = json.dumps(value, sort_keys=True, default=repr)
                calls.append(call)
    return calls


def tool_definition(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool schema in the semconv shape ``{type, name, description?, parameters?}``."""
    fn = tool.get("function")
    spec = tool.get("toolSpec")  # Bedrock Converse: {toolSpec: {name, description, inputSchema}}
    if isinstance(spec, Mapping) and fn is None:
        out = {"type": "function", **spec}
        schema = out.pop("inputSchema", None)
        if isinstance(schema, Mapping) and "parameters" not in out:
            out["parameters"] = schema.get("json")
    elif isinstance(fn, Mapping):
        out = {"type": tool.get("type", "function"), **fn}
    else:
        out = {"type": tool.get("type", "function"), **tool}
    for alias in ("input_schema", "parameters_json_schema"):  # Anthropic's, google-genai's
        if alias in out and "parameters" not in out:
            out["parameters"] = out.pop(alias)
    return out
