"""One definition of "the same message", asked by replay matching and by stitching alike."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

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


@settings(max_examples=200, deadline=None)
@given(
    results=st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=6, unique=True),
    data=st.data(),
)
def test_the_results_of_one_turn_count_in_any_order(results: list[str], data: Any) -> None:
    """An agent that runs a turn's tools at once sends their results as they finish."""
    calls = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": f"c{i}", "name": "t", "arguments": {"i": i}}
            for i in range(len(results))
        ],
    }
    sent = [{"role": "tool", "parts": [result(f"c{i}", r)]} for i, r in enumerate(results)]
    order = data.draw(st.permutations(range(len(results))))
    recorded = [text("user", "q"), calls, *sent, text("user", "next")]
    replayed = [text("user", "q"), calls, *[sent[i] for i in order], text("user", "next")]
    assert conversation_keys(recorded) == conversation_keys(replayed)
    assert messages_key(recorded) == messages_key(replayed)
    same_order = list(order) == sorted(order)
    assert model_rung(recorded, None, replayed, None) == ("exact" if same_order else "messages")
    # Still the same results: one changed is another conversation, ...
    changed = [*replayed]
    changed[2] = {"role": "tool", "parts": [result("c", results[order[0]] + "!")]}
    assert model_rung(recorded, None, changed, None) not in ("exact", "messages")
    # ... and so is a result moved past the user's next turn.
    moved = [*replayed[:2], *replayed[3:-1], text("user", "next"), replayed[2]]
    assert conversation_keys(recorded) != conversation_keys(moved)
