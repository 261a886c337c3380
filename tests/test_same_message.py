"""One definition of "the same message", asked by replay matching and by stitching alike."""

from __future__ import annotations

from typing import Any

from otel_replay.replay.matchers import messages_key, model_rung
from otel_replay.same_message import conversation_keys, message_key


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def result(call_id: str, response: Any) -> dict[str, Any]:
    return {"type": "tool_call_response", "id": call_id, "response": response}


CALLS = {
    "role": "assistant",
    "parts": [
        {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"id": 1}},
        {"type": "tool_call", "id": "call_2", "name": "track", "arguments": {"id": 1}},
    ],
}


def test_what_a_message_says_is_what_counts() -> None:
    assert message_key(text("user", "  where is   my order?\n")) == message_key(
        text("user", "where is my order?")
    )
    assert message_key(text("developer", "be brief")) == message_key(text("system", "be brief"))
    # A tool message's name and a call id are the instrumentation's, not what was said.
    named = {"role": "tool", "name": "lookup", "parts": [result("call_9", '{"id": 1}')]}
    assert message_key(named) == message_key({"role": "user", "parts": [result("x", {"id": 1})]})
    assert message_key(text("assistant", "")) is None
    assert message_key(text("user", "where is my order?")) != message_key(
        text("user", "where is my other order?")
    )


def test_a_conversation_is_its_turns_however_they_were_split() -> None:
    grouped = [
        text("user", "where?"),
        CALLS,
        {"role": "user", "parts": [result("a", {"ok": 1}), result("b", "down")]},
    ]
    # The Responses API's items, one message each; OpenAI's one tool message per result.
    split = [
        text("user", "where?"),
        {**CALLS, "parts": CALLS["parts"][:1]},
        {**CALLS, "parts": CALLS["parts"][1:]},
        {"role": "tool", "parts": [result("call_1", '{"ok": 1}')]},
        {"role": "tool", "parts": [result("call_2", "down")]},
    ]
    assert conversation_keys(grouped) == conversation_keys(split)
    assert messages_key(grouped) == messages_key(split)
    assert model_rung(grouped, None, split, None) == "messages"
    changed = [*split[:-1], {"role": "tool", "parts": [result("call_2", "up")]}]
    assert model_rung(grouped, None, changed, None) == "any"
