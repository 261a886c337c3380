"""A tool's error as the model was sent it, where the trace keeps only its text.

Built from conformance cases: pydantic-ai 2.68 (a ``ModelRetry`` reaches the
OpenAI model as ``{"error": <text>}``, its messages keep the text), and
pydantic-ai 1.0 (the retry prompt goes out as the text it records).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import otel_replay
from otel_replay.runs.model import Run
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases"
CALL = "call_track_shipment_5521"


def _run(case: str, tmp_path: Path) -> Run:
    shutil.copyfile(CASES / case / "traces.binpb", tmp_path / "traces.binpb")
    (run,) = otel_replay.load(tmp_path / "traces.binpb")
    return run


def _sent(case: str) -> Any:
    for line in (CASES / case / "server.jsonl").read_text("utf-8").splitlines():
        for m in json.loads(json.loads(line)["body_raw"]).get("messages", []):
            if m.get("tool_call_id") == CALL:
                return m["content"]
    raise AssertionError("no result sent for the failed call")


def _recorded(run: Run) -> Any:
    last = run.model_steps()[-1].model
    assert last is not None
    parts = [p for m in last.input_messages or [] for p in m["parts"]]
    (part,) = [p for p in parts if p["type"] == "tool_call_response" and p["id"] == CALL]
    return part["response"]


def test_a_retried_tool_is_what_pydantic_ai_sent(tmp_path: Path) -> None:
    run = _run("pydantic_ai/sync", tmp_path)
    sent = json.loads(_sent("pydantic_ai/sync"))
    assert set(sent) == {"error"}
    assert _recorded(run) == sent
    notes = run.model_steps()[-1].model.derived  # type: ignore[union-attr]
    assert any("as the provider sends them" in n for n in notes)


def test_before_2_60_the_retry_prompt_went_out_as_recorded(tmp_path: Path) -> None:
    run = _run("pydantic_ai_v1/sync", tmp_path)
    sent = _sent("pydantic_ai_v1/sync")
    assert sent.endswith("Fix the errors and try again.")
    assert _recorded(run) == sent
    (track,) = [s.tool for s in run.tool_steps() if s.tool and s.tool.call_id == CALL]
    # The span's error names its type alone: its text is what the model was told.
    assert track is not None and track.error is not None
    assert track.error.message == sent
