"""Provider wire formats: one module per API, found by request path.

Each module parses an incoming request body into GenAI terms and renders a
recorded model step as that API's JSON body or SSE stream (see
:mod:`~otel_replay.wire.base`).  Nothing here knows about runs being
replayed; the engine (:mod:`otel_replay.replay.engine`) does.
"""

from __future__ import annotations

from . import anthropic_messages, openai_chat, openai_responses
from .base import Reply, Wire, WireRequest, reply_from_step, stream_begun
from .shapes import BadRequest, loads

WIRES: dict[str, Wire] = {
    openai_chat.path: openai_chat,
    openai_responses.path: openai_responses,
    anthropic_messages.path: anthropic_messages,
}


def for_path(path: str) -> Wire | None:
    """The wire format served at ``path`` (``/v1/...``; a prefix before ``/v1`` is allowed)."""
    path = path.split("?", 1)[0].rstrip("/")
    wire = WIRES.get(path)
    if wire is None:
        cut = path.rfind("/v1/")
        if cut > 0:
            wire = WIRES.get(path[cut:])
    return wire


__all__ = [
    "WIRES",
    "BadRequest",
    "Reply",
    "Wire",
    "WireRequest",
    "for_path",
    "loads",
    "reply_from_step",
    "stream_begun",
]
