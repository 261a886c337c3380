"""Log dumps: GenAI content sent as log events fills the model steps of its spans.

The fixtures in ``data/genai_logs`` were recorded with the real OTel openai-v2
instrumentation against a fake model server (see ``data/README.md``); the
server's log of what it received and answered is the ground truth.
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import zstandard
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry._logs import LogRecord as ApiLogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import Metric, ResourceMetrics, ScopeMetrics
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay
from otel_replay import attributes as A
from otel_replay import messages as M
from otel_replay.cli.main import cli
from otel_replay.otlp import index
from otel_replay.otlp.records import LogRecord, SpanRecord
from otel_replay.otlp.sniff import iter_varint
from otel_replay.runs.build import build_runs
from otel_replay.runs.log_events import GENAI_EVENTS
from otel_replay.sources.reader import RecordReader, SpanReader
from tests.fixtures.data import TESTS
from tests.fixtures.records import span_record
from tests.unit.sources.test_formats import be32, varint

DATA = TESTS / "data" / "genai_logs"
CASES = ["event_only", "legacy_events"]


def server_log(case: str) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(messages received, messages answered) per model call, in the GenAI shape."""
    calls = []
    for line in (DATA / case / "server_requests.jsonl").read_text().splitlines():
        exchange = json.loads(line)
        response = json.loads(exchange["response_raw"])
        answered = [
            M.normalize_message({**c["message"], "finish_reason": c["finish_reason"]})
            for c in response["choices"]
        ]
        calls.append((M.normalize(exchange["body_json"]["messages"]), answered))
    return calls


def log_messages(case: str) -> list[bytes]:
    """The case's log records, one request each (as a Collector batches them), as protobuf."""
    path = DATA / case / "logs.otlp.ldpb"
    with path.open("rb") as f:
        requests = [
            ExportLogsServiceRequest.FromString(body) for _, body in iter_varint(f, str(path))
        ]
    out = []
    for request in requests:
        for rl in request.resource_logs:
            for sl in rl.scope_logs:
                for record in sl.log_records:
                    one = ExportLogsServiceRequest()
                    resource = one.resource_logs.add(resource=rl.resource)
                    resource.scope_logs.add(scope=sl.scope).log_records.append(record)
                    out.append(one.SerializeToString())
    return out


def log_lines(case: str) -> list[bytes]:
    """The same in OTLP/JSON lines, from the recorded JSON."""
    out = []
    for line in (DATA / case / "logs.otlp.jsonl").read_bytes().splitlines():
        for rl in json.loads(line)["resourceLogs"]:
            for sl in rl["scopeLogs"]:
                for record in sl["logRecords"]:
                    one = {**rl, "scopeLogs": [{**sl, "logRecords": [record]}]}
                    out.append(json.dumps({"resourceLogs": [one]}).encode() + b"\n")
    return out


def log_framings(case: str) -> dict[str, bytes]:
    """The case's log dump in every framing the reader detects."""
    protos, lines = log_messages(case), log_lines(case)
    merged = {"resourceLogs": [rl for line in lines for rl in json.loads(line)["resourceLogs"]]}
    z = zstandard.ZstdCompressor()
    return {
        "recorded.jsonl": (DATA / case / "logs.otlp.jsonl").read_bytes(),
        "recorded.ldpb": (DATA / case / "logs.otlp.ldpb").read_bytes(),
        "recorded.pb": (DATA / case / "logs.otlp.pb").read_bytes(),
        "lines.json": b"".join(lines),
        "varint.ldpb": b"".join(varint(len(p)) + p for p in protos),
        "proto.otlp": be32(protos),
        "proto-zstd-per-message.otlp": be32([z.compress(p) for p in protos]),
        "proto-zstd-whole-file.otlp": z.compress(be32(protos)),
        "lines-zstd-per-message.json": be32([z.compress(line) for line in lines]),
        "lines-zstd-whole-file.json": z.compress(b"".join(lines)),
        "pretty.json": json.dumps(merged, indent=2).encode(),
        "proto.otlp.gz": gzip.compress(be32(protos)),
        "lines.json.gz": gzip.compress(b"".join(lines)),
    }


