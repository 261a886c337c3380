"""The pydantic-ai adapter: recorded runs replayed into a real pydantic-ai ``Agent``.

The recordings are pydantic-ai's own traces of the order-support scenario
(data/thirdparty/pydantic_ai, instrumentation versions 1, 2, 5 and 6, Chat
and Responses, sync and stream).  An agent built like the one that ran
(same instructions, same tools, real pydantic-ai) gets ``ReplayModel`` by
``Agent.override`` or by its constructor and ``ReplayTools`` as a capability:
it must walk the recorded path in every way pydantic-ai runs an agent
(``run_sync``, ``run``, ``run_stream``, ``iter``), make the recorded tool
calls (answered from the recording, the real tools never run) and end with
the recorded answer.  A changed prompt or tool result diverges at the step
that shows it.
"""

from __future__ import annotations

import asyncio
import json
import runpy
from typing import Any

import pytest

import otel_replay
from tests.fixtures.data import SCENARIO_SCRIPT
from tests.unit.replay.test_serve import DATA

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent, RunContext
from pydantic_ai.messages import ModelResponse, ToolCallPart

from otel_replay import messages as M
from otel_replay.replay.adapters.pydantic_ai import ReplayModel, ReplayTools

SCENARIO = runpy.run_path(str(SCENARIO_SCRIPT))
CASES = ["v6_async", "v6_stream", "v6_responses_sync", "v5_sync", "v2_sync", "v1_sync", "v1_stream"]
MODES = ["run_sync", "run", "run_stream", "iter"]


