"""A served Anthropic answer has the recorded reply's blocks, one per recorded part and in
their order, as the real Anthropic SDK reads them, JSON and stream alike.

The class: a reply of any number of text parts, tool calls and thinking, interleaved
(Claude answers with several text blocks beside its tool calls; the agent sends them back
as they came, so a merged block is a request of other bytes on the next turn).
"""

from __future__ import annotations

import json
from typing import Any

import anthropic
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.wire import anthropic_messages
from otel_replay.wire.base import Reply, parse_body
from tests.fixtures.wire_reply import ARGS, TEXT, answering, reply_of


@st.composite
def _parts(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["text", "text", "tool_call", "reasoning"]))
        if kind == "tool_call":
            out.append(
                {
                    "type": "tool_call",
                    "id": f"toolu_{i}",
                    "name": f"tool_{i}",
                    "arguments": draw(ARGS),
                }
            )
        else:
            out.append({"type": kind, "content": draw(TEXT)})
    return out


def _reply(parts: list[dict[str, Any]]) -> Reply:
    return reply_of(parts, "msg_1", "claude-x")


def _client(body: bytes, content_type: str) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        api_key="k", base_url="http://127.0.0.1:9", http_client=answering(body, content_type)
    )


def _expected(parts: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    kinds = {"text": "text", "reasoning": "thinking", "tool_call": "tool_use"}
    return [
        (kinds[p["type"]], p["arguments"] if p["type"] == "tool_call" else p["content"])
        for p in parts
    ]


def _got(blocks: list[Any]) -> list[tuple[str, Any]]:
    value = {"text": "text", "thinking": "thinking", "tool_use": "input"}
    return [(b.type, getattr(b, value[b.type])) for b in blocks]


_REQUEST = {"model": "claude-x", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}


@settings(max_examples=60, deadline=None)
@given(parts=_parts())
def test_every_recorded_part_is_a_block_of_its_own(parts: list[dict[str, Any]]) -> None:
    reply = _reply(parts)
    body = json.dumps(anthropic_messages.render_json(reply, parse_body(_REQUEST))).encode()
    message = _client(body, "application/json").messages.create(**_REQUEST)  # type: ignore[arg-type]
    assert _got(message.content) == _expected(parts)

    streamed = parse_body({**_REQUEST, "stream": True})
    sse = b"".join(anthropic_messages.render_sse(reply, streamed))
    with _client(sse, "text/event-stream").messages.stream(**_REQUEST) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()
    assert _got(final.content) == _expected(parts)