def assert_matches_server(runs: otel_replay.Runs, case: str) -> None:
    steps = [s for run in runs for s in run.model_steps()]
    calls = server_log(case)
    assert len(steps) == len(calls) == 3
    for step, (received, answered) in zip(steps, calls, strict=True):
        assert step.model is not None
        assert step.model.input_messages == received, step.label()
        assert step.model.output_messages == answered, step.label()
    # One model call per trace: the content joins them into one conversation,
    # whose tool calls are derived from the messages (no tool spans).
    (run,) = runs
    assert run.kit.verdict == "model-only"
    tools = [(s.name, s.timed) for s in run.steps if s.kind == "tool"]
    assert tools == [("execute_tool lookup_order", False), ("execute_tool cancel_order", False)]


@pytest.mark.parametrize("case", CASES)
def test_spans_alone_lack_the_content(case: str) -> None:
    runs = otel_replay.load(DATA / case / "traces.otlp.jsonl")
    assert [s.model.input_messages for r in runs for s in r.model_steps() if s.model] == [None] * 3
    assert not any(run.replayable for run in runs)


@pytest.mark.parametrize("framing", list(log_framings("event_only")))
@pytest.mark.parametrize("case", CASES)
def test_log_dump_fills_the_model_steps_in_every_framing(
    tmp_path: Path, case: str, framing: str
) -> None:
    logs = tmp_path / framing
    logs.write_bytes(log_framings(case)[framing])
    runs = otel_replay.load(DATA / case / "traces.otlp.pb", logs, strict=True)
    assert_matches_server(runs, case)
    assert runs.unjoined_logs == []


@pytest.mark.parametrize("case", CASES)
def test_one_json_lines_file_holding_both_signals(tmp_path: Path, case: str) -> None:
    mixed = tmp_path / "dump.json"
    logs = (DATA / case / "logs.otlp.jsonl").read_bytes()
    mixed.write_bytes(logs + (DATA / case / "traces.otlp.jsonl").read_bytes())
    assert_matches_server(otel_replay.load(mixed, strict=True), case)
    # A spans-only reader keeps the spans and says what it skipped.
    reader = SpanReader(mixed)
    assert len(list(reader)) == 3
    (problem,) = reader.problems
    assert problem.offset == 0 and "logs data, not traces" in str(problem)


@pytest.mark.parametrize("case", CASES)
def test_a_directory_and_stdin(tmp_path: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    dump = tmp_path / "dump"
    shutil.copytree(DATA / case, dump, ignore=shutil.ignore_patterns("server_*"))
    assert_matches_server(otel_replay.load(dump, strict=True), case)
    monkeypatch.setattr(
        "sys.stdin", io.TextIOWrapper(io.BytesIO((dump / "logs.otlp.pb").read_bytes()))
    )
    assert_matches_server(otel_replay.load(dump / "traces.otlp.jsonl", "-", strict=True), case)


@pytest.mark.parametrize("case", CASES)
def test_the_same_events_read_twice_count_once(case: str) -> None:
    given = [DATA / case / name for name in ("logs.otlp.jsonl", "logs.otlp.pb", "logs.otlp.ldpb")]
    assert_matches_server(otel_replay.load(DATA / case / "traces.otlp.jsonl", *given), case)


def test_show_json_has_the_joined_messages() -> None:
    case = DATA / "event_only"
    result = CliRunner().invoke(
        cli, ["show", "--json", str(case / "traces.otlp.jsonl"), str(case / "logs.otlp.pb")]
    )
    assert result.exit_code == 0, result.output
    runs = json.loads(result.stdout)["runs"]
    steps = [s for run in runs for s in run["steps"] if s["kind"] == "model"]
    assert [s["input_messages"] for s in steps] == [got for got, _ in server_log("event_only")]


def test_trace_id_reads_spans_and_logs_through_their_indexes(tmp_path: Path) -> None:
    case = "legacy_events"
    traces = tmp_path / "traces.otlp"
    traces.write_bytes(be32([(DATA / case / "traces.otlp.pb").read_bytes()]))
    logs = tmp_path / "logs.otlp"
    logs.write_bytes(be32(log_messages(case)))
    (everything,) = otel_replay.load(traces, logs)  # three client-only traces, stitched
    wanted = everything.trace_ids[1]
    (run,) = otel_replay.load(traces, logs, trace_id=wanted[:8])
    assert index.index_path(logs).exists() and index.index_path(traces).exists()
    assert run.trace_ids == [wanted]
    (step,) = run.model_steps()
    expected = next(s for s in everything.model_steps() if s.trace_id == wanted).model
    assert step.model is not None and expected is not None
    assert step.model.input_messages is not None
    assert step.model.input_messages == expected.input_messages
    # Read again through the saved indexes: the same.
    (again,) = otel_replay.load(traces, logs, trace_id=wanted)
    assert again.model_steps()[0].model == step.model


# --- records built with the real SDK ----------------------------------------------------


def sdk_records(
    emit: list[tuple[str | None, Any, dict[str, Any]]],
    span_attributes: dict[str, Any],
    span_events: Sequence[tuple[str, dict[str, Any]]] = (),
) -> tuple[list[ReadableSpan], bytes]:
    """One span with ``span_attributes`` and events; log records (name, body, attributes) in it."""
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    logs = InMemoryLogRecordExporter()
    logger_provider = LoggerProvider()
    logger_provider.add_log_record_processor(SimpleLogRecordProcessor(logs))
    logger = logger_provider.get_logger("genai-test")
    with tracer_provider.get_tracer("genai-test").start_as_current_span(
        "chat m", attributes=span_attributes
    ) as span:
        for name, attrs in span_events:
            span.add_event(name, attrs)
        for event_name, body, attrs in emit:
            logger.emit(ApiLogRecord(event_name=event_name, body=body, attributes=attrs))
    return list(spans.get_finished_spans()), encode_logs(
        logs.get_finished_logs()
    ).SerializeToString()


CHAT = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai"}
SYSTEM = [{"type": "text", "content": "Be brief."}]
TOOLS = [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]
ASK = [{"role": "user", "parts": [{"type": "text", "content": "Where is my order?"}]}]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "Shipped."}]}]


