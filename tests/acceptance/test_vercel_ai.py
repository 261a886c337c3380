"""The Vercel AI SDK's telemetry (exported by the OpenTelemetry JS OTLP exporter as JSON) read.

The cases are of the conformance corpus: the AI SDK's own spans, sent by its
Node process while ``generateText`` / ``streamText`` ran against the fake
model server.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import otel_replay
from otel_replay.runs.model import Run
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases" / "vercel_ai"
ERROR = "Error: le transporteur « Colis-Express » ne répond pas (délai dépassé)"


def _run(mode: str, tmp_path: Path) -> Run:
    target = tmp_path / "traces.jsonl"
    shutil.copyfile(CASES / mode / "traces.jsonl", target)
    (run,) = otel_replay.load(target)
    return run


def _sent_error(run: Run) -> Any:
    last = run.model_steps()[-1].model
    assert last is not None and last.input_messages is not None
    parts = [p for m in last.input_messages for p in m["parts"]]
    (part,) = [
        p
        for p in parts
        if p.get("id") == "call_track_shipment_5521" and p["type"] == "tool_call_response"
    ]
    return part["response"]


def test_legacy_ai_spans_read_as_model_calls_and_tool_calls(tmp_path: Path) -> None:
    # LegacyOpenTelemetry: ai.generateText.doGenerate with ai.prompt.messages and
    # ai.response.*, ai.toolCall spans with ai.toolCall.* attributes.
    run = _run("legacy", tmp_path)
    assert [s.name for s in run.model_steps()] == ["ai.generateText.doGenerate"] * 3
    tools = {s.tool.tool_name: s.tool for s in run.tool_steps() if s.tool is not None}
    assert tools["lookup_order"].arguments == {"order_id": "ORD-5521"}
    assert tools["lookup_order"].result["status"] == "en préparation"
    assert tools["track_shipment"].error is not None
    first = run.model_steps()[0].model
    assert first is not None and first.output_messages is not None
    calls = [p["id"] for p in first.output_messages[0]["parts"]]
    assert calls == ["call_lookup_order_5521", "call_track_shipment_5521"]
    assert run.kit.verdict == "full"


def test_a_tool_error_is_what_the_openai_provider_sent(tmp_path: Path) -> None:
    # The provider sends JSON.stringify({error: text}); the legacy prompt says the result
    # is an error-text, the GenAI integration keeps the text alone (then the failed tool
    # span tells which result it was, and the step says it was rewrapped).
    sent = next(
        m["content"]
        for line in (CASES / "sync" / "server.jsonl").read_text("utf-8").splitlines()
        for m in json.loads(json.loads(line)["body_raw"]).get("messages", [])
        if m.get("tool_call_id") == "call_track_shipment_5521"
    )
    assert json.loads(sent) == {"error": ERROR}
    assert _sent_error(_run("legacy", tmp_path)) == sent
    run = _run("sync", tmp_path)
    assert _sent_error(run) == sent
    notes = run.model_steps()[-1].model.derived  # type: ignore[union-attr]
    assert any('{"error": <text>}' in n for n in notes)
