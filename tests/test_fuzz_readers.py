"""Fuzzing the readers: whatever the bytes, the only failure is a reported FormatError."""

from __future__ import annotations

import json
import shutil
import struct
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry._logs import LogRecord
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.store.errors import FormatError
from otel_replay.store.reader import RecordReader, SpanReader


def _seed_files() -> list[bytes]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("fuzz").start_as_current_span("root", attributes={"k": "v", "n": 1}):
        pass
    message = encode_spans(exporter.get_finished_spans()).SerializeToString()
    span = exporter.get_finished_spans()[0]
    doc = {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": f"{span.context.trace_id:032x}",
                                "spanId": f"{span.context.span_id:016x}",
                                "name": "root",
                                "kind": 1,
                            }
                        ]
                    }
                ]
            }
        ]
    }
    line = json.dumps(doc).encode()
    z = zstandard.ZstdCompressor()
    return [
        struct.pack(">I", len(message)) + message,
        bytes([len(message)]) + message if len(message) < 128 else message,
        message,
        line + b"\n" + line + b"\n",
        json.dumps(doc, indent=2).encode(),
        z.compress(struct.pack(">I", len(message)) + message),
        struct.pack(">I", len(z.compress(message))) + z.compress(message),
    ]


def _log_seed_files() -> list[bytes]:
    """Log dumps (a GenAI event tied to a span), alone and mixed with spans."""
    provider = LoggerProvider()
    exporter = InMemoryLogRecordExporter()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    provider.get_logger("fuzz").emit(
        LogRecord(
            trace_id=0xABC,
            span_id=0xDEF,
            event_name="gen_ai.choice",
            body={"index": 0, "message": {"content": "hi", "tool_calls": [{"id": "c"}]}},
            attributes={"event.name": "gen_ai.choice", "n": 1},
        )
    )
    message = encode_logs(exporter.get_finished_logs()).SerializeToString()
    record = {
        "traceId": f"{0xABC:032x}",
        "spanId": f"{0xDEF:016x}",
        "eventName": "gen_ai.choice",
        "severityNumber": "SEVERITY_NUMBER_INFO",
        "body": {"kvlistValue": {"values": [{"key": "index", "value": {"intValue": "0"}}]}},
    }
    line = json.dumps({"resourceLogs": [{"scopeLogs": [{"logRecords": [record]}]}]}).encode()
    z = zstandard.ZstdCompressor()
    traces = SEEDS[0]
    return [
        struct.pack(">I", len(message)) + message,
        message,
        line + b"\n" + SEEDS[3],
        traces + struct.pack(">I", len(message)) + message,
        struct.pack(">I", len(z.compress(message))) + z.compress(message),
    ]


SEEDS = _seed_files()
SEEDS += _log_seed_files()
TMP = Path(tempfile.mkdtemp(prefix="otel-replay-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_tmp() -> Iterator[None]:
    yield
    shutil.rmtree(TMP, ignore_errors=True)


def _read(data: bytes) -> None:
    path = TMP / "input"
    path.write_bytes(data)
    for reader in (SpanReader(path), RecordReader(path)):
        for record in reader:  # must not raise
            assert isinstance(record.trace_id, str)
        for problem in reader.problems:
            assert isinstance(problem, FormatError)
            assert problem.path == str(path) and problem.offset >= 0


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=512))
def test_random_bytes(data: bytes) -> None:
    _read(data)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(range(len(SEEDS))),
    st.lists(st.tuples(st.integers(min_value=0, max_value=4096), st.integers(0, 255)), max_size=6),
    st.integers(min_value=0, max_value=4096),
)
def test_mutated_valid_files(seed: int, flips: list[tuple[int, int]], cut: int) -> None:
    data = bytearray(SEEDS[seed])
    for pos, value in flips:
        if data:
            data[pos % len(data)] = value
    _read(bytes(data[: max(0, len(data) - cut % (len(data) + 1))]))