def load_both(tmp_path: Path, spans: list[ReadableSpan], logs: bytes) -> otel_replay.Runs:
    (tmp_path / "spans.otlp").write_bytes(be32([encode_spans(spans).SerializeToString()]))
    (tmp_path / "logs.otlp").write_bytes(be32([logs]))
    return otel_replay.load(tmp_path / "spans.otlp", tmp_path / "logs.otlp", strict=True)


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize("in_body", [False, True])
def test_inference_details_event_as_attributes_or_body(
    tmp_path: Path, in_body: bool, as_json: bool
) -> None:
    content = {
        "gen_ai.input.messages": ASK,
        "gen_ai.output.messages": ANSWER,
        "gen_ai.system_instructions": SYSTEM,
        "gen_ai.tool.definitions": TOOLS,
    }
    if as_json:
        content = {k: json.dumps(v) for k, v in content.items()}
    body, attrs = (content, {}) if in_body else (None, content)
    spans, logs = sdk_records([("gen_ai.client.inference.operation.details", body, attrs)], CHAT)
    ((step,),) = [r.model_steps() for r in load_both(tmp_path, spans, logs)]
    assert step.model is not None
    assert step.model.input_messages == ASK and step.model.output_messages == ANSWER
    assert step.model.system_instructions == SYSTEM and step.model.tool_definitions == TOOLS


def test_span_content_wins_over_events(tmp_path: Path) -> None:
    other = [{"role": "user", "parts": [{"type": "text", "content": "something else"}]}]
    details = {"gen_ai.input.messages": other, "gen_ai.system_instructions": SYSTEM}
    spans, logs = sdk_records(
        [("gen_ai.client.inference.operation.details", None, details)],
        {**CHAT, "gen_ai.input.messages": json.dumps(ASK)},
    )
    ((step,),) = [r.model_steps() for r in load_both(tmp_path, spans, logs)]
    assert step.model is not None
    assert step.model.input_messages == ASK  # the span's
    assert step.model.system_instructions == SYSTEM  # what the span lacked


LEGACY = [
    ("gen_ai.system.message", {"content": "Be brief."}),
    ("gen_ai.user.message", {"content": "Where is my order?"}),
    (
        "gen_ai.assistant.message",
        {
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
            ]
        },
    ),
    ("gen_ai.tool.message", {"content": "shipped", "id": "c1"}),
    ("gen_ai.choice", {"index": 1, "finish_reason": "length", "message": {"content": "Ship"}}),
    ("gen_ai.choice", {"index": 0, "finish_reason": "stop", "message": {"content": "Shipped."}}),
]
LEGACY_INPUT = [
    {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
    ASK[0],
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {}}],
    },
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "shipped"}]},
]
LEGACY_OUTPUT = [
    {**ANSWER[0], "finish_reason": "stop"},
    {
        "role": "assistant",
        "parts": [{"type": "text", "content": "Ship"}],
        "finish_reason": "length",
    },
]


