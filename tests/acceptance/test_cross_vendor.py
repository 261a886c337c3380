"""Across vendors: a run recorded through one provider's client replays into another's.

A run recorded through the Anthropic client is served to an agent written on
the OpenAI SDK (Chat Completions and Responses), a run recorded through the
OpenAI client (and one recorded by a pydantic-ai Agent) to an agent written
on the Anthropic SDK, and a pydantic-ai recording to a plain OpenAI-SDK loop:
tool calls, tool results, text, usage and ids translated between the wire
formats.  The replaying agent sends the conversation in its own shape (system
prompt as a message or a field, tool results as role ``tool`` or as
``tool_result`` blocks of a user message, text beside tool calls), and the
matcher ladder must still take it for the recorded one; each test names the
rung that matched.  Against ``otel-replay serve`` and the in-process
transport, with the real SDKs.
"""

from __future__ import annotations

import json
import runpy
from typing import Any

import httpx2
import pytest

import otel_replay
from tests.fixtures.data import SCENARIO_SCRIPT
from tests.fixtures.sdk_agents import AGENTS, Sent
from tests.unit.replay.test_serve import (
    DATA,
    _stubbed_tool,
    base_url,
    recorded_results,
    requests_of,
    servers,
)

__all__ = ["servers"]  # the module-scoped fixture, shared with test_serve

SCENARIO = runpy.run_path(str(SCENARIO_SCRIPT))
CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"


def first_request(path: str) -> dict[str, Any]:
    """The scenario's first request, as an agent on that API writes it."""
    system, user = SCENARIO["SYSTEM_PROMPT"], SCENARIO["USER_PROMPT"]
    if path == CHAT:
        return {
            "model": "gpt-4o-mini",
            "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}],
            "tools": SCENARIO["OPENAI_TOOLS"],
        }
    if path == RESPONSES:
        tools = [{"type": "function", **t["function"]} for t in SCENARIO["OPENAI_TOOLS"]]
        return {
            "model": "gpt-4o-mini",
            "instructions": system,
            "input": [{"role": "user", "content": user}],
            "tools": tools,
        }
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": system,
        "messages": [{"role": "user", "content": user}],
        "tools": SCENARIO["ANTHROPIC_TOOLS"],
    }


#: (recorded case, the API the replaying agent speaks, SDK mode)
PAIRS = [
    ("anthropic_openllmetry/sync", CHAT, "sync"),
    ("anthropic_openllmetry/sync", CHAT, "stream"),
    ("anthropic_openllmetry/sync", CHAT, "async_stream"),
    ("anthropic_openllmetry/sync", RESPONSES, "sync"),
    ("anthropic_openinference/stream_helper", CHAT, "async"),
    ("otel_openai_v2/chat_sync", MESSAGES, "sync"),
    ("otel_openai_v2/chat_sync", MESSAGES, "stream"),
    ("otel_openai_v2/chat_sync", MESSAGES, "stream_helper"),
    ("otel_openai_v2/chat_sync", MESSAGES, "async_stream"),
    ("openinference_openai/responses_sync", MESSAGES, "async"),
    ("pydantic_ai/v6_async", CHAT, "sync"),
    ("pydantic_ai/v6_stream", CHAT, "stream"),
    ("pydantic_ai/v6_async", MESSAGES, "stream_helper"),
]
IDS = [f"{case}->{path.rsplit('/', 1)[1]}-{mode}" for case, path, mode in PAIRS]
#: Pairs the default tier leaves to the slow tier: a third streaming mode of one direction.
_SLOW = {2, 7, 8}
TIERED = [
    pytest.param(*pair, id=IDS[i], marks=pytest.mark.slow)
    if i in _SLOW
    else pytest.param(*pair, id=IDS[i])
    for i, pair in enumerate(PAIRS)
]


def expected_rungs(case: str) -> list[str]:
    """The rung each request matches on.

    Between the Anthropic and OpenAI clients, ``exact``: once normalized to
    GenAI messages, a system field and a system message, ``tool_result``
    blocks and ``tool`` messages, JSON text and values are the same request.
    pydantic-ai records its tool results as values and the replaying loop
    sends the recorded JSON text with other spacing: ``messages`` from the
    second request on.
    """
    if case.startswith("pydantic_ai/"):
        return ["exact", "messages", "messages"]
    return ["exact", "exact", "exact"]


class Seen:
    """Request bodies and the rung header of each answer (httpx event hooks)."""

    def __init__(self) -> None:
        self.sent = Sent()
        self.rungs: list[str] = []

    def client(self, mode: str, transport: Any = None) -> Any:
        def response(r: httpx2.Response) -> None:
            if "x-otel-replay-rung" in r.headers:
                self.rungs.append(r.headers["x-otel-replay-rung"])

        async def aresponse(r: httpx2.Response) -> None:
            response(r)

        if mode.startswith("async"):
            hooks = {"request": [self.sent.async_hook], "response": [aresponse]}
            return httpx2.AsyncClient(transport=transport, event_hooks=hooks)
        return httpx2.Client(
            transport=transport, event_hooks={"request": [self.sent], "response": [response]}
        )


