"""Tools traced with ``@otel_replay.tool`` in an agent with no span around its run.

A client-only instrumentation (OpenInference's, on the real OpenAI SDK) traces
each model call in a trace of its own, and each decorated tool lands in a
trace of its own too.  The calls are stitched into one conversation; each
tool run joins the conversation whose model asked for it (by name and
arguments, between that call and the next), so a run keeps its real tool
spans instead of each tool becoming a one-step run beside it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
from openinference.instrumentation.openai import OpenAIInstrumentor

import otel_replay
from tests.conformance import scenario
from tests.conformance.server import ModelServer
from tests.fixtures.recording import instrumented

lookup_order = otel_replay.tool(scenario.lookup_order)
track_shipment = otel_replay.tool(scenario.track_shipment)
open_ticket = otel_replay.tool(scenario.open_ticket)
TOOLS = {"lookup_order": lookup_order, "track_shipment": track_shipment, "open_ticket": open_ticket}


def ask(client: openai.OpenAI, question: str) -> str:
    """A hand-written loop: no span of its own around the run."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": scenario.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(6):
        response = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=scenario.openai_tools(), temperature=0
        )
        message = response.choices[0].message.model_dump(exclude_none=True)
        messages.append(message)
        if not message.get("tool_calls"):
            return str(message["content"])
        for c in message["tool_calls"]:
            name, args = c["function"]["name"], json.loads(c["function"]["arguments"])
            try:
                result = json.dumps(TOOLS[name](**args), ensure_ascii=False)
            except RuntimeError as e:
                result = json.dumps({"error": str(e)}, ensure_ascii=False)
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    raise AssertionError("the agent did not answer")


def test_lone_tool_runs_join_the_conversation_that_asked_for_them(tmp_path: Path) -> None:
    out = tmp_path / "runs.otlp"
    with instrumented(out, OpenAIInstrumentor()), ModelServer(tmp_path / "server.jsonl") as server:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        answers = [ask(client, q) for q in scenario.QUESTIONS]
    assert answers == [scenario.final_answer(scenario.order_in(q)) for q in scenario.QUESTIONS]
    runs = otel_replay.load(out)
    assert len(runs) == 2  # one per question: no one-step run per tool
    for run, question in zip(runs, scenario.QUESTIONS, strict=True):
        order = scenario.order_in(question)
        tools = [s.tool for s in run.tool_steps() if s.tool is not None]
        assert [t.tool_name for t in tools] == ["lookup_order", "track_shipment", "open_ticket"]
        assert not any(t.derived for t in tools)  # the real spans, byte-exact
        assert tools[0].arguments == {"order_id": order}
        assert tools[0].call_id == f"call_lookup_order_{scenario.digits(order)}"
        assert tools[1].error is not None
        assert len(run.model_steps()) == 3
        assert run.kit.verdict == "full"
    # Read a window (a trace) at a time, as big dumps are, the runs are the same.
    batches = list(otel_replay.iter_runs(str(out), window_bytes=1))
    got = sorted((r.run_id, [s.span_id for s in r.steps]) for b in batches for r in b)
    assert got == sorted((r.run_id, [s.span_id for s in r.steps]) for r in runs)
