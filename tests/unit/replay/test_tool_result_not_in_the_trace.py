"""A tool call the model asked for whose result is in no record: the replay names the step.

The class: a model step's answer made a call, and no tool span records what the tool
returned, nor does any model request recorded after it (the request that carried it
was cut from the trace: OpenLLMetry's Anthropic instrumentation exports no span for a
stream cut partway).  In process, the agent runs the call again: the replay refused
with "recorded tool calls are all used up", which says neither which call nor why.  It
now names the model step that asked for it and what the trace lacks.  Drawn: runs of
model steps whose answers make calls (ids or none, arguments drawn), a subset of which
have a tool step; the real trace is ``anthropic_openllmetry/anthropic_stream@seed-32``
(recorded with the server cutting the second request's stream).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.divergence import ReplayDivergence
from otel_replay.replay.tool_stubs import ToolStubs
from otel_replay.runs.model import ModelCall, Run, Step, ToolCall
from tests.conformance.checks import Case
from tests.fixtures.data import TESTS

_CALL = st.tuples(
    st.sampled_from(["lookup_order", "track_shipment", "open_ticket"]),
    st.dictionaries(st.sampled_from(["order_id", "reason", "n"]), st.text(max_size=6), max_size=2),
    st.booleans(),  # an id, or none
    st.booleans(),  # a tool step records it
)


def _run(turns: list[list[tuple[str, dict[str, Any], bool, bool]]]) -> tuple[Run, list[Any]]:
    root = Step("agent", "invoke_agent a", "root", None, "t", 0, 10**6)
    steps, calls = [root], []
    for t, turn in enumerate(turns):
        parts = [
            {"type": "tool_call", "id": f"c{t}-{i}" if has_id else "", "name": n, "arguments": a}
            for i, (n, a, has_id, _) in enumerate(turn)
        ]
        model = ModelCall(output_messages=[{"role": "assistant", "parts": parts}])
        step = Step("model", "chat", f"m{t:015x}", "root", "t", t * 100, t * 100 + 1, model=model)
        steps.append(step)
        for i, ((name, args, _, kept), part) in enumerate(zip(turn, parts, strict=True)):
            calls.append((step, name, args, kept))
            if kept:
                tool = ToolCall(name, part["id"] or None, args, result="r")
                start = t * 100 + 2 + i
                steps.append(
                    Step("tool", name, f"t{t:07x}{i:08x}", "root", "t", start, start, tool=tool)
                )
    root.children = steps[1:]
    for index, s in enumerate(steps):
        s.index = index
    return Run("t", ["t"], [root], steps), calls


@settings(max_examples=200, deadline=None)
@given(turns=st.lists(st.lists(_CALL, min_size=1, max_size=3), min_size=1, max_size=4))
def test_a_call_without_a_recorded_result_names_the_step_that_asked_for_it(
    turns: list[list[tuple[str, dict[str, Any], bool, bool]]],
) -> None:
    run, calls = _run(turns)
    recorded = {(n, repr(sorted(a.items()))) for _, n, a, kept in calls if kept}
    for _, name, args, kept in calls:
        if kept or (name, repr(sorted(args.items()))) in recorded:
            continue  # a tool step of the same call answers it
        got = ToolStubs(run).take(name, args)
        assert isinstance(got, ReplayDivergence)
        first = next(s for s, n, a, _ in calls if (n, a) == (name, args))
        assert f"{first.label()} asked for it" in str(got)
        assert "is not in the trace" in str(got)


def test_the_call_before_a_stream_cut_from_the_trace_names_its_step() -> None:
    case = Case(
        TESTS / "conformance" / "cases" / "anthropic_openllmetry" / "anthropic_stream@seed-32"
    )
    (run,) = otel_replay.load(*case.trace_files())
    (asked,) = [s for s in run.model_steps() if s.model and s.model.output_messages]
    call = next(
        p for m in asked.model.output_messages for p in m["parts"] if p["type"] == "tool_call"
    )
    got = ToolStubs(run).take(call["name"], call["arguments"])
    assert isinstance(got, ReplayDivergence)
    assert f"{asked.label()} asked for it" in str(got) and "is not in the trace" in str(got)