def check_usage_and_calls(run: Any, seen: Seen, path: str) -> None:
    """The tool calls the agent sent back are the recorded ones (ids, names, arguments)."""
    body = seen.sent.bodies[-1]
    calls = []
    if path == MESSAGES:
        for m in body["messages"]:
            if m["role"] == "assistant":
                calls += [
                    (b["id"], b["name"], b["input"])
                    for b in m["content"]
                    if b["type"] == "tool_use"
                ]
    elif path == CHAT:
        for m in body["messages"]:
            for c in m.get("tool_calls") or []:
                calls.append(
                    (c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                )
    else:
        calls = [
            (i["call_id"], i["name"], json.loads(i["arguments"]))
            for i in body["input"]
            if i.get("type") == "function_call"
        ]
    recorded = [
        (p["id"], p["name"], p["arguments"])
        for s in run.model_steps()
        for p in s.model.output_messages[0]["parts"]
        if p["type"] == "tool_call"
    ]
    assert calls == recorded


@pytest.mark.parametrize(("case", "path", "mode"), TIERED)
def test_server_serves_a_recording_to_the_other_vendors_sdk(
    case: str, path: str, mode: str, servers: dict[str, str]
) -> None:
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    results = recorded_results(requests_of(case))
    seen = Seen()
    answer = AGENTS[path](
        base_url(servers[case], path),
        mode,
        first_request(path),
        lambda call_id, name, args: results[call_id],
        seen.client(mode),
    )
    assert answer == run.final_output()
    assert len(seen.sent.bodies) == len(run.model_steps())
    check_usage_and_calls(run, seen, path)
    # The requests carry the system prompt, tool results and assistant turns in the
    # other vendor's encoding.
    assert seen.rungs == expected_rungs(case)


@pytest.mark.parametrize(("case", "path", "mode"), PAIRS, ids=IDS)
def test_transport_serves_a_recording_to_the_other_vendors_sdk(
    case: str, path: str, mode: str
) -> None:
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    seen = Seen()
    with otel_replay.replay(run) as session:
        transport = session.async_transport() if mode.startswith("async") else session.transport()
        answer = AGENTS[path](
            None, mode, first_request(path), _stubbed_tool, seen.client(mode, transport)
        )
        session.check_output(answer)
    report = session.report()
    assert report.matched, str(report)
    assert [k for _, k, _ in report.replayed] == ["model", "tool", "model", "tool", "model"]
    rungs = [h for _, k, h in report.replayed if k == "model"]
    assert rungs == [f"pinned:{r}" for r in seen.rungs]
    assert seen.rungs == expected_rungs(case)
    check_usage_and_calls(run, seen, path)


def test_usage_and_ids_are_translated() -> None:
    """An Anthropic answer read by the OpenAI SDK: usage, id, finish reason, text beside calls."""
    import openai

    (run,) = otel_replay.load(str(DATA / "anthropic_openllmetry/sync/traces.otlp.jsonl"))
    step = run.model_steps()[0]
    assert step.model is not None
    with otel_replay.replay(run, require_complete=False) as session:
        client = openai.OpenAI(
            api_key="unused", http_client=httpx2.Client(transport=session.transport())
        )
        first = first_request(CHAT)
        got = client.chat.completions.create(**first)
    assert got.id == step.model.response_id
    assert got.usage is not None
    assert got.usage.prompt_tokens == step.model.usage["input_tokens"]
    assert got.usage.completion_tokens == step.model.usage["output_tokens"]
    assert got.choices[0].finish_reason == "tool_calls"
    assert got.choices[0].message.content == "Let me look up order ORD-5521 for you."
    (call,) = got.choices[0].message.tool_calls or []
    assert (call.id, call.function.name) == ("toolu_lookup_0001", "lookup_order")
    assert json.loads(call.function.arguments) == {"order_id": "ORD-5521"}


def test_changed_tool_result_diverges_across_vendors(servers: dict[str, str]) -> None:
    """An Anthropic recording, an OpenAI agent whose tool answers otherwise: 409 at step 2."""
    import openai

    case = "anthropic_openllmetry/sync"
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    results = {
        k: v.replace("processing", "shipped")
        for k, v in recorded_results(requests_of(case)).items()
    }
    seen = Seen()
    with pytest.raises(openai.APIStatusError) as info:
        AGENTS[CHAT](
            base_url(servers[case], CHAT),
            "sync",
            first_request(CHAT),
            lambda call_id, name, args: results[call_id],
            seen.client("sync"),
        )
    assert info.value.status_code == 409
    error = info.value.response.json()["error"]
    assert error["step"] == run.model_steps()[1].index
    assert "shipped" in error["divergence"]["diff"]
