"""Each call's result, read off later inputs, when call ids repeat across a run's steps.

Model servers give ids of many shapes; some restart them in every answer
(``call_0`` at each step) or give none (the empty id), so an id names a call
of a run only with the step that made it.  The traces of real stacks under
such ids are conformance cases (``cases/<stack>/<mode>@seed-N``); here many
conversations of every id shape are drawn.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.runs.model import ModelCall, Step
from otel_replay.runs.sent_results import NOT_SENT, SentResults

#: Id shapes: unique in the run, restarting in every answer, none at all, one for all.
SHAPES = ("unique", "counter", "empty", "same")


def _id(shape: str, step: int, index: int) -> str:
    return {
        "unique": f"call_{step}_{index}",
        "counter": f"call_{index}",
        "empty": "",
        "same": "toolu_same",
    }[shape]


def _step(pos: int, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]]) -> Step:
    model = ModelCall(input_messages=inputs, output_messages=outputs)
    return Step(
        "model", f"chat {pos}", f"{pos:016x}", None, "t" * 32, pos * 10, pos * 10 + 5, model=model
    )


@settings(max_examples=100, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    calls_per_step=st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=5),
    grouped=st.booleans(),
)
def test_each_call_gets_the_result_sent_for_it_whatever_its_id(
    shape: str, calls_per_step: list[int], grouped: bool
) -> None:
    """A run of model steps, each with parallel calls, each answered in the next input
    (one tool message per result, or all in one message as Anthropic groups them): every
    call of every step gets its own result, never another step's of the same id."""
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
    steps, made = [], []
    for pos, n in enumerate(calls_per_step):
        calls = [
            {"type": "tool_call", "id": _id(shape, pos, i), "name": f"t{i}", "arguments": {}}
            for i in range(n)
        ]
        output = [{"role": "assistant", "parts": calls}]
        steps.append(_step(pos, list(history), output))
        results = [
            {"type": "tool_call_response", "id": c["id"], "response": f"r{pos}.{i}"}
            for i, c in enumerate(calls)
        ]
        made.append(calls)
        tool_messages = (
            [{"role": "user", "parts": results}]
            if grouped
            else [{"role": "tool", "parts": [r]} for r in results]
        )
        history += output + tool_messages
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]
    steps.append(_step(len(calls_per_step), list(history), answer))
    sent = SentResults(steps)
    for pos, calls in enumerate(made):
        for i, call in enumerate(calls):
            k = [c["id"] for c in calls[:i]].count(call["id"])
            assert sent.of(pos, call["id"], k) == f"r{pos}.{i}", (shape, pos, i)
    last = len(calls_per_step)
    assert sent.of(last, _id(shape, last, 0)) is NOT_SENT, "the answer's step made no call"


def test_a_result_whose_call_the_input_lacks_is_still_read() -> None:
    """An input recorded without the assistant turn (only the results): each id's result
    is the one sent, as when ids were unique."""
    first = _step(0, [], [{"role": "assistant", "parts": [{"type": "tool_call", "id": "a"}]}])
    results = [{"type": "tool_call_response", "id": "a", "response": "ra"}]
    second = _step(1, [{"role": "tool", "parts": results}], [])
    assert SentResults([first, second]).of(0, "a") == "ra"