def make_agent(live: list[str], model: Any = "test") -> Agent[None, str]:
    """The scenario's agent, as the recorded script built it; ``live`` collects real tool runs."""
    agent = Agent(
        model,
        name="order-support",
        instructions=SCENARIO["SYSTEM_PROMPT"],
        model_settings={"temperature": 0},
    )

    @agent.tool
    def lookup_order(ctx: RunContext[None], order_id: str) -> dict[str, Any]:
        """Look up an order by its id and return its status, items and total."""
        live.append("lookup_order")
        return {"order_id": order_id, "status": "shipped"}

    @agent.tool
    def cancel_order(ctx: RunContext[None], order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet and issue a refund."""
        live.append("cancel_order")
        return {"order_id": order_id, "cancelled": False}

    return agent


def run_agent(
    agent: Agent[None, str], mode: str, prompt: str, capabilities: list[Any]
) -> tuple[str, list[Any]]:
    """The final answer and all messages of one run in ``mode``."""
    if mode == "run_sync":
        result = agent.run_sync(prompt, capabilities=capabilities)
        return result.output, result.all_messages()

    async def go() -> tuple[str, list[Any]]:
        if mode == "run":
            result = await agent.run(prompt, capabilities=capabilities)
            return result.output, result.all_messages()
        if mode == "run_stream":
            async with agent.run_stream(prompt, capabilities=capabilities) as streamed:
                text = "".join([d async for d in streamed.stream_text(delta=True)])
                messages = streamed.all_messages()
            return text, messages
        async with agent.iter(prompt, capabilities=capabilities) as run:
            async for _ in run:
                pass
            assert run.result is not None
            return run.result.output, run.result.all_messages()

    return asyncio.run(go())


def recorded_tool_calls(run: Any) -> list[tuple[str, str | None, Any]]:
    return [(s.tool.tool_name, s.tool.call_id, s.tool.arguments) for s in run.tool_steps()]


def tool_calls(messages: list[Any]) -> list[tuple[str, str | None, Any]]:
    return [
        (p.tool_name, p.tool_call_id, p.args_as_dict())
        for m in messages
        if isinstance(m, ModelResponse)
        for p in m.parts
        if isinstance(p, ToolCallPart)
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", CASES)
def test_agent_override_replays_the_recorded_run(case: str, mode: str) -> None:
    path = DATA / "pydantic_ai" / case / "traces.otlp.jsonl"
    (run,) = otel_replay.load(str(path))
    live: list[str] = []
    agent = make_agent(live)
    with otel_replay.replay(run) as session:
        model = ReplayModel(session)
        with agent.override(model=model):
            answer, messages = run_agent(
                agent, mode, SCENARIO["USER_PROMPT"], [ReplayTools(session)]
            )
        assert session.check_output(answer)
    assert answer == run.final_output()
    assert tool_calls(messages) == recorded_tool_calls(run)
    assert live == []  # every tool answered from the recording
    model_steps = [s.index for s in run.model_steps()]
    assert [i for i, _ in model.served] == model_steps
    assert model.served[0][1] == "exact"  # the first request is the recorded one, part for part
    report = session.report()
    assert report.matched
    # Streamed, a call's arguments are text: data format 1 records them as parsed values
    # only, so they are re-spelled, and the report says so once per step.
    respelled = [n for n in report.notes if "served as compact JSON" in n]
    calls = [
        s for s in run.model_steps() if s.model and M.tool_calls(s.model.output_messages or [])
    ]
    assert len(respelled) == (len(calls) if mode == "run_stream" and case.startswith("v1") else 0)
    assert [h for _, k, h in report.replayed if k == "model"] == [
        f"pinned:{r}" for _, r in model.served
    ]
    # usage and response ids come back as recorded
    responses = [m for m in messages if isinstance(m, ModelResponse)]
    recorded = [s.model for s in run.model_steps()]
    assert [r.usage.input_tokens for r in responses] == [
        m.usage["input_tokens"] for m in recorded if m
    ]
    if mode != "run_stream":
        assert [r.provider_response_id for r in responses] == [m.response_id for m in recorded if m]


def test_without_pydantic_ais_private_instructions_helper(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The helper may move in a later pydantic-ai: the requests still match as they did."""
    import pydantic_ai._instrumentation as private
    import pydantic_ai.models.function  # noqa: F401  (it imports the helper itself)

    from otel_replay.replay.adapters import pydantic_ai as adapter

    path = DATA / "pydantic_ai" / "v6_async" / "traces.otlp.jsonl"
    (run,) = otel_replay.load(str(path))
    sent: list[Any] = []
    real = adapter.request_messages

    def spy(*args: Any) -> Any:
        sent.append(real(*args))
        return sent[-1]

    monkeypatch.setattr(adapter, "request_messages", spy)

    def replayed() -> tuple[str, list[tuple[int, str]], list[Any]]:
        sent.clear()
        with otel_replay.replay(run) as session:
            model, agent = ReplayModel(session), make_agent([])
            with agent.override(model=model):
                answer, _ = run_agent(
                    agent, "run_sync", SCENARIO["USER_PROMPT"], [ReplayTools(session)]
                )
        return answer, model.served, list(sent)

    with_helper = replayed()
    monkeypatch.delattr(private, "get_instructions")
    with pytest.raises(ImportError):
        from pydantic_ai._instrumentation import get_instructions  # noqa: F401
    assert replayed() == with_helper
    answer, served, requests = with_helper
    assert answer == run.final_output() and served[0][1] == "exact"
    # The system instructions of every request, as recorded.
    assert [system for _, system in requests] == [
        s.model.system_instructions for s in run.model_steps() if s.model
    ]


def test_agent_built_with_the_replay_model() -> None:
    path = DATA / "pydantic_ai" / "v6_stream" / "traces.otlp.jsonl"
    (run,) = otel_replay.load(str(path))
    live: list[str] = []
    with otel_replay.replay(run) as session:
        agent = make_agent(live, model=ReplayModel(session))
        answer, _ = run_agent(agent, "run_stream", SCENARIO["USER_PROMPT"], [ReplayTools(session)])
    assert answer == run.final_output() and live == []


def test_changed_prompt_diverges_at_the_first_model_step() -> None:
    path = DATA / "pydantic_ai" / "v6_async" / "traces.otlp.jsonl"
    (run,) = otel_replay.load(str(path))
    agent = make_agent([])
    first = run.model_steps()[0]
    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(run) as session:
            with agent.override(model=ReplayModel(session)):
                agent.run_sync("Cancel ORD-5521 please.", capabilities=[ReplayTools(session)])
    err = info.value
    assert (err.index, err.span_id, err.kind) == (first.index, first.span_id, "model")
    assert "Cancel ORD-5521 please." in err.diff
    assert "check the status of my order ORD-5521" in err.diff


def test_changed_tool_result_diverges_at_the_second_model_step() -> None:
    """Tools run live (the stub is off for them): their other result shows at the next request."""
    path = DATA / "pydantic_ai" / "v5_sync" / "traces.otlp.jsonl"
    (run,) = otel_replay.load(str(path))
    live: list[str] = []
    agent = make_agent(live)
    second = run.model_steps()[1]
    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(run, tools="live") as session:
            with agent.override(model=ReplayModel(session)):
                agent.run_sync(SCENARIO["USER_PROMPT"], capabilities=[ReplayTools(session)])
    assert live == ["lookup_order"]
    err = info.value
    assert (err.index, err.span_id) == (second.index, second.span_id)
    assert "shipped" in err.diff and "processing" in err.diff


def test_a_tool_call_the_recording_lacks_diverges_at_the_tool_step() -> None:
    path = DATA / "pydantic_ai" / "v6_async" / "traces.otlp.jsonl"
    (run,) = otel_replay.load(str(path))
    with otel_replay.replay(run, require_complete=False) as session:
        tools = ReplayTools(session)
        call = ToolCallPart(
            tool_name="lookup_order", args={"order_id": "ORD-0000"}, tool_call_id="x"
        )

        async def handler(args: Any) -> Any:
            raise AssertionError("the real tool must not run")

        with pytest.raises(otel_replay.ReplayDivergence) as info:
            asyncio.run(
                tools.wrap_tool_execute(
                    None, call=call, tool_def=None, args=call.args_as_dict(), handler=handler
                )
            )
        session.divergence = None
    assert info.value.kind == "tool" and info.value.name == "lookup_order"
    assert info.value.index == run.tool_steps()[0].index
    assert json.dumps("ORD-0000") in info.value.diff


@pytest.mark.parametrize("case", ["v6_async", "v6_stream"])
def test_pydantic_ai_openai_model_replays_through_the_transport(case: str) -> None:
    """pydantic-ai's own OpenAI model, its HTTP answered by the session's transport."""
    import httpx2
    import openai
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    path = DATA / "pydantic_ai" / case / "traces.otlp.jsonl"
    (run,) = otel_replay.load(str(path))
    live: list[str] = []
    agent = make_agent(live)
    with otel_replay.replay(run) as session:
        http = httpx2.AsyncClient(transport=session.async_transport())
        client = openai.AsyncOpenAI(api_key="unused", http_client=http)
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        mode = "run_stream" if case.endswith("stream") else "run"
        with agent.override(model=model):
            answer, messages = run_agent(
                agent, mode, SCENARIO["USER_PROMPT"], [ReplayTools(session)]
            )
    assert answer == run.final_output() and live == []
    assert tool_calls(messages) == recorded_tool_calls(run)