def test_legacy_events_named_by_the_older_event_name_attribute(tmp_path: Path) -> None:
    emit = [(None, body, {"event.name": name, "gen_ai.system": "openai"}) for name, body in LEGACY]
    spans, logs = sdk_records(emit, CHAT)
    ((step,),) = [r.model_steps() for r in load_both(tmp_path, spans, logs)]
    assert step.model is not None
    assert step.model.input_messages == LEGACY_INPUT
    assert step.model.output_messages == LEGACY_OUTPUT


def test_span_events_of_the_same_names(tmp_path: Path) -> None:
    def flat(fields: dict[str, Any]) -> dict[str, Any]:
        # Span event attributes cannot nest lists of maps in older SDKs: JSON strings then.
        return {k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in fields.items()}

    spans, _ = sdk_records([], CHAT, [(name, flat(body)) for name, body in LEGACY])
    path = tmp_path / "spans.otlp"
    path.write_bytes(be32([encode_spans(spans).SerializeToString()]))
    ((step,),) = [r.model_steps() for r in otel_replay.load(path, strict=True)]
    assert step.model is not None
    assert step.model.input_messages == LEGACY_INPUT
    assert step.model.output_messages == LEGACY_OUTPUT


def test_an_unnamed_span_with_model_events_becomes_a_model_step(tmp_path: Path) -> None:
    spans, logs = sdk_records(
        [("gen_ai.client.inference.operation.details", None, {"gen_ai.input.messages": ASK})], {}
    )
    (run,) = load_both(tmp_path, spans, logs)
    (step,) = run.steps
    assert step.kind == "model" and step.model is not None and step.model.input_messages == ASK


def test_records_naming_no_loaded_span_are_kept_and_reported(tmp_path: Path) -> None:
    spans, logs = sdk_records([("gen_ai.user.message", {"content": "hi"}, {})], CHAT)
    provider = LoggerProvider()
    exporter = InMemoryLogRecordExporter()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("app").emit(ApiLogRecord(body="outside any span", event_name="app.note"))
    outside = encode_logs(exporter.get_finished_logs()).SerializeToString()
    (tmp_path / "more.otlp").write_bytes(be32([outside]))
    runs = load_both(tmp_path, spans, logs)
    ((step,),) = [r.model_steps() for r in runs]
    # The same log dump without its spans: the event names a span that is not loaded.
    alone = otel_replay.load(tmp_path / "logs.otlp", tmp_path / "more.otlp", strict=True)
    assert list(alone) == []
    names = sorted((r.event_name, r.span_id == "") for r in alone.unjoined_logs)
    assert names == [("app.note", True), ("gen_ai.user.message", False)]
    assert step.model is not None and step.model.input_messages is not None


# --- the store layer on its own ---------------------------------------------------------


def test_log_records_read_back_as_plain_values() -> None:
    path = DATA / "legacy_events" / "logs.otlp.pb"
    records = list(RecordReader(path))
    assert all(isinstance(r, LogRecord) for r in records) and len(records) == 15
    first = records[0]
    assert isinstance(first, LogRecord)
    assert first.event_name == "gen_ai.system.message" and first.scope_name.endswith("openai_v2")
    assert isinstance(first.body, dict) and first.body["content"].startswith("You are")
    assert len(first.trace_id) == 32 and len(first.span_id) == 16 and first.time_ns > 0
    assert first.resource["service.name"] == "order-agent"
    as_json = list(RecordReader(DATA / "legacy_events" / "logs.otlp.jsonl"))
    assert [(r.span_id, r.body, r.attributes) for r in as_json] == [
        (r.span_id, r.body, r.attributes) for r in records
    ]
    assert not any(isinstance(r, SpanRecord) for r in as_json)


def test_logs_named_by_the_reader_that_wants_only_spans() -> None:
    reader = SpanReader(DATA / "event_only" / "logs.otlp.ldpb")
    assert list(reader) == []
    (problem,) = reader.problems
    assert "logs data, not traces" in str(problem) and problem.offset == 0


