"""OpenAI Responses: ``POST /v1/responses``, JSON and ``stream: true`` SSE.

Output items in the order of the recorded parts: a ``reasoning`` item per
reasoning part, one ``message`` item per run of text parts (an ``output_text``
content part per text part: a message the API sent in several parts, which
the client sends back as it got them, is served in those parts), a
``function_call`` item per tool call.  The stream is the API's event
sequence (``response.created``, ``response.in_progress``, per item
``output_item.added`` / deltas / ``.done``, ``response.completed``), with
``sequence_number`` counting up: what the SDK's ``ResponseStreamState`` folds.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from .base import (
    SSE_TYPE,
    Reply,
    WireRequest,
    json_pieces,
    parse_checked,
    same_error,
    sse,
    text_pieces,
)
from .shapes import MESSAGE_FIELDS, PARAMS, TOOL_FIELDS, Arr, Obj

name = "openai.responses"
path = "/v1/responses"
stream_type = SSE_TYPE
render_error = same_error

_CONTENT = ("string", Arr(Obj({"type": "string", "text": "string"})), "null")
_ITEM = Obj(
    {
        **MESSAGE_FIELDS,
        "type": "string",
        "id": ("string", "null"),
        "content": _CONTENT,
        "call_id": "string",
        "arguments": "string",
        "output": ("string", Arr("object")),
        "summary": (Arr(Obj({"type": "string", "text": "string"})), "null"),
    }
)
#: The request body's fields that are read, and their types in the API.
SHAPE = Obj(
    {
        **PARAMS,
        "input": ("string", Arr(_ITEM)),
        "instructions": ("string", Arr(_ITEM), "null"),
        "tools": (Arr(Obj(TOOL_FIELDS)), "null"),
    }
)


def parse(body: Mapping[str, Any]) -> WireRequest:
    return parse_checked(body, SHAPE)


def spells_arguments(request: WireRequest) -> bool:
    """Tool-call arguments reach the client as text (JSON and stream alike)."""
    return True


def _items(reply: Reply) -> list[dict[str, Any]]:
    """The completed output items."""
    items: list[dict[str, Any]] = []
    calls = iter(reply.tool_calls())
    for part in reply.parts:
        kind = part.get("type")
        if kind == "text":
            text = str(part.get("content") or "")
            content = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            if items and items[-1]["type"] == "message":
                items[-1]["content"].append(content)
                continue
            items.append(
                {
                    "type": "message",
                    "id": f"msg_{reply.span_id}_{len(items)}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [content],
                }
            )
        elif kind == "tool_call":
            call = next(calls)
            items.append(
                {
                    "type": "function_call",
                    "id": call["item_id"] or f"fc_{reply.span_id}_{len(items)}",
                    "call_id": call["id"],
                    "name": call["name"],
                    "arguments": call["arguments"],
                    "status": "completed",
                }
            )
        elif kind == "reasoning":
            summary = str(part.get("content") or "")
            items.append(
                {
                    "type": "reasoning",
                    "id": f"rs_{reply.span_id}_{len(items)}",
                    "summary": [{"type": "summary_text", "text": summary}] if summary else [],
                }
            )
    return items


def _response(
    reply: Reply, request: WireRequest, output: list[dict[str, Any]], done: bool
) -> dict[str, Any]:
    body = request.body
    incomplete = done and reply.finish_reason == "length"
    status = "in_progress" if not done else "incomplete" if incomplete else "completed"
    usage = None
    if done:
        usage = {
            "input_tokens": reply.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": reply.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": reply.input_tokens + reply.output_tokens,
        }
    return {
        "id": reply.id_or("resp_"),
        "object": "response",
        "created_at": reply.created,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": reply.model,
        "output": output,
        "parallel_tool_calls": body.get("parallel_tool_calls", True),
        "previous_response_id": body.get("previous_response_id"),
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": body.get("store", False),
        "temperature": body.get("temperature", 1.0),
        "text": {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def render_json(reply: Reply, request: WireRequest) -> dict[str, Any]:
    return _response(reply, request, _items(reply), done=True)


def render_sse(reply: Reply, request: WireRequest) -> Iterator[bytes]:
    seq = 0

    def event(kind: str, **fields: Any) -> bytes:
        nonlocal seq
        data = {"type": kind, "sequence_number": seq, **fields}
        seq += 1
        return sse(data, kind)

    items = _items(reply)
    yield event("response.created", response=_response(reply, request, [], done=False))
    yield event("response.in_progress", response=_response(reply, request, [], done=False))
    for index, item in enumerate(items):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            added = {**item, "status": "in_progress", "content": []}
            yield event("response.output_item.added", output_index=index, item=added)
            for ci, part in enumerate(item["content"]):
                text = part["text"]
                empty = {**part, "text": ""}
                yield event("response.content_part.added", **at, content_index=ci, part=empty)
                for piece in text_pieces(text) if text else []:
                    yield event(
                        "response.output_text.delta",
                        **at,
                        content_index=ci,
                        delta=piece,
                        logprobs=[],
                    )
                yield event(
                    "response.output_text.done", **at, content_index=ci, text=text, logprobs=[]
                )
                yield event("response.content_part.done", **at, content_index=ci, part=part)
        elif item["type"] == "function_call":
            added = {**item, "arguments": "", "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=added)
            for piece in json_pieces(item["arguments"]):
                yield event("response.function_call_arguments.delta", **at, delta=piece)
            yield event("response.function_call_arguments.done", **at, arguments=item["arguments"])
        else:
            yield event("response.output_item.added", output_index=index, item=item)
        yield event("response.output_item.done", output_index=index, item=item)
    final = _response(reply, request, items, done=True)
    kind = "response.incomplete" if final["status"] == "incomplete" else "response.completed"
    yield event(kind, response=final)
