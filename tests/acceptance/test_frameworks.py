"""Tool I/O of frameworks that run the user's tools, recorded with no decorator in the agent code.

A real pydantic-ai ``Agent`` (its own instrumentation on, an OpenAI chat model
whose HTTP client is scripted) and a real openai-agents ``Agent`` run the
order-support scenario with two plain, undecorated tools; the spans go
through ``ReplaySpanProcessor`` and our file exporter; the file loads as a
``full`` run whose tool steps carry byte-exact payloads, and replays (pinned
model over the session's transport, stubbed tools) to the same answer while
the tools would now answer differently.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

import otel_replay
from otel_replay.capture import frameworks
from tests.fixtures.recording import recording

pytest.importorskip("pydantic_ai")
import openai
from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.toolsets.function import FunctionToolset

SYSTEM = "You are an order-support agent."
QUESTION = "Please cancel ORD-5521, I ordered it twice."
FINAL = "ORD-5521 is cancelled; $42.50 will be refunded."
# 1e-05: Python writes it so, pydantic-ai "1e-5" in its own display of the result.
DB: dict[str, Any] = {
    "ORD-5521": {"status": "processing", "total": 42.5, "items": ["mug"], "fee": 1e-05}
}


def _completion(n: int, message: dict[str, Any], finish: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": 1_700_000_000 + n,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 50 + n, "completion_tokens": 10, "total_tokens": 60 + n},
    }


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(args)},
    }


SCRIPT = [
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [_call("call_1", "lookup_order", {"order_id": "ORD-5521"})],
    },
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            _call("call_2", "cancel_order", {"order_id": "ORD-5521", "reason": "duplicate"})
        ],
    },
    {"role": "assistant", "content": FINAL},
]


def scripted() -> httpx2.MockTransport:
    turns = iter(range(len(SCRIPT)))

    def answer(request: httpx2.Request) -> httpx2.Response:
        n = next(turns)
        message = SCRIPT[n]
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        return httpx2.Response(200, json=_completion(n, message, finish))

    return httpx2.MockTransport(answer)


@pytest.fixture(autouse=True)
def _instrumented() -> Iterator[None]:
    assert frameworks.instrument_pydantic_ai()
    yield
    frameworks.uninstrument_framework("pydantic_ai", "openai_agents")


def pydantic_agent(transport: Any, db: dict[str, Any]) -> Any:
    """The agent as a user writes it: plain tools, no otel-replay decorator."""

    client = openai.AsyncOpenAI(
        api_key="unused",
        base_url="http://model.test/v1",
        http_client=httpx2.AsyncClient(transport=transport),
    )
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    agent = Agent(
        model, name="order-support", instructions=SYSTEM, model_settings={"temperature": 0}
    )

    @agent.tool
    def lookup_order(ctx: RunContext[None], order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        return db.get(order_id, {"error": "not found"})

    @agent.tool
    def cancel_order(ctx: RunContext[None], order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet."""
        if order_id not in db:
            return {"error": "not found"}
        return {
            "order_id": order_id,
            "cancelled": True,
            "refund": db[order_id]["total"],
            "reason": reason,
        }

    return agent


def record_pydantic(path: Path) -> str:

    with recording(path) as provider:
        agent = pydantic_agent(scripted(), DB)
        agent.instrument = InstrumentationSettings(tracer_provider=provider)
        return str(agent.run_sync(QUESTION).output)


