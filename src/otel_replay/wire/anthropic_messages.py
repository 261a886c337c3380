"""Anthropic Messages: ``POST /v1/messages``, JSON and ``stream: true`` SSE.

Content blocks in the order of the recorded parts (``thinking``, ``text``,
``tool_use``).  The stream is the API's event sequence: ``message_start``
(usage with the input tokens), per block ``content_block_start`` / deltas
(``text_delta``, ``input_json_delta``, ``thinking_delta``) /
``content_block_stop``, a ``ping``, ``message_delta`` (stop reason, output
tokens) and ``message_stop``: what the SDK's ``MessageStream`` folds.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .base import (
    SSE_TYPE,
    Reply,
    WireRequest,
    call_input,
    json_pieces,
    parse_checked,
    same_error,
    sse,
    text_pieces,
)
from .shapes import MESSAGE_FIELDS, PARAMS, TOOL_FIELDS, Arr, Obj

name = "anthropic.messages"
path = "/v1/messages"
stream_type = SSE_TYPE
render_error = same_error

_TEXT = Obj({"type": "string", "text": "string"})
_BLOCK = Obj(
    {
        "type": "string",
        "text": "string",
        "id": "string",
        "name": "string",
        "input": "object",
        "tool_use_id": "string",
        "content": ("string", Arr(Obj({"type": "string", "text": "string"}))),
        "is_error": "boolean",
        "thinking": "string",
        "signature": "string",
    }
)
_MESSAGE = Obj({**MESSAGE_FIELDS, "content": ("string", Arr(_BLOCK))}, required=("role", "content"))
#: The request body's fields that are read, and their types in the API.
SHAPE = Obj(
    {
        **PARAMS,
        "messages": Arr(_MESSAGE),
        "system": ("string", Arr(_TEXT), "null"),
        "tools": (Arr(Obj({**TOOL_FIELDS, "input_schema": "object"})), "null"),
    },
    required=("messages",),
)

#: One finish-reason spelling (see base) -> Anthropic's ``stop_reason``.
_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def parse(body: Mapping[str, Any]) -> WireRequest:
    return parse_checked(body, SHAPE)


def spells_arguments(request: WireRequest) -> bool:
    """Tool-call arguments reach the client as text in a stream (``partial_json``); a JSON
    answer gives them as an object (the client reads its keys, in their order)."""
    return request.stream


def _blocks(reply: Reply) -> list[dict[str, Any]]:
    return _spelled_blocks(reply)[0]


def _spelled_blocks(reply: Reply) -> tuple[list[dict[str, Any]], dict[int, str]]:
    """The content blocks, and the arguments text of each ``tool_use`` block by its index
    (what a stream's ``partial_json`` spells: the recorded text, see wire.spelling)."""
    blocks: list[dict[str, Any]] = []
    texts: dict[int, str] = {}
    calls = iter(reply.tool_calls())
    for part in reply.parts:
        kind = part.get("type")
        if kind == "text":
            # One block per recorded part: a reply of several text blocks reaches the
            # client as several, as the agent sends them back.
            blocks.append({"type": "text", "text": str(part.get("content") or "")})
        elif kind == "tool_call":
            call = next(calls)
            value, spelled = call_input(call)
            if spelled:
                texts[len(blocks)] = call["arguments"]
            blocks.append(
                {"type": "tool_use", "id": call["id"], "name": call["name"], "input": value}
            )
        elif kind == "reasoning":
            blocks.append(
                {"type": "thinking", "thinking": str(part.get("content") or ""), "signature": ""}
            )
    return blocks, texts


def _usage(reply: Reply, output_tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": reply.input_tokens,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output_tokens,
    }


def _message(reply: Reply, content: list[dict[str, Any]], done: bool) -> dict[str, Any]:
    return {
        "id": reply.id_or("msg_"),
        "type": "message",
        "role": "assistant",
        "model": reply.model,
        "content": content,
        "stop_reason": _STOP.get(reply.finish_reason, "end_turn") if done else None,
        "stop_sequence": None,
        "usage": _usage(reply, reply.output_tokens if done else 1),
    }


def render_json(reply: Reply, request: WireRequest) -> dict[str, Any]:
    return _message(reply, _blocks(reply), done=True)


def render_sse(reply: Reply, request: WireRequest) -> Iterator[bytes]:
    def event(kind: str, **fields: Any) -> bytes:
        return sse({"type": kind, **fields}, kind)

    yield event("message_start", message=_message(reply, [], done=False))
    blocks, texts = _spelled_blocks(reply)
    for index, block in enumerate(blocks):
        kind = block["type"]
        if kind == "text":
            yield event(
                "content_block_start", index=index, content_block={"type": "text", "text": ""}
            )
            if index == 0:
                yield event("ping")
            for piece in text_pieces(block["text"]) if block["text"] else []:
                delta = {"type": "text_delta", "text": piece}
                yield event("content_block_delta", index=index, delta=delta)
        elif kind == "tool_use":
            start = {**block, "input": {}}
            yield event("content_block_start", index=index, content_block=start)
            text = texts.get(index)
            if text is None:  # arguments that are no JSON object: the input served is {}
                text = json.dumps(block["input"], separators=(",", ":"), ensure_ascii=False)
            for piece in json_pieces(text):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield event("content_block_delta", index=index, delta=delta)
        else:  # thinking
            start = {"type": "thinking", "thinking": "", "signature": ""}
            yield event("content_block_start", index=index, content_block=start)
            delta = {"type": "thinking_delta", "thinking": block["thinking"]}
            yield event("content_block_delta", index=index, delta=delta)
        yield event("content_block_stop", index=index)
    stop = _STOP.get(reply.finish_reason, "end_turn")
    yield event(
        "message_delta",
        delta={"stop_reason": stop, "stop_sequence": None},
        usage={"output_tokens": reply.output_tokens},
    )
    yield event("message_stop")
