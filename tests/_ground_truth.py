"""Test helper: what a model server received and answered vs. what a step recorded.

Both sides become one flat sequence of ``(role, item)`` pairs, so message
boundaries (Anthropic groups tool results in one user message, OpenAI sends
one tool message each) and wire details (JSON strings vs. objects) do not
matter, while every text, call, argument and result does.  Items:
``("text", str)``, ``("call", id, name, args)``, ``("result", id, value)``.
Written from the providers' API shapes, independently of ``otel_replay``.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable
from typing import Any

from otel_replay.same_message import without_repeated_system

Item = tuple[str, tuple[Any, ...]]


def value(v: Any) -> Any:
    """A JSON (or Python-literal) string as the value it spells; other values kept."""
    if isinstance(v, str):
        for parse in (json.loads, ast.literal_eval):
            try:
                return parse(v)
            except (ValueError, SyntaxError):
                pass
    if isinstance(v, list) and v and all(isinstance(b, dict) and "text" in b for b in v):
        return value("".join(b["text"] for b in v))  # text blocks
    return v


def _text(role: str, content: Any) -> list[Item]:
    if isinstance(content, str):
        return [(role, ("text", content))] if content else []
    out: list[Item] = []
    for block in content or []:
        kind = block.get("type")
        if kind in ("text", "input_text", "output_text") and block["text"]:
            out.append((role, ("text", block["text"])))
        elif kind == "tool_use":
            out.append(("assistant", ("call", block["id"], block["name"], value(block["input"]))))
        elif kind == "tool_result":
            out.append(("tool", ("result", block["tool_use_id"], value(block.get("content")))))
    return out


#: OpenAI's ``developer`` role is its newer name for ``system`` (the API treats them alike;
#: LlamaIndex's Responses client sends its system message as one).
_ROLES = {"developer": "system"}


def _openai_message(m: dict[str, Any]) -> list[Item]:
    role = _ROLES.get(str(m.get("role")), m.get("role"))
    if m.get("type") == "function_call":
        return [("assistant", ("call", m["call_id"], m["name"], value(m["arguments"])))]
    if m.get("type") == "function_call_output":
        return [("tool", ("result", m["call_id"], value(m["output"])))]
    if role == "tool":
        return [("tool", ("result", m["tool_call_id"], value(m["content"])))]
    out = _text(str(role), m.get("content"))
    for c in m.get("tool_calls") or []:
        fn = c["function"]
        out.append(("assistant", ("call", c["id"], fn["name"], value(fn["arguments"]))))
    return out


def sent(request: dict[str, Any]) -> list[Item]:
    """The conversation a logged request carried (system prompt first)."""
    body = request["body_json"]
    system = body.get("system", body.get("instructions"))
    out = _text("system", system) if system else []
    items = body.get("messages", body.get("input", []))
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for m in items:
        out += _openai_message(m)
    return out


def answered(request: dict[str, Any]) -> list[Item]:
    """What the server answered a logged request (JSON body or SSE stream)."""
    raw = request["response_raw"]
    body = json.loads(raw) if raw.lstrip().startswith("{") else _fold_sse(raw)
    if "choices" in body:
        return _openai_message(body["choices"][0]["message"])
    if "output" in body:
        return [i for item in body["output"] for i in _openai_message(item)]
    return _text("assistant", body["content"])


def _fold_sse(raw: str) -> dict[str, Any]:
    events = [
        json.loads(line[5:])
        # SSE ends a line at CR, LF or CRLF only (str.splitlines also splits at U+2028 or
        # U+0085, which a JSON event holds as they are)
        for line in re.split(r"\r\n|\r|\n", raw)
        if line.startswith("data:") and line[5:].strip() not in ("", "[DONE]")
    ]
    if any(e.get("type") == "response.completed" for e in events):
        return next(e["response"] for e in events if e.get("type") == "response.completed")
    if any(e.get("object") == "chat.completion.chunk" for e in events):
        message: dict[str, Any] = {"role": "assistant", "content": "", "tool_calls": []}
        for e in events:
            for choice in e["choices"]:
                delta = choice["delta"]
                message["content"] += delta.get("content") or ""
                for tc in delta.get("tool_calls") or []:
                    while len(message["tool_calls"]) <= tc["index"]:
                        message["tool_calls"].append({"function": {"name": "", "arguments": ""}})
                    slot = message["tool_calls"][tc["index"]]
                    slot["id"] = tc.get("id") or slot.get("id")
                    for k in ("name", "arguments"):
                        slot["function"][k] += (tc.get("function") or {}).get(k) or ""
        return {"choices": [{"message": message}]}
    blocks: list[dict[str, Any]] = []  # Anthropic
    for e in events:
        if e["type"] == "content_block_start":
            blocks.append({**e["content_block"], "partial": ""})
        elif e["type"] == "content_block_delta":
            d = e["delta"]
            if d["type"] == "text_delta":
                blocks[e["index"]]["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                blocks[e["index"]]["partial"] += d["partial_json"]
    for b in blocks:
        if b["type"] == "tool_use":
            b["input"] = json.loads(b["partial"] or "{}")
    return {"content": blocks}


def recorded(messages: list[dict[str, Any]] | None, system: Any = None) -> list[Item]:
    """A step's GenAI messages (and system instructions) as the same sequence."""
    out: list[Item] = []
    for part in system or []:
        out.append(("system", ("text", part.get("content"))))
    for m in without_repeated_system(messages or [], system):
        for p in m["parts"]:
            kind = p["type"]
            if kind == "text" and p.get("content"):
                out.append((m["role"], ("text", p["content"])))
            elif kind == "tool_call":
                out.append(("assistant", ("call", p["id"], p["name"], value(p.get("arguments")))))
            elif kind == "tool_call_response":
                out.append(("tool", ("result", p["id"], value(p.get("response")))))
    return out


