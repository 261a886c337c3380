"""A tool span's output the exporter dropped is missing, not None.

Where a stack records no output for a tool that returned None (the OpenAI Agents
SDK: its bridges leave the output out, and the model is sent ``"None"``), a tool
span with its arguments and no output is read as returning None.  But an
exporter also drops an output it cannot encode (an integer past 64 bits:
OpenInference's ``output.value`` of the real stack, recorded in
``cases/openai_agents_openinference/sync@seed-347713782``), and then the model
was sent the value's text: the result was lost, and the verdict names it.
Drawn: what the model was sent for the call (None's spellings, and other values).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

import otel_replay
from otel_replay.payload.attributes import Payload
from otel_replay.runs.derived_tools import unverified
from otel_replay.runs.model import ModelCall, Step, ToolCall
from otel_replay.runs.tool_spans import join_tool_spans
from tests.fixtures.data import TESTS

CASE = TESTS / "conformance" / "cases" / "openai_agents_openinference" / "sync@seed-347713782"
NONE_SENT = ("None", None, "null", "")


def _step(kind: str, pos: int, **kw: Any) -> Step:
    return Step(kind, f"{kind} {pos}", f"s{pos:015x}", None, "t" * 32, pos, pos + 1, **kw)


def _run(sent: Any) -> Step:
    """A model call, the tool span read as returning None, the next call sent ``sent``."""
    call = {"type": "tool_call", "id": "call_1", "name": "track", "arguments": {"n": 1}}
    asked = _step(
        "model", 0, model=ModelCall(output_messages=[{"role": "assistant", "parts": [call]}])
    )
    tool = ToolCall("track", "call_1", {"n": 1}, None, None, unverified({"n": 1}), unverified(None))
    ran = _step("tool", 1, tool=tool)
    answer = {"type": "tool_call_response", "id": "call_1", "response": sent}
    history = [{"role": "assistant", "parts": [call]}, {"role": "tool", "parts": [answer]}]
    after = _step("model", 2, model=ModelCall(input_messages=history))
    join_tool_spans([asked, ran, after])
    return ran


@given(st.sampled_from(NONE_SENT))
def test_a_tool_sent_as_none_returned_none(sent: Any) -> None:
    t = _run(sent).tool
    assert t is not None and t.result is None
    assert isinstance(t.result_payload, Payload)


@given(
    st.one_of(
        st.integers(min_value=2**63).map(str),
        st.text(min_size=1).filter(lambda s: s not in NONE_SENT),
        st.integers(),
        st.lists(st.text(max_size=5), min_size=1, max_size=3),
    )
)
def test_a_tool_sent_another_value_lost_its_output(sent: Any) -> None:
    t = _run(sent).tool
    assert t is not None and t.result is None and t.result_payload is None


def test_the_real_stack_s_lost_output_is_named_missing() -> None:
    (run,) = otel_replay.load(CASE / "traces.binpb")
    lost = [s for s in run.steps if s.kind == "tool" and s.tool and s.tool.result_payload is None]
    assert [s.tool.tool_name for s in lost if s.tool] == ["track_shipment"]
    assert f"steps[{lost[0].index}].result" in run.kit.missing
    assert run.kit.verdict != "full"
