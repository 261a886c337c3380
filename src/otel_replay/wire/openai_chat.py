"""OpenAI Chat Completions: ``POST /v1/chat/completions``, JSON and ``stream: true`` SSE.

The stream is what the API sends and the SDK's ``ChatCompletionStreamState``
folds: a first chunk with the role (and the first tool call's id and name),
content or argument deltas, a chunk with the finish reason, a usage chunk
with no choices when ``stream_options.include_usage`` asks for it, and
``data: [DONE]``.
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

name = "openai.chat"
path = "/v1/chat/completions"
stream_type = SSE_TYPE
render_error = same_error

_CALL = Obj(
    {
        "id": ("string", "null"),
        "type": "string",
        "function": Obj({"name": "string", "arguments": "string"}),
    }
)
_PART = Obj({"type": "string", "text": "string", "refusal": "string"})
_MESSAGE = Obj(
    {
        **MESSAGE_FIELDS,
        "content": ("string", Arr(_PART), "null"),
        "tool_calls": (Arr(_CALL), "null"),
        "refusal": ("string", "null"),
    },
    required=("role",),
)
#: The request body's fields that are read, and their types in the API.
SHAPE = Obj(
    {**PARAMS, "messages": Arr(_MESSAGE), "tools": (Arr(Obj(TOOL_FIELDS)), "null")},
    required=("messages",),
)


def parse(body: Mapping[str, Any]) -> WireRequest:
    return parse_checked(body, SHAPE)


def spells_arguments(request: WireRequest) -> bool:
    """Tool-call arguments reach the client as text (JSON and stream alike)."""
    return True


def _usage(reply: Reply) -> dict[str, Any]:
    return {
        "prompt_tokens": reply.input_tokens,
        "completion_tokens": reply.output_tokens,
        "total_tokens": reply.input_tokens + reply.output_tokens,
    }


def render_json(reply: Reply, request: WireRequest) -> dict[str, Any]:
    text = reply.text()
    calls = reply.tool_calls()
    message: dict[str, Any] = {
        "role": "assistant",
        "content": text if text or not calls else None,
        "refusal": None,
        "annotations": [],
    }
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["arguments"]},
            }
            for c in calls
        ]
    return {
        "id": reply.id_or("chatcmpl-"),
        "object": "chat.completion",
        "created": reply.created,
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": reply.finish_reason,
            }
        ],
        "usage": _usage(reply),
    }


def render_sse(reply: Reply, request: WireRequest) -> Iterator[bytes]:
    head = {
        "id": reply.id_or("chatcmpl-"),
        "object": "chat.completion.chunk",
        "created": reply.created,
        "model": reply.model,
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return sse({**head, "choices": [choice], "usage": None})

    text = reply.text()
    calls = reply.tool_calls()
    first: dict[str, Any] = {"role": "assistant", "content": "" if text or not calls else None}
    first["refusal"] = None
    if text:
        yield chunk(first)
        for piece in text_pieces(text):
            yield chunk({"content": piece})
        first = {}
    for i, call in enumerate(calls):
        header = {
            "index": i,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        yield chunk({**first, "tool_calls": [header]})
        first = {}
        for piece in json_pieces(call["arguments"]):
            yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    if first:  # neither text nor tool calls: an empty answer still has its role chunk
        yield chunk(first)
    yield chunk({}, reply.finish_reason)
    options = request.body.get("stream_options")
    if isinstance(options, Mapping) and options.get("include_usage"):
        yield sse({**head, "choices": [], "usage": _usage(reply)})
    yield sse("[DONE]")
