"""A LangChain answer from the Responses API holds each of its calls once.

``ChatOpenAI(use_responses_api=True)`` keeps an answer's calls twice in the message:
as ``function_call`` content blocks (their arguments' text as the model wrote it) and in
``tool_calls`` (parsed).  An instrumentation that records the serialized message
(OpenInference's ``input.value``, read where its flattened attributes lose a tool
result's blocks) showed every call twice.  The case
``cases/langgraph_openinference/responses@seed-312`` was recorded so (arguments written
with spaces and newlines around them, an MCP image block as a tool result); here, drawn:
how many calls, their ids and arguments, how the text spells them, text beside them.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.dialects.langchain_serialized import message
from tests.fixtures.data import TESTS

CASE = TESTS / "conformance" / "cases" / "langgraph_openinference" / "responses@seed-312"

ids = st.text("abcdefXYZ0123456789_", min_size=3, max_size=12)
values = st.dictionaries(
    st.text(min_size=1, max_size=8), st.one_of(st.text(max_size=10), st.integers()), max_size=3
)
around = st.sampled_from(["", " ", "\n", "  ", " \n"])


@st.composite
def answers(draw: st.DrawFn) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    calls = draw(st.lists(st.tuples(ids, values), min_size=1, max_size=4, unique_by=lambda c: c[0]))
    blocks: list[dict[str, Any]] = []
    if draw(st.booleans()):
        blocks.append({"type": "text", "text": draw(st.text(max_size=20))})
    for n, (call_id, args) in enumerate(calls):
        indent = draw(st.sampled_from([None, 2]))
        text = draw(around) + json.dumps(args, indent=indent) + draw(around)
        blocks.append(
            {
                "type": "function_call",
                "call_id": call_id,
                "name": "t",
                "arguments": text,
                "id": f"fc_{n}",
            }
        )
    tool_calls = [{"name": "t", "args": a, "id": i, "type": "tool_call"} for i, a in calls]
    kwargs = {"content": blocks, "tool_calls": tool_calls, "type": "ai"}
    serialized = {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "AIMessage"],
        "kwargs": kwargs,
    }
    return serialized, calls


@settings(max_examples=100, deadline=None)
@given(drawn=answers())
def test_each_call_of_a_responses_answer_is_read_once(
    drawn: tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]],
) -> None:
    serialized, calls = drawn
    read = message(serialized)
    got = [(p["id"], p["arguments"]) for p in read["parts"] if p["type"] == "tool_call"]
    assert got == calls


def test_the_recorded_case_is_there() -> None:
    """The real trace the class was found in (its check is in the conformance test)."""
    assert (CASE / "traces.binpb").is_file()
