"""GenAI semconv messages: normalize the shapes found in the wild into one.

The one shape (``gen_ai.input.messages`` / ``gen_ai.output.messages``)::

    {"role": "user"|"assistant"|"system"|"tool", "parts": [...],
     "name"?: str, "finish_reason"?: str}

with parts ``{"type": "text", "content"}``, ``{"type": "tool_call", "id",
"name", "arguments"}`` (arguments parsed into JSON values),
``{"type": "tool_call_response", "id", "response"}`` (older ``result`` accepted),
``reasoning``, ``blob``, ``uri``, ``file``... kept as they come.
OpenAI-style ``{"role", "content", "tool_calls", "tool_call_id"}`` input is
accepted too, so capture helpers take what the user's code already has.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

Message = dict[str, Any]


def parse_arguments(arguments: Any) -> Any:
    """Tool-call arguments as JSON values: a JSON string is parsed, others kept."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


def normalize_part(part: Any) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "content": part}
    if not isinstance(part, Mapping):
        return {"type": "text", "content": str(part)}
    p = dict(part)
    kind = p.get("type")
    if kind == "tool_call":
        out: dict[str, Any] = {"type": "tool_call", "id": p.get("id"), "name": p.get("name")}
        if "arguments" in p:
            out["arguments"] = parse_arguments(p["arguments"])
        return out
    if kind == "tool_call_response":
        response = p["response"] if "response" in p else p.get("result")
        return {"type": "tool_call_response", "id": p.get("id"), "response": response}
    if kind is None and "text" in p:
        return {"type": "text", "content": p["text"]}
    if kind == "text" and "content" not in p and "text" in p:
        return {"type": "text", "content": p["text"]}
    return p


def normalize_message(message: Mapping[str, Any]) -> Message:
    """One message in the GenAI shape (see module docstring)."""
    role = str(message.get("role", "user"))
    if "parts" in message:
        parts = [normalize_part(p) for p in (message.get("parts") or [])]
    else:
        parts = []
        content = message.get("content")
        if role == "tool":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": message.get("tool_call_id"),
                    "response": content,
                }
            )
        elif isinstance(content, str):
            parts.append({"type": "text", "content": content})
        elif isinstance(content, list):
            parts.extend(normalize_part(p) for p in content)
        for call in message.get("tool_calls") or []:
            fn = call.get("function", call)
            parts.append(
                {
                    "type": "tool_call",
                    "id": call.get("id"),
                    "name": fn.get("name"),
                    "arguments": parse_arguments(fn.get("arguments")),
                }
            )
    out: Message = {"role": role, "parts": parts}
    for key in ("name", "finish_reason"):
        if message.get(key) is not None:
            out[key] = message[key]
    return out


def normalize(messages: Iterable[Mapping[str, Any]] | None) -> list[Message]:
    return [normalize_message(m) for m in messages or []]


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
    """Every ``tool_call`` part, in order."""
    return [
        dict(p)
        for m in messages
        for p in m.get("parts", [])
        if isinstance(p, Mapping) and p.get("type") == "tool_call"
    ]


def tool_definition(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool schema in the semconv shape ``{type, name, description?, parameters?}``."""
    fn = tool.get("function")
    if isinstance(fn, Mapping):
        out = {"type": tool.get("type", "function"), **fn}
    else:
        out = {"type": tool.get("type", "function"), **tool}
    if "input_schema" in out and "parameters" not in out:  # Anthropic's name for it
        out["parameters"] = out.pop("input_schema")
    return out
