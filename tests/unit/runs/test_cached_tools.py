"""A call CrewAI answered from its tool cache is a tool step that did not run the tool.

The case ``cases/crewai_v0/sync@seed-1411261800`` was recorded by running CrewAI
0.x's ReAct agent (OpenInference tracing) on the drawn scenario seed-1411261800:
``lookup_order`` is called for the order, then for another order, then for the
order again (the model calling a tool that failed once more): CrewAI answers the
third call from its cache, and a replay with stubbed tools sees no call for it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.runs.cached_tools import mark_cached_tools
from otel_replay.runs.model import Step, ToolError
from tests.fixtures.data import TESTS

CASE = TESTS / "conformance" / "cases" / "crewai_v0" / "sync@seed-1411261800" / "traces.binpb"


def _run() -> Any:
    (run,) = otel_replay.load(CASE)
    return run


def test_the_call_again_with_an_earlier_calls_arguments_is_not_run() -> None:
    steps = _run().tool_steps()
    assert [(s.tool.tool_name, s.tool.arguments["order_id"]) for s in steps] == [
        ("open_ticket", "ORD-4488"),
        ("lookup_order", "ORD-4488"),
        ("track_shipment", "ORD-4488"),
        ("lookup_order", "ORD-4488-2"),
        ("lookup_order", "ORD-4488"),
    ]
    assert [s.tool.not_run for s in steps] == [False, False, False, False, True]


_CALL = st.tuples(
    st.sampled_from(["lookup_order", "track_shipment"]),
    st.sampled_from(
        [{"order_id": "ORD-1"}, {"order_id": "ORD-2"}, {"a": 1, "b": 2}, {"b": 2, "a": 1}]
    ),
    st.sampled_from(["", " ", "\n", "  \n"]),  # whitespace around the Action Input
    st.booleans(),  # the tool raised
)


@settings(max_examples=60, deadline=None)
@given(calls=st.lists(_CALL, min_size=1, max_size=8), cache=st.booleans())
def test_a_call_is_not_run_when_an_earlier_one_returned_for_its_tool_and_arguments(
    calls: list[tuple[str, dict[str, Any], str, bool]], cache: bool
) -> None:
    """Drawn calls, each a copy of the recorded tool span with its tool, arguments (in their
    key order, with whitespace around) and outcome, under the recorded agent span with its
    cache on or off: not run exactly when CrewAI's cache holds the call (the tool's name
    and the arguments' JSON, key order included) from an earlier call that returned."""
    run = _run()
    agent = copy.deepcopy(next(s for s in run.steps if s.kind == "agent"))
    shown = agent.attributes["input.value"]
    assert " cache=True " in shown
    agent.attributes["input.value"] = shown.replace(" cache=True ", f" cache={cache} ")
    template = run.tool_steps()[0]
    steps: list[Step] = [agent]
    for i, (tool, args, space, raised) in enumerate(calls):
        step = copy.deepcopy(template)
        step = dataclasses.replace(
            step, span_id=f"s{i}", parent_span_id=agent.span_id, start_ns=agent.start_ns + i + 1
        )
        written = f"Action: {tool}\nAction Input:{space}{json.dumps(args)}{space}"
        step.attributes["input.value"] = json.dumps({"tool_string": written})
        step.attributes["tool.name"] = tool
        assert step.tool is not None
        step.tool = dataclasses.replace(
            step.tool,
            tool_name=tool,
            not_run=False,
            error=ToolError("_OTHER", "x") if raised else None,
        )
        steps.append(step)
    mark_cached_tools(steps)
    held: set[str] = set()
    for step, (tool, args, _, raised) in zip(steps[1:], calls, strict=True):
        key = f"{tool}-{json.dumps(args)}"
        assert step.tool is not None
        assert step.tool.not_run == (cache and not raised and key in held), (key, held)
        if cache and not raised:
            held.add(key)