def test_pydantic_ai_tools_are_recorded_byte_exactly(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    assert record_pydantic(path) == FINAL
    (run,) = otel_replay.load(path)
    assert run.kit.verdict == "full", run.kit.missing
    tools = run.tool_steps()
    assert [t.tool.tool_name for t in tools if t.tool] == ["lookup_order", "cancel_order"]
    lookup, cancel = (t.tool for t in tools)
    assert lookup is not None and cancel is not None
    assert lookup.call_id == "call_1" and cancel.call_id == "call_2"
    assert lookup.arguments == {"order_id": "ORD-5521"}
    assert lookup.result == DB["ORD-5521"]
    assert cancel.result == {
        "order_id": "ORD-5521",
        "cancelled": True,
        "refund": 42.5,
        "reason": "duplicate",
    }
    for t in (lookup, cancel):
        assert t.arguments_payload is not None and t.arguments_payload.status == "exact"
        assert t.result_payload is not None and t.result_payload.status == "exact"
    # One span per call: pydantic-ai's execute_tool span, enriched.
    spans = [s for s in run.steps if s.kind == "tool"]
    assert len(spans) == 2
    assert all(s.attributes.get("logfire.msg", "").startswith("running tool") for s in spans)


def test_pydantic_ai_run_replays_with_stubbed_tools(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    record_pydantic(path)
    with otel_replay.replay(path) as session:
        # The database has changed since: a live tool would answer "not found".
        agent = pydantic_agent(session.async_transport(), {})
        answer = str(agent.run_sync(QUESTION).output)
        assert session.check_output(answer)
    assert answer == FINAL
    assert session.report() is not None


def test_without_the_integration_tools_are_unverified(tmp_path: Path) -> None:
    # Put back here, not by monkeypatch: the session's monkeypatch is undone after this
    # module's fixture takes the integration out, and would put its wrapper back.
    original = FunctionToolset.__dict__["call_tool"]
    FunctionToolset.call_tool = original.__wrapped__  # type: ignore[method-assign]
    path = tmp_path / "run.otlp"
    try:
        record_pydantic(path)
    finally:
        FunctionToolset.call_tool = original  # type: ignore[method-assign]
    (run,) = otel_replay.load(path)
    for t in run.tool_steps():
        assert t.tool is not None and t.tool.result_payload is not None
        assert t.tool.result_payload.status == "unverified"


def test_a_decorated_tool_inside_is_not_recorded_twice(tmp_path: Path) -> None:

    @otel_replay.tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        return {"id": order_id}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart("lookup_order", {"order_id": "A"}, "c1")])
        return ModelResponse(parts=[TextPart("done")])

    path = tmp_path / "run.otlp"
    with recording(path) as provider:
        agent = Agent(FunctionModel(model), tools=[lookup_order])
        agent.instrument = InstrumentationSettings(tracer_provider=provider)
        assert agent.run_sync("go").output == "done"
    (run,) = otel_replay.load(path)
    (step,) = run.tool_steps()
    assert step.tool is not None and step.tool.result == {"id": "A"}
    assert step.tool.result_payload is not None and step.tool.result_payload.status == "exact"


# --- openai-agents -------------------------------------------------------------------------


def openai_agent(transport: Any, db: dict[str, Any]) -> Any:
    """The agent as a user writes it: the SDK's @function_tool, nothing of otel-replay."""
    from agents import Agent, ModelSettings, function_tool
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

    client = openai.AsyncOpenAI(
        api_key="unused",
        base_url="http://model.test/v1",
        http_client=httpx2.AsyncClient(transport=transport),
        max_retries=0,
    )

    @function_tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id."""
        return db.get(order_id, {"error": "not found"})

    @function_tool
    def cancel_order(order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet."""
        if order_id not in db:
            return {"error": "not found"}
        return {
            "order_id": order_id,
            "cancelled": True,
            "refund": db[order_id]["total"],
            "reason": reason,
        }

    return Agent(
        name="order-support",
        instructions=SYSTEM,
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
        tools=[lookup_order, cancel_order],
        model_settings=ModelSettings(temperature=0),
    )


@pytest.fixture
def agents_sdk() -> Any:
    pytest.importorskip("agents")
    bridge = pytest.importorskip("openinference.instrumentation.openai_agents")
    assert frameworks.instrument_openai_agents()
    return bridge.OpenAIAgentsInstrumentor()


def test_openai_agents_tools_are_recorded_byte_exactly_and_replay(
    agents_sdk: Any, tmp_path: Path
) -> None:
    from agents import Runner

    path = tmp_path / "run.otlp"
    with recording(path) as provider:
        agents_sdk.instrument(tracer_provider=provider)
        try:
            answer = Runner.run_sync(openai_agent(scripted(), DB), QUESTION).final_output
        finally:
            agents_sdk.uninstrument()
    assert answer == FINAL
    (run,) = otel_replay.load(path)
    assert run.kit.verdict == "full", run.kit.missing
    tools = [s.tool for s in run.tool_steps()]
    # One step per call: OpenInference's TOOL span, enriched.
    assert [(t.tool_name, t.call_id) for t in tools if t] == [
        ("lookup_order", "call_1"),
        ("cancel_order", "call_2"),
    ]
    for t in tools:
        assert t is not None
        assert t.arguments_payload is not None and t.arguments_payload.status == "exact"
        assert t.result_payload is not None and t.result_payload.status == "exact"
    assert tools[0] is not None and tools[0].result == DB["ORD-5521"]

    with otel_replay.replay(path) as session:
        replayed = Runner.run_sync(
            openai_agent(session.async_transport(), {}), QUESTION
        ).final_output
        assert session.check_output(replayed)
    assert replayed == FINAL
