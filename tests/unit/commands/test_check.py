"""``otel-replay check`` anomalies, and ``show --timeline`` / ``--step``, on recorded runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.commands.timeline import ttft_ms
from otel_replay.runs.anomalies import Config, find_anomalies
from otel_replay.runs.build import build_runs
from tests.fixtures.agent import LOOKUP, WORLD, call, record_run, say
from tests.fixtures.cli import cli_process
from tests.fixtures.data import TESTS
from tests.fixtures.records import span_record

THIRDPARTY = TESTS / "data" / "thirdparty"


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def findings(path: Path, *args: str, code: int | None = 0) -> list[dict[str, Any]]:
    result = invoke("check", "--json", path, *args)
    assert code is None or result.exit_code == code, result.output
    (run,) = json.loads(result.stdout)["runs"]
    found: list[dict[str, Any]] = run["findings"]
    return found


def kinds(found: list[dict[str, Any]]) -> list[tuple[str, int]]:
    return [(f["kind"], f["step"]) for f in found]


def recorded(tmp_path: Path, replies: list[dict[str, Any]], **kw: Any) -> tuple[Path, Any]:
    path = tmp_path / "run.otlp"
    record_run(path, replies, **kw)
    (run,) = otel_replay.load(path)
    return path, run


def test_a_clean_run_has_no_findings(tmp_path: Path) -> None:
    path, _ = recorded(tmp_path, LOOKUP)
    assert findings(path) == []
    assert invoke("check", "--strict", path).exit_code == 0


def test_the_same_call_again_and_a_loop(tmp_path: Path) -> None:
    replies = [call("lookup_order", f"c{i}", query="my order") for i in range(3)]
    path, run = recorded(tmp_path, [*replies, say("Order #4421 is shipped.")])
    found = findings(path)
    tools = [s for s in run.steps if s.kind == "tool"]
    repeated = [f for f in found if f["kind"] == "repeated_tool_call"]
    assert [f["step"] for f in repeated] == [tools[1].index, tools[2].index]
    assert all(f["span_id"] == run.steps[f["step"]].span_id for f in found)
    assert f"same arguments as step {tools[0].index}" in repeated[0]["message"]
    (loop,) = [f for f in found if f["kind"] == "loop"]
    assert "repeat 3 times" in loop["message"]
    # Warnings only: the run replays, so check passes unless --strict.
    assert invoke("check", path).exit_code == 0
    strict = invoke("check", "--strict", path)
    assert strict.exit_code == 1 and "repeated_tool_call" in strict.stdout


def test_tool_errors_and_retries(tmp_path: Path) -> None:
    WORLD["fail"] = 1
    try:
        path, run = recorded(
            tmp_path,
            [
                call("flaky_lookup", "c1", query="x"),
                call("flaky_lookup", "c2", query="x"),
                say("ok"),
            ],
        )
    finally:
        WORLD["fail"] = 0
    first, second = (s for s in run.steps if s.kind == "tool")
    found = findings(path)
    assert ("tool_error", first.index) in kinds(found)
    assert ("retry", second.index) in kinds(found)
    assert "repeated_tool_call" not in {f["kind"] for f in found}  # a retry, not a repeat
    error = next(f for f in found if f["kind"] == "tool_error")
    assert "TimeoutError" in error["message"] and "lookup timed out" in error["message"]


def test_budget(tmp_path: Path) -> None:
    replies = [call("lookup_order", f"c{i}", query=f"q{i}") for i in range(4)]
    path, run = recorded(tmp_path, [*replies, say("Done.")])
    assert findings(path) == []  # four different calls: under the default budget of 20
    over = findings(path, "--max-tool-calls", "2")
    third = [s for s in run.steps if s.kind == "tool"][2]
    assert kinds(over) == [("tool_budget", third.index)]
    assert "4 tool calls, over the budget of 2" in over[0]["message"]


def test_a_cut_off_body_and_error_wording(tmp_path: Path) -> None:
    WORLD["body"] = '{"sku": "w-1", "pri'
    try:
        path, run = recorded(
            tmp_path,
            [
                call("fetch_price", "c1", sku="w-1"),
                say("I'm sorry, I was unable to get the price."),
            ],
        )
    finally:
        del WORLD["body"]
    tool = next(s for s in run.steps if s.kind == "tool")
    found = findings(path)
    assert ("partial_body", tool.index) in kinds(found)
    wording = next(f for f in found if f["kind"] == "error_wording")
    assert wording["step"] == 0 and "I'm sorry" in wording["message"]  # the agent's answer
    custom = findings(path, "--error-phrase", "price")
    assert "the final answer says 'price'" in next(
        f["message"] for f in custom if f["kind"] == "error_wording"
    )
    assert "error_wording" not in {f["kind"] for f in findings(path, "--error-phrase", "refund")}


def test_http_429_and_5xx_on_spans() -> None:
    spans = [
        span_record(
            "1" * 32, "a" * 16, None, 0, "invoke_agent x", {"gen_ai.operation.name": "invoke_agent"}
        ),
        span_record("1" * 32, "b" * 16, "a" * 16, 1, "POST", {"http.response.status_code": 429}),
        span_record("1" * 32, "c" * 16, "a" * 16, 2, "POST", {"http.response.status_code": 503}),
        span_record("1" * 32, "d" * 16, "a" * 16, 3, "POST", {"http.response.status_code": 200}),
    ]
    (run,) = build_runs(spans)
    found = find_anomalies(run, Config())
    assert [(f.kind, f.span_id, f.message) for f in found] == [
        ("http_status", "b" * 16, "HTTP 429 answer"),
        ("http_status", "c" * 16, "HTTP 503 answer"),
    ]


def test_third_party_runs_have_no_false_alarms() -> None:
    """The scenario's runs are clean: HTTP 200s, two different tool calls, a plain answer."""
    for case in ("anthropic_sdk/sync", "otel_openai_v2/chat_sync", "pydantic_ai/v6_stream"):
        # (exit 1 for the client-only case: its tool steps are derived, so it is model-only)
        found = findings(THIRDPARTY / case / "traces.otlp.jsonl", code=None)
        assert found == [], case


