"""LangChain.js under OpenInference's LangChain.js instrumentation, read as the server saw it.

The cases are of the conformance corpus: the spans a LangChain.js
``createAgent`` exported (the OpenTelemetry JS exporter's JSON encoding)
while it ran against the fake model server, whose log is the ground truth.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import otel_replay
from tests.conformance.checks import Case, check
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases" / "langchain_js"


def _flattened(path: Path, key: str) -> list[object]:
    """The values of attribute ``key`` on the trace's ChatOpenAI spans."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        for rs in json.loads(line)["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    if span["name"] == "ChatOpenAI":
                        out += [a["value"] for a in span["attributes"] if a["key"] == key]
    return out


def test_messages_the_flattening_lost_are_read_from_the_serialized_body(
    tmp_path: Path,
) -> None:
    # The JS instrumentation flattens text content only (the system prompt, sent as
    # content blocks, keeps its role alone) and no tool-call id; input.value and
    # output.value hold LangChain's serialized messages, whole.
    target = tmp_path / "traces.jsonl"
    shutil.copyfile(CASES / "sync" / "traces.jsonl", target)
    assert not _flattened(target, "llm.input_messages.0.message.content")
    assert not _flattened(target, "llm.output_messages.0.message.tool_calls.0.tool_call.id")
    (run,) = otel_replay.load(target)
    first = run.model_steps()[0].model
    assert first is not None and first.input_messages is not None
    system = first.input_messages[0]
    assert system["role"] == "system"
    assert system["parts"][0]["content"].startswith("You are the support agent")
    ids = [
        p.get("id")
        for m in first.output_messages or []
        for p in m["parts"]
        if p["type"] == "tool_call"
    ]
    assert ids == ["call_lookup_order_5521", "call_track_shipment_5521"]
    for mode in ("sync", "stream", "responses", "two_runs_concurrent"):
        assert check(Case(CASES / mode)).exact, mode
