"""What a stub gives a stack's tool, where the stack's trace says how its tools' values
reached the model: every tool call of every recorded case of those stacks.

- Google ADK 2.x marks a tool span failed, with no exception event, when the tool returned
  a dict with an ``error`` member (or its ``on_tool_error_callback`` made one): the stub
  returns that dict, "code" and all, as the model was sent it, and raises nothing.
- Haystack records no tool span and sends a tool's str result as it is: the stub returns
  the very text the model was sent (JSON text included), which Haystack sends again as is.

The cases are real traces of the stacks (tests/conformance/cases, see its README).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from otel_replay.capture.hooks import ToolInvocation
from otel_replay.payload import codec as payload
from otel_replay.replay.tool_stubs import ToolStubs
from otel_replay.runs.load import read_runs
from otel_replay.runs.model import Run, Step
from tests.conformance.checks import Case, find_cases
from tests.conformance.test_conformance import NOT_RECORDED

#: (A case whose trace lost the values returned is refused: test_what_a_replay_lacks.)
ADK = [
    c
    for c in find_cases()
    if c.meta["stack"] == "google_adk" and c.meta["content"] and c.id not in NOT_RECORDED
]
HAYSTACK = [
    c
    for c in find_cases()
    if c.meta["stack"] in ("haystack_openinference", "haystack2_openinference")
    and c.meta["content"]
]


def _runs(case: Case) -> list[Run]:
    return list(read_runs([str(p) for p in case.trace_files()]))


def _sent(run: Run, call_id: str) -> Any:
    """The result the model was next sent for ``call_id``."""
    for step in run.steps:
        for message in (step.model.input_messages or []) if step.model else []:
            for part in message.get("parts") or []:
                if part.get("type") == "tool_call_response" and part.get("id") == call_id:
                    return part.get("response")
    raise AssertionError(f"no model input answers {call_id}")


def _sent_to(run: Run, step: Step) -> Any:
    """The result the model was next sent for the call ``step`` ran: by its call id, or,
    for a call the model gave no id, by its place among the tool steps of its turn and
    the results that answer that turn in the next model input."""
    assert step.tool is not None
    if step.tool.call_id:
        return _sent(run, step.tool.call_id)
    models = [s for s in run.steps if s.kind == "model" and s.model is not None]
    before = max(s.index for s in models if s.index < step.index)
    after = next(s for s in models if s.index > step.index)
    turn = [s for s in run.steps if s.kind == "tool" and before < s.index < after.index]
    assert after.model is not None
    messages = after.model.input_messages or []
    asked = max(
        i
        for i, m in enumerate(messages)
        if any(p.get("type") == "tool_call" for p in m.get("parts") or [])
    )
    results = [
        p.get("response")
        for m in messages[asked + 1 :]
        for p in m.get("parts") or []
        if p.get("type") == "tool_call_response"
    ]
    return results[turn.index(step)]


def _resolve(stubs: ToolStubs, step: Step) -> Any:
    tool = step.tool
    assert tool is not None
    args = tool.arguments if isinstance(tool.arguments, dict) else {}
    res = stubs.resolve(ToolInvocation(tool.tool_name, tool.call_id, args, payload.encode(args)))
    return res


def test_the_cases_are_there() -> None:
    assert len(ADK) >= 10 and len(HAYSTACK) >= 16


@pytest.mark.parametrize("case", ADK, ids=lambda c: c.id)
def test_an_adk_tool_that_returned_an_error_returns_it(case: Case) -> None:
    failed = 0
    for run in _runs(case):
        stubs = ToolStubs(run)
        for step in stubs.steps:
            tool = step.tool
            assert tool is not None
            res = _resolve(stubs, step)
            if tool.error is None:
                continue
            raised = any(e["name"] == "exception" for e in step.events)
            assert tool.error.returned is not raised, step.label()
            if not raised:
                failed += 1
                assert res.action == "return", (step.label(), res.error)
                assert res.value == _sent_to(run, step)
    if case.scenario.raising is not None or "errors" in case.id:
        assert failed > 0, "the case's failing tools were not found"


@pytest.mark.parametrize("case", HAYSTACK, ids=lambda c: c.id)
def test_a_haystack_tool_returns_the_text_the_model_was_sent(case: Case) -> None:
    answered = 0
    for run in _runs(case):
        stubs = ToolStubs(run)
        for step in stubs.steps:
            tool = step.tool
            assert tool is not None and tool.derived and tool.sent_as == "str_as_is"
            res = _resolve(stubs, step)
            if tool.error is not None:
                continue
            sent = _sent(run, str(tool.call_id))
            assert res.action == "return" and isinstance(res.value, str), step.label()
            assert res.value == (sent if isinstance(sent, str) else json.dumps(sent))
            answered += 1
    assert answered > 0
