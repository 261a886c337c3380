"""Agent frameworks' tool spans (LangChain/LangGraph, LlamaIndex) read as the model's calls.

Each test reads a trace a framework's own tracing exported (the conformance
cases), as a user would: a copy in ``tmp_path`` read with ``load()`` or the CLI.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import otel_replay

CASES = Path(__file__).resolve().parent / "conformance" / "cases"


def _copy(case: str, tmp_path: Path) -> Path:
    target = tmp_path / "traces.binpb"
    shutil.copyfile(CASES / case / "traces.binpb", target)
    return target


def test_hidden_tool_input_and_output_are_missing_not_the_placeholder(tmp_path: Path) -> None:
    (run,) = otel_replay.load(_copy("langgraph_openinference/no_content", tmp_path))
    for step in run.tool_steps():
        assert step.tool is not None
        assert step.attributes["input.value"] == "__REDACTED__"
        assert step.tool.arguments is None and step.tool.result is None
        assert f"steps[{step.index}].arguments" in run.kit.missing
        if step.tool.error is None:
            assert f"steps[{step.index}].result" in run.kit.missing
    assert run.kit.verdict != "full"
