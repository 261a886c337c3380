"""Tool steps derived from messages only for the calls no tool span records.

A framework that traces its tools (LlamaIndex, LangChain.js) records tool
spans without the model's call id; a model that gives its calls no id (the
key left out, or empty) leaves nothing but the tool's name to tell which
calls the spans ran.  The real stacks' traces under such a model are
conformance cases (``cases/<stack>/<mode>@seed-27``); here many runs are drawn.
"""

from __future__ import annotations

import collections
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.runs.derived_tools import derive_tool_steps
from otel_replay.runs.model import ModelCall, Step, ToolCall

NAMES = ("lookup_order", "track_shipment", "open_ticket")


def _call(name: str, id_shape: str) -> dict[str, Any]:
    call: dict[str, Any] = {"type": "tool_call", "name": name, "arguments": {"order_id": "1"}}
    if id_shape == "empty":
        call["id"] = ""
    return call  # "absent": no id key at all


@settings(max_examples=200, deadline=None)
@given(
    id_shape=st.sampled_from(["absent", "empty"]),
    turns=st.lists(
        st.lists(st.tuples(st.sampled_from(NAMES), st.booleans()), min_size=1, max_size=3),
        min_size=1,
        max_size=4,
    ),
)
def test_a_call_without_id_that_a_tool_span_ran_is_not_derived_again(
    id_shape: str, turns: list[list[tuple[str, bool]]]
) -> None:
    """Each turn's calls ``(tool, traced)``: a traced call has a tool span without id.
    Derived steps are made for the untraced calls alone, as many per tool."""
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
    steps: list[Step] = []
    t = 0
    for pos, turn in enumerate(turns):
        calls = [_call(name, id_shape) for name, _ in turn]
        output = [{"role": "assistant", "parts": calls}]
        model = ModelCall(input_messages=list(history), output_messages=output)
        steps.append(Step("model", "chat", f"m{pos:015x}", None, "t" * 32, t, t + 1, model=model))
        t += 2
        for i, (name, traced) in enumerate(turn):
            if traced:
                tool = ToolCall(tool_name=name, arguments={"order_id": "1"}, result=f"r{pos}.{i}")
                steps.append(
                    Step("tool", name, f"t{pos:07x}{i:08x}", None, "t" * 32, t, t, tool=tool)
                )
                t += 1
        results = [
            {"type": "tool_call_response", "id": c.get("id", ""), "response": f"r{pos}.{i}"}
            for i, c in enumerate(calls)
        ]
        history += [*output, *({"role": "tool", "parts": [r]} for r in results)]
    answer = [{"role": "assistant", "parts": [{"type": "text", "content": "done"}]}]
    model = ModelCall(input_messages=list(history), output_messages=answer)
    steps.append(Step("model", "chat", "f" * 16, None, "t" * 32, t, t + 1, model=model))
    derived = derive_tool_steps(list(steps), steps)
    untraced = collections.Counter(name for turn in turns for name, traced in turn if not traced)
    got = collections.Counter(s.tool.tool_name for s in derived if s.tool is not None)
    assert got == untraced
