"""Haystack's Responses generator: an assistant message of its input is rebuilt as it sends it
(its reasoning, its tool calls, then its texts joined with spaces), not in the order the
message holds them.

The trace is ``tests/data/scenario_cases/haystack_responses_text_beside_calls`` (the
conformance scenario ``seed-3747`` recorded with the ``haystack_openinference`` stack on the
Responses API, Haystack 3.4.0): the model writes text beside three parallel tool calls, which
Haystack sends back on the next turns as the calls, then the text.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.dialects.haystack import as_responses_input
from tests.fixtures.data import DATA
from tests.fixtures.ground_truth import recorded, sent

CASE = DATA / "scenario_cases" / "haystack_responses_text_beside_calls"


def test_each_model_input_is_the_request_as_sent() -> None:
    (run,) = otel_replay.load(CASE / "traces.binpb")
    lines = (CASE / "server.jsonl").read_text(encoding="utf-8").splitlines()
    requests = [{**r, "body_json": json.loads(r["body_raw"])} for r in map(json.loads, lines)]
    steps = run.model_steps()
    assert len(steps) == len(requests) == 3
    for step, request in zip(steps, requests, strict=True):
        assert step.model is not None
        got = recorded(step.model.input_messages, step.model.system_instructions)
        assert got == sent(request), step.label()


_PART = st.one_of(
    st.builds(lambda t: {"type": "text", "content": t}, st.text(max_size=8)),
    st.builds(lambda r: {"type": "reasoning", "content": r}, st.text(max_size=8)),
    st.builds(
        lambda i: {"type": "tool_call", "id": f"call_{i}", "name": "t", "arguments": {}},
        st.integers(0, 99),
    ),
)


@settings(max_examples=100, deadline=None)
@given(parts=st.lists(_PART, max_size=7), role=st.sampled_from(["assistant", "user", "tool"]))
def test_an_assistant_message_is_ordered_as_haystack_sends_it(
    parts: list[dict[str, Any]], role: str
) -> None:
    message = {"role": role, "parts": parts}
    out = as_responses_input(message)
    if role != "assistant":
        assert out == message
        return
    kinds = [p["type"] for p in out["parts"]]
    texts = [p["content"] for p in parts if p["type"] == "text"]
    assert kinds == sorted(kinds, key=["reasoning", "tool_call", "text"].index)
    assert [p for p in out["parts"] if p["type"] != "text"] == [
        *(p for p in parts if p["type"] == "reasoning"),
        *(p for p in parts if p["type"] == "tool_call"),
    ]
    assert [p["content"] for p in out["parts"] if p["type"] == "text"] == (
        [" ".join(texts)] if texts else []
    )
