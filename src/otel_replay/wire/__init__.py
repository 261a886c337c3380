"""Provider wire formats: one module per API, found by request path.

Each module parses an incoming request body into GenAI terms and renders a
recorded model step as that API's JSON body or SSE stream (see
:mod:`~otel_replay.wire.base`).  Nothing here knows about runs being
replayed; the engine (:mod:`otel_replay.replay.engine`) does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from . import anthropic_messages, bedrock_converse, openai_chat, openai_responses
from .base import (
    SSE_TYPE,
    Reply,
    Wire,
    WireRequest,
    reply_from_step,
    same_error,
    stream_begun,
)
from .shapes import BadRequest, loads

#: The content type of a Bedrock stream (an AWS event stream).
EVENT_STREAM_TYPE = bedrock_converse.stream_type

WIRES: dict[str, Wire] = {
    openai_chat.path: openai_chat,
    openai_responses.path: openai_responses,
    anthropic_messages.path: anthropic_messages,
    bedrock_converse.path: bedrock_converse,
    bedrock_converse.stream_path: bedrock_converse,
}


def for_path(path: str) -> Wire | None:
    """The wire format served at ``path`` (``/v1/...``, ``/model/{modelId}/converse``; a
    prefix before ``/v1`` or ``/model`` is allowed)."""
    path = path.split("?", 1)[0].rstrip("/")
    wire = WIRES.get(path)
    if wire is None:
        cut = path.rfind("/v1/")
        if cut > 0:
            wire = WIRES.get(path[cut:])
    if wire is None and bedrock_converse.matches(path) is not None:
        wire = bedrock_converse
    return wire


def parse(wire: Wire, body: Mapping[str, Any], path: str) -> WireRequest:
    """``body`` read by ``wire``, with what the path says besides (Converse's model id
    and whether to stream)."""
    request = wire.parse(body)
    at = bedrock_converse.matches(path.split("?", 1)[0]) if wire is bedrock_converse else None
    if at is not None:
        request.model, request.stream = at
    return request


__all__ = [
    "EVENT_STREAM_TYPE",
    "SSE_TYPE",
    "WIRES",
    "BadRequest",
    "Reply",
    "Wire",
    "WireRequest",
    "for_path",
    "loads",
    "parse",
    "reply_from_step",
    "same_error",
    "stream_begun",
]
