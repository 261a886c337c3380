"""examples/client_only: one @otel_replay.tool per tool turns a client-only run from model-only to full."""

from __future__ import annotations

from pathlib import Path

import pytest

import otel_replay

pytest.importorskip("openinference.instrumentation.openai")

from examples.client_only.agent import main


def test_the_decorator_upgrades_the_verdict(tmp_path: Path) -> None:
    assert main(tmp_path) == {"plain": "model-only", "decorated": "full"}
    (run,) = otel_replay.load(tmp_path / "client_only_decorated.otlp")
    (tool,) = [s.tool for s in run.tool_steps() if s.tool is not None and not s.tool.derived]
    assert tool.call_id == "call_1"
    assert tool.result_payload is not None and tool.result_payload.status == "exact"
