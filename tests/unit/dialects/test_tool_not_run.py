"""A call the stack answered itself, without running the tool, is marked so and expected by no
replay (CrewAI answers a call made again with the same arguments in its own words).

The trace is ``tests/data/scenario_cases/crewai_v0_retried_tool`` (the conformance scenario
``seed-1767`` recorded with the ``crewai_v0`` stack in its ``sync`` mode), made by running CrewAI
0.x with OpenInference's instrumentation on a scenario whose model calls a tool again after
it failed: CrewAI had already run the failed call again itself, so it answered the model's
second call with its ``task_repeated_usage`` text and never ran the tool.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import attributes as A
from otel_replay.dialects.crewai import DIALECT, SCOPE
from otel_replay.dialects.span import SpanView
from otel_replay.replay.tool_stubs import ToolStubs
from otel_replay.runs.model import Step
from tests.fixtures.data import DATA

CASE = DATA / "scenario_cases" / "crewai_v0_retried_tool"
#: CrewAI's ``task_repeated_usage`` text (0.x and 1.x), as its translations hold it.
REPEATED = (
    "I tried reusing the same input, I must stop using this action input. "
    "I'll try something else instead.\n\n"
)


def _run() -> otel_replay.Run:
    (run,) = otel_replay.load(CASE / "traces.binpb")
    return run


def test_the_call_crewai_answered_itself_is_not_run_and_no_replay_waits_for_it() -> None:
    run = _run()
    tools = [s for s in run.steps if s.tool is not None]
    assert [(s.tool.tool_name, s.tool.not_run) for s in tools if s.tool] == [
        ("lookup_order", False),
        ("track_shipment", False),
        ("track_shipment", True),
        ("open_ticket", False),
    ]
    not_run = tools[2]
    assert not_run.tool is not None and str(not_run.tool.result).startswith(REPEATED.strip())
    stubs = ToolStubs(run)
    # Every call the tools really answered is awaited by a replay; the one CrewAI answered is
    # not (in a replay CrewAI answers it again without calling the tool).
    assert stubs.unreplayed() == [tools[0], tools[1], tools[3]]


def _tool_span(step: Step, output: str) -> SpanView:
    return SpanView({**step.attributes, "output.value": output}, name=step.name, scope=SCOPE)


@settings(max_examples=60, deadline=None)
@given(
    after=st.sampled_from(["", "\nYou ONLY have access to the following tools", "\n"])
    | st.text(max_size=40),
    other=st.text(max_size=120),
)
def test_only_crewais_answer_to_a_repeated_call_marks_a_step_not_run(
    after: str, other: str
) -> None:
    """CrewAI's words, whatever follows them (the reminder of the tools it appends to every
    third result, other text), mark the step; any other output of the real span does not."""
    step = next(s for s in _run().steps if s.tool is not None)
    assert DIALECT.fill(_tool_span(step, REPEATED + after)).get(A.TOOL_NOT_RUN)
    if not other.startswith(REPEATED[:40]):
        assert A.TOOL_NOT_RUN not in DIALECT.fill(_tool_span(step, other))
