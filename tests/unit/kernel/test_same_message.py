"""One definition of "the same message", asked by replay matching and by stitching alike."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.matchers import messages_key, model_rung
from otel_replay.same_message import conversation_keys, message_key
from tests.fixtures.data import DATA


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


def _cut(content: str, at: list[int]) -> list[dict[str, Any]]:
    bounds = [0, *sorted({min(a, len(content)) for a in at}), len(content)]
    return [{"type": "text", "content": content[a:b]} for a, b in itertools.pairwise(bounds)]


@settings(max_examples=80, deadline=None)
@given(
    content=st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=60),
    at=st.lists(st.integers(0, 60), max_size=6),
    other=st.text(st.characters(blacklist_categories=("Cs",)), max_size=60),
)
def test_a_text_in_parts_is_the_text_it_spells(content: str, at: list[int], other: str) -> None:
    """A message's text cut into parts anywhere (a Responses message's output_text parts, the
    client sending them back as it got them; the trace joined them) is the same message as the
    joined text, beside tool calls too; a text that spells something else is not."""
    parts = _cut(content, at)
    assert message_key({"role": "assistant", "parts": parts}) == message_key(
        text("assistant", content)
    )
    beside = {"role": "assistant", "parts": [*parts, *CALLS["parts"]]}
    joined = {"role": "assistant", "parts": [*text("assistant", content)["parts"], *CALLS["parts"]]}
    assert message_key(beside) == message_key(joined)
    if " ".join(other.split()) != " ".join(content.split()):
        assert message_key({"role": "assistant", "parts": parts}) != message_key(
            text("assistant", other)
        )


def test_the_parts_a_real_responses_message_came_in_are_its_text() -> None:
    """The assistant messages of a recorded case whose Responses messages came in five
    output_text parts: each is the same message as its text joined."""
    (run,) = otel_replay.load(
        DATA / "scenario_cases" / "openai_responses_text_parts" / "traces.binpb"
    )
    checked = 0
    for step in run.model_steps():
        assert step.model is not None
        for m in [*(step.model.input_messages or []), *(step.model.output_messages or [])]:
            texts = [p for p in m["parts"] if p["type"] == "text"]
            if len(texts) > 1:
                joined = "".join(p["content"] for p in texts)
                rest = [p for p in m["parts"] if p["type"] != "text"]
                one = {**m, "parts": [{"type": "text", "content": joined}, *rest]}
                assert message_key(m) == message_key(one)
                checked += 1
    assert checked >= 3
