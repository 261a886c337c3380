"""Test helper: what a model server received and answered, as GenAI messages.

Written from the providers' API shapes (OpenAI Chat Completions and Responses,
Anthropic Messages), independently of ``otel_replay``, so the tests compare
the library's reading of third-party spans with the wire, not with itself.
:func:`comparable` puts both sides in one form: the system prompt as a leading
system message however it was given; no empty text; tool arguments and
results as the JSON values they spell (text blocks joined); a message of tool
results only has role ``tool`` (Anthropic sends them as ``user``); call ids kept.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

Message = dict[str, Any]


def value(v: Any) -> Any:
    """A JSON string as the value it spells; a list of text blocks as its text; else ``v``."""
    if (
        isinstance(v, list)
        and v
        and all(isinstance(b, Mapping) and b.get("type") == "text" for b in v)
    ):
        v = "".join(str(b.get("text", b.get("content", ""))) for b in v)
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


def _text(role: str, content: Any) -> list[Message]:
    """An OpenAI/Anthropic ``content`` (string or blocks) as GenAI messages."""
    if isinstance(content, str):
        return [{"role": role, "parts": [{"type": "text", "content": content}]}]
    parts: list[dict[str, Any]] = []
    for block in content or []:
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text"):
            parts.append({"type": "text", "content": block["text"]})
        elif kind == "tool_use":
            parts.append(
                {
                    "type": "tool_call",
                    "id": block["id"],
                    "name": block["name"],
                    "arguments": block["input"],
                }
            )
        elif kind == "tool_result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": block["tool_use_id"],
                    "response": block.get("content"),
                }
            )
    return [{"role": role, "parts": parts}]


def _openai(m: Mapping[str, Any]) -> list[Message]:
    """One Chat Completions message or Responses input/output item."""
    kind = m.get("type")
    if kind == "function_call":
        call = {
            "type": "tool_call",
            "id": m["call_id"],
            "name": m["name"],
            "arguments": m["arguments"],
        }
        return [{"role": "assistant", "parts": [call]}]
    if kind == "function_call_output":
        part = {"type": "tool_call_response", "id": m["call_id"], "response": m["output"]}
        return [{"role": "tool", "parts": [part]}]
    role = str(m.get("role"))
    if role == "tool":
        part = {"type": "tool_call_response", "id": m["tool_call_id"], "response": m["content"]}
        return [{"role": "tool", "parts": [part]}]
    (out,) = _text(role, m.get("content"))
    for c in m.get("tool_calls") or []:
        fn = c["function"]
        out["parts"].append(
            {"type": "tool_call", "id": c["id"], "name": fn["name"], "arguments": fn["arguments"]}
        )
    return [out]


def received(request: Mapping[str, Any]) -> list[Message]:
    """The conversation a logged request carried, the system prompt first."""
    body = request["body_json"]
    system = body.get("system", body.get("instructions"))
    out = _text("system", system) if system else []
    items = body.get("messages", body.get("input", []))
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for m in items:
        out += _openai(m)
    return out


def answered(request: Mapping[str, Any]) -> list[Message]:
    """What the server answered a logged request (a JSON body or an SSE stream)."""
    raw = request["response_raw"]
    body = json.loads(raw) if raw.lstrip().startswith("{") else _fold_sse(raw)
    if "choices" in body:
        return _openai(body["choices"][0]["message"])
    if "output" in body:  # Responses: every item one assistant turn
        parts = [p for item in body["output"] for m in _openai(item) for p in m["parts"]]
        return [{"role": "assistant", "parts": parts}]
    return _text("assistant", body["content"])


def _fold_sse(raw: str) -> dict[str, Any]:
    """A streamed answer as the body the same request would have got without streaming."""
    events = [
        json.loads(line[5:])
        for line in raw.splitlines()
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")
    ]
    for e in events:
        if e.get("type") == "response.completed":
            return dict(e["response"])
    if any(e.get("object") == "chat.completion.chunk" for e in events):
        message: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": []}
        for e in events:
            for choice in e["choices"]:
                delta = choice["delta"]
                message["content"] += delta.get("content") or ""
                for tc in delta.get("tool_calls") or []:
                    calls = message["tool_calls"]
                    while len(calls) <= tc["index"]:
                        calls.append({"id": None, "function": {"name": "", "arguments": ""}})
                    slot = calls[tc["index"]]
                    slot["id"] = tc.get("id") or slot["id"]
                    for k in ("name", "arguments"):
                        slot["function"][k] += (tc.get("function") or {}).get(k) or ""
        return {"choices": [{"message": message}]}
    blocks: list[dict[str, Any]] = []  # Anthropic
    partial: dict[int, str] = {}
    for e in events:
        if e.get("type") == "content_block_start":
            blocks.append(dict(e["content_block"]))
        elif e.get("type") == "content_block_delta":
            d = e["delta"]
            if d["type"] == "text_delta":
                blocks[e["index"]]["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                partial[e["index"]] = partial.get(e["index"], "") + d["partial_json"]
    for i, text in partial.items():
        blocks[i]["input"] = json.loads(text or "{}")
    return {"content": blocks}


def comparable(
    messages: Iterable[Mapping[str, Any]] | None, system: Iterable[Mapping[str, Any]] | None = None
) -> list[Message]:
    """GenAI messages (and system instructions) in the one form both sides are compared in."""
    out: list[Message] = []
    if system:
        out += comparable([{"role": "system", "parts": list(system)}])
    for m in messages or []:
        parts: list[dict[str, Any]] = []
        for p in m.get("parts") or []:
            kind = p.get("type")
            if kind == "text":
                if p.get("content"):
                    parts.append({"type": "text", "content": p["content"]})
            elif kind == "tool_call":
                parts.append(
                    {
                        "type": "tool_call",
                        "id": p.get("id"),
                        "name": p.get("name"),
                        "arguments": value(p.get("arguments")),
                    }
                )
            elif kind == "tool_call_response":
                response = p["response"] if "response" in p else p.get("result")
                parts.append(
                    {"type": "tool_call_response", "id": p.get("id"), "response": value(response)}
                )
            else:
                parts.append(dict(p))
        if not parts:
            continue
        role = m.get("role")
        if all(p["type"] == "tool_call_response" for p in parts):
            role = "tool"
        out.append({"role": role, "parts": parts})
    return out


def tool_calls(requests: list[Mapping[str, Any]]) -> list[tuple[str, str, Any, Any]]:
    """``(call id, name, arguments, result)`` of every tool call in the conversation, in order."""
    calls = [
        p
        for r in requests
        for m in comparable(answered(r))
        for p in m["parts"]
        if p["type"] == "tool_call"
    ]
    results = {
        p["id"]: p["response"]
        for m in comparable(received(requests[-1]))
        for p in m["parts"]
        if p["type"] == "tool_call_response"
    }
    return [(c["id"], c["name"], c["arguments"], results.get(c["id"])) for c in calls]
