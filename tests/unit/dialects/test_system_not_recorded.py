"""The OpenAI Agents SDK's OpenTelemetry bridge, on a Responses model, records each call's
input without the system instructions sent beside it: the verdict names them as not
recorded (whether the agent had any is not known), not as not set.

The real traces are the conformance cases (``tests/conformance``), recorded by running each
stack's agent: ``openai_agents_otel`` (the SDK's ``Agent`` traced by
``opentelemetry-instrumentation-openai-agents-v2``) on Chat Completions, whose generation
spans hold the system message, and on Responses, whose response spans do not; and every
other stack, whose tracing records the instructions sent.  Hypothesis draws, on the
bridge's real Responses spans, which of the attributes the reading rests on are there.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import attributes as A
from otel_replay.dialects.openai_agents import SCOPE
from otel_replay.runs.build import build_runs
from tests.conformance.checks import Case, check, find_cases
from tests.fixtures.records import span_record

CASES = [c for c in find_cases() if c.meta["content"]]


def _responses(case: Case) -> bool:
    return case.meta["stack"] == "openai_agents_otel" and case.meta.get("api") == "responses"


def test_the_corpus_holds_the_bridge_on_both_apis() -> None:
    bridge = [c for c in CASES if c.meta["stack"] == "openai_agents_otel"]
    assert any(map(_responses, bridge)) and not all(map(_responses, bridge))


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_only_the_bridge_on_responses_leaves_the_instructions_out(case: Case) -> None:
    responses = _responses(case)
    for run in check(case).runs:
        models = [s for s in run.model_steps() if s.model is not None]
        assert all(s.model is not None and s.model.system_not_recorded == responses for s in models)
        kit = run.kit
        named = {f"steps[{s.index}].system_instructions" for s in models}
        if responses:
            assert named <= set(kit.missing) and "system_instructions" not in kit.not_set
        else:
            assert not named & set(kit.missing)


def _real_responses_spans() -> list[dict[str, Any]]:
    found = []
    for case in CASES:
        if _responses(case):
            for run in check(case).runs:
                found += [dict(s.attributes) for s in run.model_steps()]
    assert found
    return found


SPANS = _real_responses_spans()


@settings(max_examples=40, deadline=None)
@given(
    at=st.integers(min_value=0, max_value=len(SPANS) - 1),
    has_input=st.booleans(),
    has_system=st.booleans(),
    has_id=st.booleans(),
)
def test_a_call_is_marked_when_its_input_is_there_without_instructions(
    at: int, has_input: bool, has_system: bool, has_id: bool
) -> None:
    attrs = {k: v for k, v in SPANS[at].items() if not k.startswith(A.PREFIX)}
    if not has_input:
        attrs.pop(A.INPUT_MESSAGES, None)
    if has_system:
        attrs[A.SYSTEM_INSTRUCTIONS] = '[{"type":"text","content":"Be brief."}]'
    if not has_id:
        attrs.pop(A.RESPONSE_ID, None)
    span = span_record("ab" * 16, "1" * 16, None, 0, "chat gpt-4o-mini", attrs, scope=SCOPE)
    (run,) = build_runs([span])
    (step,) = run.model_steps()
    assert step.model is not None
    assert step.model.system_not_recorded == (has_input and has_id and not has_system)
    missing = "steps[0].system_instructions" in run.kit.missing
    assert missing == step.model.system_not_recorded