def test_check_text_names_each_finding(tmp_path: Path) -> None:
    replies = [call("lookup_order", f"c{i}", query="same") for i in range(2)]
    path, run = recorded(tmp_path, [*replies, say("Done.")])
    done = cli_process("check", path)
    assert done.returncode == 0, done.stderr
    second = [s for s in run.steps if s.kind == "tool"][1]
    assert f"step {second.index} (span {second.span_id}) repeated_tool_call" in done.stdout
    assert cli_process("check", "--strict", path).returncode == 1


def test_check_picks_one_run_of_a_dump_and_names_the_others(tmp_path: Path) -> None:
    path = tmp_path / "runs.otlp"
    record_run(path, LOOKUP)
    record_run(path, [*[call("lookup_order", f"c{i}", query="same") for i in range(2)], say("x")])
    first, second = otel_replay.load(path)
    both = json.loads(invoke("check", "--json", "-j", "2", path).stdout)["runs"]
    assert [r["run_id"] for r in both] == [first.run_id, second.run_id]
    assert both[0]["findings"] == []
    assert "repeated_tool_call" in {f["kind"] for f in both[1]["findings"]}
    one = invoke("check", "--json", "--run", second.run_id[:8], path)
    assert one.exit_code == 0, one.output
    assert json.loads(one.stdout)["runs"] == both[1:]
    missing = invoke("check", "--run", "nope", path)
    assert missing.exit_code == 2
    assert f"no run 'nope' in {path} (runs: " in missing.stderr
    assert first.run_id in missing.stderr and second.run_id in missing.stderr


# --- show --timeline and --step ------------------------------------------------------------


def test_timeline_with_time_to_first_token() -> None:
    path = THIRDPARTY / "anthropic_sdk" / "stream" / "traces.otlp.jsonl"
    (run,) = otel_replay.load(path)
    result = invoke("show", "--timeline", "--json", path)
    assert result.exit_code == 0, result.output
    (doc,) = json.loads(result.stdout)["runs"]
    models = [s for s in doc["steps"] if s["kind"] == "model"]
    assert len(models) == 3 and all(m["ttft_ms"] is not None for m in models)
    for m in models:
        step = run.step(m["index"])
        seconds = step.attributes["gen_ai.response.time_to_first_chunk"]
        assert m["ttft_ms"] == pytest.approx(seconds * 1000, abs=1e-3)
        assert m["ttft_ms"] <= m["duration_ms"]
        assert m["offset_ms"] == pytest.approx((step.start_ns - run.start_ns) / 1e6, abs=1e-3)
    text = invoke("show", "--timeline", path)
    assert text.exit_code == 0
    lines = [line for line in text.stdout.splitlines() if " model " in line]
    assert len(lines) == 3 and all("first token" in line and "█" in line for line in lines)


def test_timeline_of_pydantic_ai_stream_reads_its_attribute() -> None:
    (run,) = otel_replay.load(THIRDPARTY / "pydantic_ai" / "v6_stream" / "traces.otlp.jsonl")
    values = [ttft_ms(s) for s in run.model_steps()]
    assert len(values) == 3 and all(v is not None and v > 0 for v in values)


def test_step_prints_the_full_input_and_output(tmp_path: Path) -> None:
    path, run = recorded(tmp_path, LOOKUP)
    model = run.model_steps()[1]
    result = invoke("show", path, "--step", str(model.index))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "input messages" in out and "Where is my order?" in out
    assert "Order #4421 is shipped." in out and '"temperature": 0.0' in out
    assert "gen_ai.input.messages" not in out  # raw attributes only with --raw
    tool = run.tool_steps()[0]
    by_span = invoke("show", path, "--step", tool.span_id[:8], "--raw")
    assert by_span.exit_code == 0
    assert '"query": "my order"' in by_span.stdout and '"status": "shipped"' in by_span.stdout
    assert "otel_replay.sha256.gen_ai.tool.call.result" in by_span.stdout
    doc = json.loads(invoke("show", path, "--step", str(tool.index), "--json", "--raw").stdout)
    assert doc["step"]["result"] == [{"order_id": "4421", "status": "shipped"}]
    assert doc["step"]["attributes"]["gen_ai.tool.name"] == "lookup_order"
    # Past the last step, and no span id starts with it (a prefix names a step too).
    missing = next(
        str(n)
        for n in range(99, 10_000)
        if not any(s.span_id.startswith(str(n)) for s in run.steps)
    )
    bad = invoke("show", path, "--step", missing)
    assert bad.exit_code == 2 and f"no step '{missing}'" in bad.stderr


def test_a_span_id_that_starts_with_digits_still_names_its_step(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace import RandomIdGenerator

    ids = iter(range(0x1234567800000001, 0x1234567800000100))
    monkeypatch.setattr(RandomIdGenerator, "generate_span_id", lambda self: next(ids))
    path, run = recorded(tmp_path, LOOKUP)
    tool = run.tool_steps()[0]
    assert tool.span_id[:8] == "12345678"
    by_span = invoke("show", path, "--step", tool.span_id, "--json")
    assert by_span.exit_code == 0, by_span.output
    assert json.loads(by_span.stdout)["step"]["span_id"] == tool.span_id
    by_index = invoke("show", path, "--step", str(tool.index), "--json")
    assert json.loads(by_index.stdout)["step"]["span_id"] == tool.span_id