def tool_calls(requests: list[dict[str, Any]]) -> list[tuple[str, Any, Any]]:
    """``(name, arguments, result)`` of every tool call the conversation shows, in order."""
    return [call[1:] for call in tool_calls_with_ids(requests)]


#: A ReAct answer's action: ``Action: name`` then ``Action Input: {json}``.
_REACT_ACTION = re.compile(r"^Action: *(\S+)\s*\nAction Input: *(\{.*\})\s*$", re.M | re.S)


def _code_calls(code: str) -> list[Item]:
    """The tool calls in a code agent's code: calls of a name with literal keyword arguments
    only (``lookup_order(order_id='ORD-1')``), in order; ``print(...)`` and the like are not."""
    out: list[Item] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.keywords:
            if node.args or not all(isinstance(k.value, ast.Constant) for k in node.keywords):
                continue
            args = {str(k.arg): ast.literal_eval(k.value) for k in node.keywords}
            out.append(("call", None, node.func.id, args))
    return sorted(out, key=lambda c: code.find(f"{c[2]}("))


def tool_calls_with_ids(
    requests: list[dict[str, Any]], raises: Callable[[str], bool] | None = None
) -> list[tuple[str, str, Any, Any]]:
    """``(call id, name, arguments, result)`` of every tool call, in order.

    The action of a ReAct answer (text, no call of the API's) is a call without id.
    ``raises(name)``: whether the tool raises; a code block's calls after one that
    raises never run (the code stops there), so they are not calls."""
    calls = []
    for request in requests:
        for _, item in answered(request):
            if item[0] == "call":
                calls.append(item)
            elif item[0] == "text" and (action := _REACT_ACTION.search(item[1])):
                calls.append(("call", None, action.group(1), json.loads(action.group(2))))
            elif item[0] == "text" and "<code>" in item[1]:
                code = _code_calls(item[1].split("<code>", 1)[1].split("</code>", 1)[0])
                stop = next((i for i, c in enumerate(code) if raises and raises(c[2])), None)
                calls += code if stop is None else code[: stop + 1]
    results = {i[1]: i[2] for _, i in sent(requests[-1]) if i[0] == "result"}
    return [(call_id, name, args, results.get(call_id)) for _, call_id, name, args in calls]
