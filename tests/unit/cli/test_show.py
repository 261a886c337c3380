"""``otel-replay show`` and ``check`` over real files of real SDK spans.

The files are written here with the bare format (4-byte big-endian length +
``encode_spans(...)``), not with our exporter, so the CLI is tested against
the format rather than against its own writer.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status, StatusCode, Tracer

import otel_replay
from otel_replay import attributes as A
from otel_replay.cli.main import cli
from otel_replay.payload.attributes import to_attributes
from tests.fixtures.cli import cli_process
from tests.fixtures.contract import MODEL_KEYS, RUN_KEYS, STEP_KEYS, TOOL_KEYS

ANSI = re.compile(r"\x1b\[")

ASK = [{"role": "user", "parts": [{"type": "text", "content": "Where is my order?"}]}]
CALL = [
    {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "c1", "name": "lookup_order", "arguments": '{"q": "mine"}'}
        ],
    }
]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Order #4421 is shipped."}]}]
RESULT = [{"order_id": "4421", "status": "shipped"}]


def write_otlp(path: Path, spans: Sequence[ReadableSpan], *, append: bool = False) -> None:
    body = encode_spans(spans).SerializeToString()
    with open(path, "ab" if append else "wb") as f:
        f.write(struct.pack(">I", len(body)) + body)


def sdk_spans(body: Callable[[Tracer], None]) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    body(provider.get_tracer("test"))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def chat(tracer: Tracer, inputs: Any, outputs: Any, tokens: tuple[int, int]) -> None:
    attrs = {
        A.OPERATION_NAME: "chat",
        A.PROVIDER_NAME: "openai",
        A.REQUEST_MODEL: "gpt-4o",
        A.RESPONSE_MODEL: "gpt-4o-2024-08-06",
        "gen_ai.request.temperature": 0.0,
        "gen_ai.request.top_p": 1.0,
        "gen_ai.request.seed": 1,
        A.USAGE_INPUT_TOKENS: tokens[0],
        A.USAGE_OUTPUT_TOKENS: tokens[1],
        **to_attributes(A.SYSTEM_INSTRUCTIONS, [{"type": "text", "content": "Be brief."}]),
        **to_attributes(A.TOOL_DEFINITIONS, [{"type": "function", "name": "lookup_order"}]),
        **to_attributes(A.INPUT_MESSAGES, inputs),
        **to_attributes(A.OUTPUT_MESSAGES, outputs),
    }
    with tracer.start_as_current_span("chat gpt-4o", attributes=attrs):
        pass


def agent_run(
    *,
    tool_result: Any = RESULT,
    truncate_result: bool = False,
    blob_gone: bool = False,
    tool_error: bool = False,
) -> Callable[[Tracer], None]:
    def body(tracer: Tracer) -> None:
        root = {
            A.OPERATION_NAME: "invoke_agent",
            A.FP_COMMIT: "0123456789abcdef",
            A.FP_PACKAGES: ["openai==1.0"],
            A.FP_FLAGS: "{}",
            A.USER_ID: "u_7710",
            A.TENANT_ID: "widgets",
            A.SESSION_ID: "s_1",
        }
        with tracer.start_as_current_span("invoke_agent support", attributes=root):
            chat(tracer, ASK, CALL, (12, 7))
            tool: dict[str, Any] = {
                A.OPERATION_NAME: "execute_tool",
                A.TOOL_NAME: "lookup_order",
                A.TOOL_CALL_ID: "c1",
                **to_attributes(A.TOOL_CALL_ARGUMENTS, {"q": "mine"}),
            }
            if tool_result is not None:
                tool.update(to_attributes(A.TOOL_CALL_RESULT, tool_result))
                if truncate_result:
                    tool[A.TOOL_CALL_RESULT] = tool[A.TOOL_CALL_RESULT][:20]
                if blob_gone:  # its bytes were meant to be in the blob store beside the file
                    tool[A.REF + A.TOOL_CALL_RESULT] = "sha256:" + "0" * 64
                    del tool[A.TOOL_CALL_RESULT]
            if tool_error:
                tool[A.ERROR_TYPE] = "TimeoutError"
            with tracer.start_as_current_span("execute_tool lookup_order", attributes=tool) as s:
                if tool_error:
                    s.set_status(Status(StatusCode.ERROR, "lookup timed out"))
            chat(tracer, [*ASK, *CALL], ANSWER, (34, 6))

    return body


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    path = tmp_path / "run.otlp"
    write_otlp(path, sdk_spans(agent_run()))
    return path


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


# --- show --json -----------------------------------------------------------------


def test_show_json_is_one_document_following_the_contract(trace_file: Path) -> None:
    result = invoke("show", "--json", trace_file)
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)  # the whole of stdout is one JSON document
    assert list(doc) == ["runs"]
    (run,) = doc["runs"]
    for key in RUN_KEYS:
        assert key in run, key
    assert run["trace_ids"] == [run["run_id"]] and len(run["run_id"]) == 32
    assert run["replayable"] is True and run["missing"] == [] and run["verdict"] == "full"
    assert run["fingerprint"]["user.id"] == "u_7710"
    assert run["final_output"] == "Order #4421 is shipped."
    assert [s["kind"] for s in run["steps"]] == ["agent", "model", "tool", "model"]
    root_id = run["steps"][0]["span_id"]
    for step in run["steps"]:
        for key in STEP_KEYS:
            assert key in step, key
        assert isinstance(step["start_ns"], int) and step["end_ns"] >= step["start_ns"]
    assert run["steps"][0]["parent_span_id"] is None
    assert all(s["parent_span_id"] == root_id for s in run["steps"][1:])
    model = run["steps"][1]
    for key in MODEL_KEYS:
        assert key in model, key
    assert (model["provider"], model["request_model"]) == ("openai", "gpt-4o")
    assert model["params"] == {"temperature": 0.0, "top_p": 1.0, "seed": 1}
    assert model["input_messages"] == ASK
    call = model["output_messages"][0]["parts"][0]
    assert call["arguments"] == {"q": "mine"}  # a JSON string on the span, an object here
    assert model["system_instructions"] == [{"type": "text", "content": "Be brief."}]
    assert model["tool_definitions"] == [{"type": "function", "name": "lookup_order"}]
    assert model["usage"] == {"input_tokens": 12, "output_tokens": 7}
    tool = run["steps"][2]
    for key in TOOL_KEYS:
        assert key in tool, key
    assert (tool["tool_name"], tool["call_id"]) == ("lookup_order", "c1")
    assert tool["timed"] and not tool["derived"]
    assert tool["arguments"] == {"q": "mine"} and tool["result"] == RESULT
    assert tool["error"] is None and tool["exact"]["result"] == "exact"


def test_show_json_reports_errors_and_damage(tmp_path: Path) -> None:
    failed = tmp_path / "failed.otlp"
    write_otlp(failed, sdk_spans(agent_run(tool_result=None, tool_error=True)))
    (run,) = json.loads(invoke("show", "--json", failed).stdout)["runs"]
    assert run["steps"][2]["error"] == {"type": "TimeoutError", "message": "lookup timed out"}
    assert run["steps"][2]["result"] is None

    damaged = tmp_path / "damaged.otlp"
    write_otlp(damaged, sdk_spans(agent_run(truncate_result=True)))
    (run,) = json.loads(invoke("show", "--json", damaged).stdout)["runs"]
    assert run["replayable"] is False
    assert run["steps"][2]["exact"]["result"] == "mismatch"
    assert any("not byte-exact" in p for p in run["problems"])


# --- show (tree) -------------------------------------------------------------------


def test_show_tree_lists_every_step(trace_file: Path) -> None:
    result = invoke("show", trace_file)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert not ANSI.search(out)  # not a terminal: plain text
    lines = out.splitlines()
    header = lines[0]
    assert header.startswith("run ") and " UTC " in header and " full " in header
    assert "commit 0123456789ab" in header
    assert all(f in header for f in ("user.id=u_7710", "tenant.id=widgets", "session.id=s_1"))
    steps = [line for line in lines if re.search(r"\s\d+ (agent|model|tool |other)", line)]
    assert len(steps) == 4
    assert re.search(r"\b0 agent invoke_agent support\s+[\d.]+ ms", steps[0])
    assert "1 model chat gpt-4o" in steps[1]
    assert "← user: 'Where is my order?'" in steps[1]
    assert '→ lookup_order({"q": "mine"})' in steps[1] and "[12→7 tok]" in steps[1]
    assert "[gpt-4o-2024-08-06]" in steps[1]  # the model that answered, not in the span name
    assert '2 tool  lookup_order({"q": "mine"})' in steps[2] and "4421" in steps[2]
    assert "→ 'Order #4421 is shipped.'" in steps[3] and "[34→6 tok]" in steps[3]
    # Indented by depth: the children sit deeper than the root.
    assert all(s.index("model") > steps[0].index("agent") for s in steps[1::2])


def test_show_tree_marks_what_is_not_exact_and_errors(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.otlp"
    write_otlp(damaged, sdk_spans(agent_run(truncate_result=True)))
    out = invoke("show", damaged).stdout
    (tool_line,) = [line for line in out.splitlines() if " tool " in line]
    assert "(result not byte-exact)" in tool_line
    assert "model-only · does not replay: 1 payload damaged · ok" in out.splitlines()[0]
    assert "! step 2 (tool lookup_order" in out and "result not byte-exact" in out

    gone = tmp_path / "gone.otlp"
    write_otlp(gone, sdk_spans(agent_run(blob_gone=True)))
    out = invoke("show", gone).stdout
    (tool_line,) = [line for line in out.splitlines() if " tool " in line]
    assert "(result missing)" in tool_line

    failed = tmp_path / "failed.otlp"
    write_otlp(failed, sdk_spans(agent_run(tool_result=None, tool_error=True)))
    out = invoke("show", failed).stdout
    head, *steps = out.splitlines()
    (tool_line,) = [line for line in steps if " tool " in line]
    assert "ERROR" in tool_line and "✗ TimeoutError: lookup timed out" in tool_line
    assert "  full · replays · 1 of 1 tool calls failed  " in head


def test_show_selects_a_run_by_id_prefix(trace_file: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.otlp"
    write_otlp(other, sdk_spans(agent_run()))
    both = json.loads(invoke("show", "--json", trace_file, other).stdout)["runs"]
    assert len(both) == 2
    wanted = both[1]["run_id"]
    picked = json.loads(invoke("show", "--json", "--run", wanted[:6], trace_file, other).stdout)
    assert [r["run_id"] for r in picked["runs"]] == [wanted]
    tree = invoke("show", "--run", wanted[:6], trace_file, other).stdout
    assert f"run {wanted}" in tree and both[0]["run_id"] not in tree
    missing = invoke("show", "--run", "zzzz", trace_file)
    assert missing.exit_code == 2 and "no run 'zzzz'" in missing.stderr


def test_show_reads_a_directory_and_joins_a_trace_split_over_files(tmp_path: Path) -> None:
    spans = sdk_spans(agent_run())
    folder = tmp_path / "dump"
    folder.mkdir()
    write_otlp(folder / "a.otlp", spans[:2])
    write_otlp(folder / "b.otlp", spans[2:])
    (run,) = json.loads(invoke("show", "--json", folder).stdout)["runs"]
    assert len(run["steps"]) == 4 and run["replayable"] is True
    assert [Path(s).name for s in run["sources"]] == ["a.otlp", "b.otlp"]


# --- check ---------------------------------------------------------------------------


def test_check_exit_codes(trace_file: Path, tmp_path: Path) -> None:
    ok = invoke("check", trace_file)
    assert ok.exit_code == 0, ok.output
    assert ok.stdout.splitlines()[0].endswith(": full · replays · ok")

    no_result = tmp_path / "no_result.otlp"
    write_otlp(no_result, sdk_spans(agent_run(tool_result=None)))
    bad = invoke("check", no_result)
    assert bad.exit_code == 1
    assert "model-only · does not replay: tool results not recorded · ok" in bad.stdout
    assert "not recorded: steps[2].result" in bad.stdout
    assert "! step 2 (tool lookup_order" in bad.stdout

    both = invoke("check", "--json", trace_file, no_result)
    assert both.exit_code == 1  # one run short of the kit fails the check
    reports = json.loads(both.stdout)["runs"]
    assert sorted((r["verdict"], r["replayable"]) for r in reports) == [
        ("full", True),
        ("model-only", False),
    ]
    for report in reports:
        assert set(report) == {
            *("run_id", "verdict", "replayable", "missing", "problems", "findings"),
            *("replays", "replay_problem", "outcome", "verdict_words", "not_set"),
        }
        assert report["findings"] == []  # anomalies: none in these runs

    empty = tmp_path / "empty.otlp"
    empty.write_bytes(b"")
    nothing = invoke("check", empty)
    assert nothing.exit_code == 1 and "no runs" in nothing.stderr
    assert invoke("show", empty).exit_code == 0


def test_bad_usage_and_missing_input_exit_2(tmp_path: Path) -> None:
    assert invoke("show").exit_code == 2
    assert invoke("check", "--bogus", tmp_path).exit_code == 2
    gone = tmp_path / "gone.otlp"
    result = invoke("check", gone)
    assert result.exit_code == 2
    assert result.stderr == f"otel-replay: error: {gone}: no such file\n"


# --- a real process ----------------------------------------------------------------------


def test_truncated_tail_prints_what_was_read_then_exit_2(trace_file: Path) -> None:
    good = trace_file.stat().st_size
    with open(trace_file, "ab") as f:
        f.write(struct.pack(">I", 500) + b"\x0a\x05torn")
    for args in (("show", "--json"), ("show",), ("check",)):
        done = cli_process(*args, trace_file)
        # check: the run read from the torn file may lack spans, so it fails the check.
        assert done.returncode == (1 if args == ("check",) else 2), (args, done.stderr)
        assert "Traceback" not in done.stderr
        (line,) = done.stderr.splitlines()
        assert line.startswith(f"otel-replay: error: {trace_file}: ")
        assert line.endswith(f" at byte {good}")
        if args == ("show", "--json"):
            (run,) = json.loads(done.stdout)["runs"]
            assert len(run["steps"]) == 4
        else:
            assert not ANSI.search(done.stdout)
            assert done.stdout.startswith("run ")
            assert ("lookup_order" in done.stdout) == (args == ("show",))


def test_version_and_module_entry_point() -> None:
    done = cli_process("--version")
    assert done.returncode == 0
    assert done.stdout.strip() == f"otel-replay, version {otel_replay.__version__}"


def test_show_json_stays_json_with_non_finite_numbers(tmp_path: Path) -> None:
    def body(tracer: Tracer) -> None:
        attrs = {A.OPERATION_NAME: "chat", "gen_ai.request.temperature": float("nan")}
        with tracer.start_as_current_span("chat m", attributes=attrs):
            pass

    path = tmp_path / "nan.otlp"
    write_otlp(path, sdk_spans(body))
    result = invoke("show", "--json", path)
    assert result.exit_code == 0
    assert "NaN" not in result.stdout.replace('"nan"', "")
    (run,) = json.loads(result.stdout, parse_constant=lambda c: pytest.fail(c))["runs"]
    assert run["steps"][0]["params"] == {"temperature": "nan"}
