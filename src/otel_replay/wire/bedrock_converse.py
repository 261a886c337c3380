"""Amazon Bedrock Converse: ``POST /model/{modelId}/converse`` and ``.../converse-stream``.

The model id is in the path (URL-encoded: ``us.anthropic.claude-3-5-haiku-20241022-v1%3A0``),
and so is the choice to stream.  The request body: ``messages`` of content blocks
(``text``, ``toolUse``, ``toolResult``, ``image``...), ``system`` text blocks,
``toolConfig.tools[].toolSpec`` and ``inferenceConfig`` (read by
``dialects.bodies.request``).  The JSON answer is ``ConverseResponse`` (``output.message``,
``stopReason``, ``usage``, ``metrics``); the stream is an AWS event stream
(:mod:`otel_replay.event_stream`) of ``messageStart``, per block ``contentBlockStart``
(tool use only, as Bedrock sends it) / ``contentBlockDelta`` / ``contentBlockStop``,
``messageStop`` and ``metadata``: what botocore's ``EventStream`` decodes.

Errors: botocore reads a rest-json error's code from the ``x-amzn-ErrorType`` header and
its message from the body's ``message``: the engine's error, so said, reaches a boto3
caller as a ``ClientError`` carrying its text.
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from typing import Any

from .. import event_stream
from .base import Reply, WireRequest, call_input, json_pieces, parse_checked, text_pieces
from .shapes import Arr, Obj

name = "bedrock.converse"
path = "/model/{modelId}/converse"
stream_path = "/model/{modelId}/converse-stream"
stream_type = event_stream.CONTENT_TYPE

#: A Converse path: any prefix, ``/model/``, the (URL-encoded) model id, the operation.
_PATH = re.compile(r"(?:^|/)model/([^/]+)/(converse|converse-stream)$")

_BLOCK = Obj(
    {
        "text": "string",
        "toolUse": Obj({"toolUseId": "string", "name": "string"}),
        "toolResult": Obj({"toolUseId": "string", "content": Arr("object"), "status": "string"}),
        "image": "object",
        "reasoningContent": "object",
    }
)
_MESSAGE = Obj({"role": "string", "content": Arr(_BLOCK)}, required=("role", "content"))
_SPEC = Obj(
    {"name": "string", "description": "string", "inputSchema": Obj({"json": "object"})},
    required=("name",),
)
#: The request body's fields that are read, and their types in the API.
SHAPE = Obj(
    {
        "messages": Arr(_MESSAGE),
        "system": Arr(Obj({"text": "string"})),
        "toolConfig": Obj({"tools": Arr(Obj({"toolSpec": _SPEC}))}),
        "inferenceConfig": Obj(
            {
                "maxTokens": "integer",
                "temperature": "number",
                "topP": "number",
                "stopSequences": Arr("string"),
            }
        ),
    }
)

#: One finish-reason spelling (see base) -> Converse's ``stopReason``.
_STOP = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "content_filtered",
}

#: The error code botocore reads (``x-amzn-ErrorType``) by status: Bedrock's own names
#: where it has one for the status, so ``client.exceptions.<Name>`` catches them.
_ERRORS = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    409: "ConflictException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def matches(request_path: str) -> tuple[str, bool] | None:
    """The model id (URL-decoded) and whether to stream, if ``request_path`` is Converse's."""
    found = _PATH.search(request_path)
    if found is None:
        return None
    return urllib.parse.unquote(found.group(1)), found.group(2) == "converse-stream"


def parse(body: Mapping[str, Any]) -> WireRequest:
    """The body read (the model and streaming are in the path: see :func:`matches`)."""
    return parse_checked(body, SHAPE)


def spells_arguments(request: WireRequest) -> bool:
    """Tool-call arguments reach the client as text in a stream (``toolUse.input``
    fragments); a JSON answer gives them as a document (the client reads its keys)."""
    return request.stream


def _blocks(reply: Reply) -> list[tuple[dict[str, Any], str | None]]:
    """The content blocks, each with the arguments text a stream spells for a tool use
    (the recorded text where the step holds one: see wire.spelling)."""
    blocks: list[tuple[dict[str, Any], str | None]] = []
    calls = iter(reply.tool_calls())
    for part in reply.parts:
        kind = part.get("type")
        if kind == "text":
            blocks.append(({"text": str(part.get("content") or "")}, None))
        elif kind == "tool_call":
            call = next(calls)
            value, spelled = call_input(call)
            use = {"toolUseId": call["id"], "name": call["name"], "input": value}
            text = call["arguments"] if spelled else json.dumps(value)
            blocks.append(({"toolUse": use}, text))
        elif kind == "reasoning":
            reasoning = {"reasoningText": {"text": str(part.get("content") or "")}}
            blocks.append(({"reasoningContent": reasoning}, None))
    return blocks


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "inputTokens": reply.input_tokens,
        "outputTokens": reply.output_tokens,
        "totalTokens": reply.input_tokens + reply.output_tokens,
    }


def render_json(reply: Reply, request: WireRequest) -> dict[str, Any]:
    content = [block for block, _ in _blocks(reply)]
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": _STOP.get(reply.finish_reason, "end_turn"),
        "usage": _usage(reply),
        "metrics": {"latencyMs": reply.latency_ms},
    }


def _event(kind: str, payload: Mapping[str, Any]) -> bytes:
    headers = (
        (":event-type", kind),
        (":content-type", "application/json"),
        (":message-type", "event"),
    )
    data = json.dumps(payload, separators=(",", ":"), ensure_ascii=False)
    return event_stream.encode(headers, data.encode("utf-8", "backslashreplace"))


def render_sse(reply: Reply, request: WireRequest) -> Iterator[bytes]:
    """The answer as ConverseStream's event-stream messages (one chunk each)."""
    yield _event("messageStart", {"role": "assistant"})
    for index, (block, text) in enumerate(_blocks(reply)):
        deltas: list[dict[str, Any]]
        if "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            yield _event("contentBlockStart", {"contentBlockIndex": index, "start": start})
            deltas = [{"toolUse": {"input": piece}} for piece in json_pieces(text or "")]
        elif "text" in block:
            deltas = [{"text": piece} for piece in text_pieces(block["text"])]
        else:  # reasoning
            deltas = [
                {"reasoningContent": {"text": block["reasoningContent"]["reasoningText"]["text"]}}
            ]
        for delta in deltas:
            yield _event("contentBlockDelta", {"contentBlockIndex": index, "delta": delta})
        yield _event("contentBlockStop", {"contentBlockIndex": index})
    yield _event("messageStop", {"stopReason": _STOP.get(reply.finish_reason, "end_turn")})
    metrics = {"latencyMs": reply.latency_ms}
    yield _event("metadata", {"usage": _usage(reply), "metrics": metrics})


def render_error(
    status: int, envelope: Mapping[str, Any]
) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """An error as Bedrock sends one: the code in ``x-amzn-ErrorType``, the message in the
    body's ``message`` (the engine's envelope kept beside it, under ``error``)."""
    inner = envelope.get("error")
    message = inner.get("message") if isinstance(inner, Mapping) else envelope.get("message")
    if not isinstance(message, str):
        message = json.dumps(envelope, ensure_ascii=False, default=repr)
    code = _ERRORS.get(
        status, "InternalServerException" if status >= 500 else "ValidationException"
    )
    body: dict[str, Any] = {"message": message}
    if isinstance(inner, Mapping):
        body["error"] = dict(inner)
    return [
        ("x-amzn-errortype", f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/")
    ], body