METRICS = ExportMetricsServiceRequest(
    resource_metrics=[ResourceMetrics(scope_metrics=[ScopeMetrics(metrics=[Metric(name="m")])])]
).SerializeToString()


@pytest.mark.parametrize("framing", ["be32", "single"])
def test_a_metrics_dump_is_still_refused(tmp_path: Path, framing: str) -> None:
    path = tmp_path / "metrics.otlp"
    path.write_bytes(be32([METRICS]) if framing == "be32" else METRICS)
    runs = otel_replay.load(path)
    assert list(runs) == [] and runs.unjoined_logs == []
    (problem,) = runs.problems
    assert problem.offset == 0 and "metrics" in problem.reason


def test_metrics_json_line_after_log_lines(tmp_path: Path) -> None:
    logs = (DATA / "event_only" / "logs.otlp.jsonl").read_bytes()
    path = tmp_path / "mixed.json"
    path.write_bytes(logs + b'{"resourceMetrics": []}\n')
    reader = RecordReader(path)
    assert len(list(reader)) == 3
    (problem,) = reader.problems
    assert problem.offset == len(logs) and "OTLP metrics data, not traces or logs" in str(problem)


def test_truncated_log_dump_keeps_the_records_before(tmp_path: Path) -> None:
    protos = log_messages("legacy_events")
    good = be32(protos[:-1])
    kept = sum(1 for _ in RecordReader(_write(tmp_path / "good.otlp", good)))
    path = _write(tmp_path / "torn.otlp", good + be32(protos[-1:])[:-7])
    reader = RecordReader(path)
    assert sum(1 for _ in reader) == kept > 0
    (problem,) = reader.problems
    assert (problem.path, problem.offset) == (str(path), len(good))
    assert "truncated record" in problem.reason


def test_bad_log_json_lines_cost_only_those_lines(tmp_path: Path) -> None:
    lines = log_lines("legacy_events")
    bad_id = lines[0].replace(b'"spanId": "', b'"spanId": "zz', 1)
    data = bad_id + b"{not json\n" + b"".join(lines[1:])
    reader = RecordReader(_write(tmp_path / "logs.json", data))
    assert len(list(reader)) == len(lines) - 1 == 14
    assert [p.offset for p in reader.problems] == [0, len(bad_id)]
    assert "spanId" in str(reader.problems[0])


def test_bad_log_input_exits_2_in_the_cli_with_file_and_offset(tmp_path: Path) -> None:
    protos = log_messages("event_only")
    torn = _write(tmp_path / "logs.otlp", be32(protos)[:-3])
    result = CliRunner().invoke(
        cli, ["show", "--json", str(DATA / "event_only" / "traces.otlp.jsonl"), str(torn)]
    )
    assert result.exit_code == 2
    assert f"{torn}: " in result.output and "at byte " in result.output
    assert "Traceback" not in result.output


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_every_recorded_log_record_names_a_recorded_span() -> None:
    # The fixtures are of one process: every record is tied to a span of the trace dump.
    span_ids = {s.span_id for s in SpanReader(DATA / "event_only" / "traces.otlp.pb")}
    log_ids = {r.span_id for r in RecordReader(DATA / "event_only" / "logs.otlp.pb")}
    assert log_ids == span_ids and len(span_ids) == 3


# --- whatever the events hold, the join never fails ------------------------------------

CONTENT_KEYS = {A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.SYSTEM_INSTRUCTIONS, A.TOOL_DEFINITIONS}
VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8) | st.binary(),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["content", "tool_calls", "id", "message", "role", "index", "type"])
            | st.sampled_from(sorted(CONTENT_KEYS))
            | st.text(max_size=4),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(sorted(GENAI_EVENTS)),
            VALUES,
            st.dictionaries(st.sampled_from(sorted(CONTENT_KEYS)), VALUES, max_size=3),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_join_takes_any_event_content(
    events: list[tuple[str, Any, dict[str, Any]]], model: bool
) -> None:
    span = span_record("t" * 32, "s" * 16, None, 1, "chat", dict(CHAT) if model else {})
    logs = [
        LogRecord("t" * 32, "s" * 16, i, name, body, attrs, 0, "", {}, "", "")
        for i, (name, body, attrs) in enumerate(events)
    ]
    (run,) = build_runs([span], logs=logs)
    (step,) = run.steps
    assert step.kind in ("model", "other")
    json.dumps(run.to_json(), default=repr)
