"""Dialects on real third-party traces: every model step against what the model server saw.

Each case under data/thirdparty/ (see its README) holds the spans one
instrumentation wrote and the requests the fake model server received and
answered.  A model step must carry exactly the conversation the server got
and exactly what it answered; tool steps (where the framework ran the tools)
the arguments and results the conversation shows; content-off cases keep
model and usage and no content.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import otel_replay
from otel_replay.runs.model import Step
from tests.fixtures.data import TESTS, found
from tests.fixtures.ground_truth import answered, recorded, sent, tool_calls, value
from tests.fixtures.scenario import scenario_agent

DATA = TESTS / "data" / "thirdparty"
CASES = [p.parent.relative_to(DATA).as_posix() for p in found(DATA, "*/*/traces.otlp.jsonl")]
CONTENT_OFF = [c for c in CASES if c.endswith("/no_content")]
WITH_CONTENT = [c for c in CASES if c not in CONTENT_OFF]
#: Frameworks that run the tools themselves, inside the traced run.
TOOL_SPANS = ("pydantic_ai/", "openai_agents_", "otel_openai_v2/genai_util_tool_spans")
#: What a stack does not record (README): the check that stands in for equality.
NOT_RECORDED = {
    "anthropic_sdk/stream": {"output"},
    "openai_agents_otel/responses_async": {"input", "request_model"},
    # Only the response's model (llm.model_name) is recorded.
    "openai_agents_openinference/responses_async": {"request_model"},
    "openai_agents_openinference/responses_stream": {"request_model"},
    # Event mode: the span keeps provider and usage only, no model name at all.
    "anthropic_openllmetry/events_sync": {"model"},
}


def load(case: str) -> otel_replay.Runs:
    """The case's spans, and its log records where the stack sent content as events."""
    files = [DATA / case / name for name in ("traces.otlp.jsonl", "logs.otlp.jsonl")]
    return otel_replay.load(*[f for f in files if f.exists()])


def load_case(case: str) -> tuple[list[Step], list[dict[str, Any]]]:
    runs = load(case)
    steps = sorted((s for run in runs for s in run.steps), key=lambda s: s.start_ns)
    requests = [json.loads(line) for line in (DATA / case / "server_requests.jsonl").open()]
    return steps, requests


def test_every_dialect_has_cases() -> None:
    dialects = {c.split("/")[0] for c in CASES}
    assert dialects >= {
        "otel_openai_v2",
        "openinference_openai",
        "openllmetry_openai",
        "pydantic_ai",
        "openai_agents_openinference",
        "openai_agents_otel",
        "anthropic_openllmetry",
        "anthropic_openinference",
        "anthropic_sdk",
    }


@pytest.mark.parametrize("case", WITH_CONTENT)
def test_model_steps_hold_what_the_server_received_and_answered(case: str) -> None:
    steps, requests = load_case(case)
    models = [s for s in steps if s.kind == "model"]
    assert len(models) == len(requests)
    for step, request in zip(models, requests, strict=True):
        m = step.model
        assert m is not None
        gaps = NOT_RECORDED.get(case, set())
        if "model" in gaps:
            assert m.request_model is None and m.response_model is None
        else:
            asked = m.response_model if "request_model" in gaps else request["body_json"]["model"]
            assert m.request_model == asked
        got_in = recorded(m.input_messages, m.system_instructions)
        got_out = recorded(m.output_messages)
        if "input" in gaps:
            # Only the first user message: that much must be right.
            assert got_in == [i for i in sent(request) if i[0] == "user"][:1]
        else:
            assert got_in == sent(request), step.label()
        if "output" in gaps and step is models[-1]:
            # Not recorded, and no later call sent it back: missing.
            assert m.output_messages is None and m.usage.get("output_tokens")
        elif "output" in gaps:
            # Not recorded, but the next call sent the turn back: it stands in, noted.
            assert got_out == answered(request), step.label()
            assert any("not recorded" in note for note in m.derived)
        else:
            assert got_out == answered(request), step.label()


@pytest.mark.parametrize("case", [c for c in WITH_CONTENT if c.startswith(TOOL_SPANS)])
def test_tool_steps_carry_arguments_and_results(case: str) -> None:
    steps, requests = load_case(case)
    tools = [s.tool for s in steps if s.kind == "tool" and s.tool is not None]
    got = [(t.tool_name, value(t.arguments), value(t.result)) for t in tools]
    assert got == tool_calls(requests)
    assert len(got) == 2


@pytest.mark.parametrize("case", CONTENT_OFF)
def test_content_off_keeps_model_and_usage_only(case: str) -> None:
    steps, requests = load_case(case)
    models = [s for s in steps if s.kind == "model"]
    assert len(models) == len(requests)
    for step in models:
        m = step.model
        assert m is not None and m.request_model and m.usage.get("input_tokens")
        # pydantic-ai keeps the message structure, with every text and value left out.
        for _, item in recorded(m.input_messages) + recorded(m.output_messages):
            assert item[0] != "text" and item[-1] is None
    for step in steps:
        if step.tool is not None:
            assert step.tool.arguments is None and step.tool.result is None


def expected_verdict(case: str) -> str:
    if case in CONTENT_OFF:
        return "inspect-only"
    if "input" in NOT_RECORDED.get(case, set()):
        return "model-only"  # an input recorded without its conversation is named missing
    # Client-only stacks: tool steps are derived from the messages.
    return "full" if case.startswith(TOOL_SPANS) else "model-only"


@pytest.mark.parametrize("case", CASES)
def test_each_case_is_one_run_with_its_verdict(case: str) -> None:
    runs = load(case)
    if case in CONTENT_OFF and not case.startswith(TOOL_SPANS):
        # One trace per call and no messages to follow: nothing ties the calls together.
        assert len(runs) == 3
    else:
        assert len(runs) == 1
    assert {r.kit.verdict for r in runs} == {expected_verdict(case)}
    assert all(r.replayable == (r.kit.verdict == "full") for r in runs)


@pytest.mark.parametrize(
    "case", [c for c in WITH_CONTENT if not NOT_RECORDED.get(c, set()) & {"input", "output"}]
)
def test_each_case_replays_with_pinned_model_and_stubbed_tools(case: str) -> None:
    (run,) = load(case)
    first = run.model_steps()[0].model
    assert first is not None and first.input_messages
    # openai-agents sends a tool's dict result to the model as str(dict).
    as_sent = (lambda r: str(json.loads(r))) if case.startswith("openai_agents") else str
    with otel_replay.replay(run) as session:
        answer = scenario_agent(session.model, first.input_messages[0]["role"] != "system", as_sent)
        session.check_output(answer)
    report = session.report()
    assert report.matched, str(report)
    assert [k for _, k, _ in report.replayed] == ["model", "tool", "model", "tool", "model"]
    assert all(how == "stub" for _, kind, how in report.replayed if kind == "tool")
    requests = [json.loads(line) for line in (DATA / case / "server_requests.jsonl").open()]
    final = answered(requests[-1])
    assert answer == "".join(item[1] for _, item in final if item[0] == "text")
