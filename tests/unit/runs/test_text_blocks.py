"""A LangChain chat model's answer in several text blocks, recorded as its first, read whole.

The case ``cases/langgraph_v0_openllmetry/responses@seed-39`` was recorded by running the
LangGraph 0.x agent on ``ChatOpenAI`` with the Responses API under OpenLLMetry's LangChain
instrumentation, on the drawn scenario seed-39, whose model server sends the final answer's
text in five ``output_text`` parts: the model span records the first (LangChain's
``ChatGeneration.text``), the ``RunnableSequence`` task span around it the whole message.
Drawn around that recorded run: the text split into any number of blocks (empty ones too),
calls beside the text or not, the message returned by the runnable or by the graph node
above it; and the cases the repair must leave alone: a first block that is not the recorded
text, calls that are not the recorded ones.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.runs.text_blocks import whole_text_blocks
from tests.conformance import scenario
from tests.fixtures.data import TESTS

CASE = TESTS / "conformance" / "cases" / "langgraph_v0_openllmetry" / "responses@seed-39"
ENTITY_OUTPUT = "traceloop.entity.output"


def _run() -> Any:
    path = CASE / "traces.binpb"
    assert path.is_file(), path  # the recorded case is the test's data: missing, it fails
    (run,) = otel_replay.load(path)
    return run


def test_the_recorded_answer_reads_whole() -> None:
    run = _run()
    scn = scenario.scenario_for(39)
    want = scn.final_answer(scenario.order_in(scn.questions[0]))
    assert run.final_output() == want
    last = run.model_steps()[-1]
    texts = [p["content"] for p in last.model.output_messages[0]["parts"]]
    assert len(texts) == 5 and "".join(texts) == want
    assert any("text blocks" in d for d in last.model.derived)


def _ai_message(blocks: list[str], calls: list[str]) -> dict[str, Any]:
    return {
        "lc": 1,
        "type": "constructor",
        "id": ["langchain", "schema", "messages", "AIMessage"],
        "kwargs": {
            "content": [{"type": "text", "text": b, "annotations": []} for b in blocks],
            "type": "ai",
            "tool_calls": [
                {"name": "lookup_order", "args": {"order_id": c}, "id": c} for c in calls
            ],
        },
    }


_TEXT = st.text(alphabet=st.sampled_from('ab ß日€\\"\n{}'), max_size=6)


@settings(max_examples=80, deadline=None)
@given(
    blocks=st.lists(_TEXT, min_size=1, max_size=6).filter(lambda b: b[0] != ""),
    calls=st.lists(st.sampled_from(["call_1", "call_2", "fc_3"]), max_size=2, unique=True),
    by_node=st.booleans(),
    other_first=st.booleans(),
    other_calls=st.booleans(),
)
def test_an_answer_in_blocks_reads_whole_where_its_caller_returned_it(
    blocks: list[str], calls: list[str], by_node: bool, other_first: bool, other_calls: bool
) -> None:
    """The recorded model step's answer, as the instrumentation records it (the first block,
    then the calls), and the task span around it returning the message: read whole exactly
    when the returned message's first block is the recorded text and its calls the recorded
    ones."""
    run = copy.deepcopy(_run())
    step = run.model_steps()[-1]
    by_id = {s.span_id: s for s in run.steps}
    runnable = by_id[step.parent_span_id]
    node = by_id[runnable.parent_span_id]
    recorded_calls = [
        {"type": "tool_call", "id": c, "name": "lookup_order", "arguments": {"order_id": c}}
        for c in calls
    ]
    first = blocks[0] + ("x" if other_first else "")
    step.model.output_messages = [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": first}, *recorded_calls],
            "finish_reason": "",
        }
    ]
    step.model.derived = []
    returned_calls = ["other"] if other_calls else calls
    message = _ai_message(blocks, returned_calls)
    runnable.attributes.pop(ENTITY_OUTPUT, None)
    node.attributes.pop(ENTITY_OUTPUT, None)
    if by_node:
        node.attributes[ENTITY_OUTPUT] = json.dumps({"outputs": {"messages": [message]}})
    else:
        runnable.attributes[ENTITY_OUTPUT] = json.dumps({"outputs": message})

    done = whole_text_blocks(run.steps)

    read = step.model.output_messages[0]["parts"]
    whole = len(blocks) > 1 and not other_first and not other_calls
    assert done == int(whole)
    if whole:
        assert [p["content"] for p in read if p["type"] == "text"] == blocks
        assert [p for p in read if p["type"] == "tool_call"] == recorded_calls
        assert step.model.derived
    else:
        assert read == [{"type": "text", "content": first}, *recorded_calls]
        assert step.model.derived == []
