"""The command line: show (tree and JSON contract), check, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

import otel_replay
from otel_replay.cli.main import cli
from tests.fixtures.cli import cli_process
from tests.fixtures.contract import MODEL_KEYS, RUN_KEYS, STEP_KEYS
from tests.fixtures.recording import recording


@otel_replay.tool
def lookup_order(query: str) -> list[dict[str, str]]:
    return [{"order_id": "4421", "status": "shipped"}]


def record(path: Path, *, tool_result: bool = True) -> None:
    with recording(path), otel_replay.agent_run("support", input="where?") as run:
        messages = [{"role": "user", "content": "where is my order?"}]
        with otel_replay.model_call(
            provider="openai",
            model="gpt-4o",
            messages=messages,
            system="Be brief.",
            tools=[{"type": "function", "name": "lookup_order"}],
            temperature=0.0,
            seed=1,
        ) as call:
            call.record(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "function": {
                                "name": "lookup_order",
                                "arguments": '{"query": "my order"}',
                            },
                        }
                    ],
                },
                input_tokens=12,
                output_tokens=7,
            )
        with otel_replay.tool_call_id("c1"):
            lookup_order("my order")
        run.record("Order #4421 is shipped.")


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.otlp"
    record(path)
    return path


def test_show_json_follows_the_contract(trace_file: Path) -> None:
    result = CliRunner().invoke(cli, ["show", "--json", str(trace_file)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    (run,) = doc["runs"]
    for key in RUN_KEYS:
        assert key in run
    assert run["replayable"] is True and run["trace_ids"] == [run["run_id"]]
    for step in run["steps"]:
        for key in STEP_KEYS:
            assert key in step
    model = next(s for s in run["steps"] if s["kind"] == "model")
    for key in MODEL_KEYS:
        assert key in model
    assert model["params"] == {"temperature": 0.0, "seed": 1}
    assert model["output_messages"][0]["parts"][0]["arguments"] == {
        "query": "my order"
    }  # parsed JSON
    tool = next(s for s in run["steps"] if s["kind"] == "tool")
    assert tool["tool_name"] == "lookup_order" and tool["call_id"] == "c1"
    assert tool["arguments"] == {"query": "my order"}
    assert tool["result"] == [{"order_id": "4421", "status": "shipped"}]
    assert tool["error"] is None
    assert tool["parent_span_id"] == run["steps"][0]["span_id"]


def test_show_tree_lists_every_step(trace_file: Path) -> None:
    result = CliRunner().invoke(cli, ["show", str(trace_file)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "invoke_agent support" in out and "chat gpt-4o" in out
    assert "lookup_order" in out and "4421" in out and "full" in out


def test_check_exit_codes(
    trace_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ok = CliRunner().invoke(cli, ["check", str(trace_file)])
    assert ok.exit_code == 0, ok.output
    assert "full · replays · ok" in ok.output
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    cold = tmp_path / "cold.otlp"
    record(cold)
    bad = CliRunner().invoke(cli, ["check", "--json", str(cold)])
    assert bad.exit_code == 1
    (report,) = json.loads(bad.output)["runs"]
    assert report["verdict"] == "inspect-only" and report["replayable"] is False
    assert any("NO_CONTENT" in p for p in report["problems"])


def test_run_filter(trace_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.otlp"
    record(other)
    both = json.loads(
        CliRunner().invoke(cli, ["show", "--json", str(trace_file), str(other)]).output
    )
    assert len(both["runs"]) == 2
    first = both["runs"][0]["run_id"]
    one = json.loads(
        CliRunner()
        .invoke(cli, ["show", "--json", "--run", first[:8], str(trace_file), str(other)])
        .output
    )
    assert [r["run_id"] for r in one["runs"]] == [first]
    missing = CliRunner().invoke(cli, ["show", "--run", "ffffffff", str(trace_file)])
    assert missing.exit_code == 2


def test_truncated_file_shows_what_it_has_then_exit_2(trace_file: Path) -> None:
    good = trace_file.read_bytes()
    with open(trace_file, "ab") as f:
        f.write(b"\x00\x00\x01\x00partial")
    done = cli_process("show", "--json", str(trace_file))
    assert done.returncode == 2
    assert len(json.loads(done.stdout)["runs"]) == 1  # the good records were kept
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"otel-replay: error: {trace_file}: truncated record: header says 256 bytes, 7 present at byte {len(good)}"
    ]
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("content", [b"not a trace file at all, just text\n", None])
def test_unreadable_input_exit_2_without_traceback(tmp_path: Path, content: bytes | None) -> None:
    path = tmp_path / "x.otlp"
    if content is not None:
        path.write_bytes(content)
    done = cli_process("check", str(path))
    assert done.returncode == 2
    assert done.stderr.startswith(f"otel-replay: error: {path}: ")
    # The file as a whole is not a trace: no place in it is named.
    assert " at byte" not in done.stderr and "Traceback" not in done.stderr


def test_usage_error_is_exit_2() -> None:
    assert CliRunner().invoke(cli, ["show"]).exit_code == 2
    assert CliRunner().invoke(cli, ["bogus"]).exit_code == 2
