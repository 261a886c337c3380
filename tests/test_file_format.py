"""The file format: our encoder equals encode_spans, the exporter appends safely, the reader keeps good records."""

from __future__ import annotations

import logging
import os
import struct
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import (
    Link,
    SpanContext,
    SpanKind,
    Status,
    StatusCode,
    TraceFlags,
    TraceState,
)

import otel_replay
from otel_replay import attributes as A
from otel_replay.blobs import BlobStore
from otel_replay.capture.redaction import redactor
from otel_replay.export.encoder import encode_request
from otel_replay.store.reader import SpanReader, iter_records


def make_spans(**limits: Any) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    spans: list[ReadableSpan] = []
    remote = SpanContext(
        0xABC,
        0xDEF,
        is_remote=True,
        trace_flags=TraceFlags(1),
        trace_state=TraceState([("k", "v")]),
    )
    for service in ("svc-a", "svc-b"):
        provider = TracerProvider(
            resource=Resource.create(
                {"service.name": service, "n": 3}, schema_url="https://schema/1"
            ),
            span_limits=SpanLimits(**limits) if limits else None,
        )
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        for scope in ("scope-1", "scope-2"):
            tracer = provider.get_tracer(
                scope, "0.1", schema_url="https://s", attributes={"scope.attr": 1}
            )
            ctx = trace.set_span_in_context(trace.NonRecordingSpan(remote))
            with tracer.start_as_current_span(
                "remote child", context=ctx, kind=SpanKind.SERVER
            ) as root:
                root.set_attributes(
                    {
                        "s": "text",
                        "empty": "",
                        "uni": "日本語 ✓ 🚀",
                        "t": True,
                        "f": False,
                        "i": 0,
                        "neg": -42,
                        "big": 2**63 - 1,
                        "d": 1.5,
                        "nan_free": -0.0,
                        "b": b"\x00\xff\xfenon-utf8",
                        "arr_s": ["a", "", "c"],
                        "arr_b": [True, False],
                        "arr_i": [1, -2, 3],
                        "arr_d": [0.5, 2.0],
                    }
                )
                root.add_event("ev", {"k": "v", "n": 1}, timestamp=123)
                root.add_event("bare")
                with tracer.start_as_current_span(
                    "linked",
                    kind=SpanKind.CLIENT,
                    links=[Link(remote, {"why": "retry"}), Link(root.get_span_context())],
                ) as child:
                    child.set_status(Status(StatusCode.ERROR, "boom"))
                    child.set_attribute("kv", "x" * 200)
                with tracer.start_as_current_span("ok", kind=SpanKind.PRODUCER) as ok:
                    ok.set_status(Status(StatusCode.OK))
        provider.shutdown()
    spans.extend(exporter.get_finished_spans())
    return spans


def parse(data: bytes) -> ExportTraceServiceRequest:
    return ExportTraceServiceRequest.FromString(data)


def test_encoder_equals_encode_spans() -> None:
    spans = make_spans()
    assert parse(encode_request(spans)) == encode_spans(spans)


def test_encoder_equals_encode_spans_with_dropped_counts() -> None:
    spans = make_spans(max_span_attributes=3, max_events=1, max_links=1, max_event_attributes=1)
    assert any(s.dropped_attributes for s in spans) and any(s.dropped_events for s in spans)
    assert parse(encode_request(spans)) == encode_spans(spans)


attr_values = st.one_of(
    st.text(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.binary(),
    st.lists(st.text(), max_size=3),
    st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5) | st.integers(0, 9), max_size=3),
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(st.text(min_size=1, max_size=20), attr_values, max_size=8), st.text(max_size=30)
)
def test_encoder_property(attrs: dict[str, Any], name: str) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("p").start_as_current_span(name, attributes=attrs):
        pass
    spans = exporter.get_finished_spans()
    assert parse(encode_request(spans)) == encode_spans(spans)


def test_encoder_moves_large_payloads_to_blobs_and_hides_secrets(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    big = os.urandom(5000)
    with provider.get_tracer("p").start_as_current_span("s") as span:
        span.set_attributes(
            {
                A.BYTES + A.TOOL_CALL_RESULT: big,
                A.BYTES + A.TOOL_CALL_ARGUMENTS: b"small",
                "http.request.header.authorization": "Bearer secret-value",
            }
        )
    store = BlobStore(tmp_path / "t.otlp")
    data = encode_request(
        exporter.get_finished_spans(),
        max_inline=1000,
        blobs=store,
        redact_key=redactor().is_secret_key,
    )
    attrs = {
        kv.key: kv.value for kv in parse(data).resource_spans[0].scope_spans[0].spans[0].attributes
    }
    ref = attrs[A.REF + A.TOOL_CALL_RESULT].string_value
    assert A.BYTES + A.TOOL_CALL_RESULT not in attrs
    assert store.get(ref) == big
    assert attrs[A.BYTES + A.TOOL_CALL_ARGUMENTS].bytes_value == b"small"
    assert attrs["http.request.header.authorization"].string_value == A.REDACTED_VALUE
    assert b"secret-value" not in data


def export_to(path: Path, spans: list[ReadableSpan]) -> None:
    exporter = otel_replay.FileSpanExporter(path)
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()


def test_file_roundtrip_through_the_reader(tmp_path: Path) -> None:
    spans = make_spans()
    path = tmp_path / "t.otlp"
    export_to(path, spans[:3])
    export_to(path, spans[3:])
    records = list(iter_records(path))
    assert len(records) == 2
    for offset, body in records:
        header = path.read_bytes()[offset : offset + 4]
        assert struct.unpack(">I", header)[0] == len(body)
    reader = SpanReader(path)
    got = list(reader)
    assert reader.problems == []
    assert len(got) == len(spans)
    by_name = {
        s.name: s
        for s in got
        if s.resource["service.name"] == "svc-a" and s.scope_name == "scope-1"
    }
    root = by_name["remote child"]
    assert root.attributes["b"] == b"\x00\xff\xfenon-utf8" and root.attributes["neg"] == -42
    assert root.attributes["arr_b"] == [True, False] and root.attributes["uni"] == "日本語 ✓ 🚀"
    assert root.parent_span_id == f"{0xDEF:016x}" and root.trace_id == f"{0xABC:032x}"
    assert [e.name for e in root.events] == ["ev", "bare"] and root.events[0].time_ns == 123
    assert by_name["linked"].status_code == 2 and by_name["linked"].status_message == "boom"


def test_concurrent_writers_interleave_whole_records(tmp_path: Path) -> None:
    spans = make_spans()
    path = tmp_path / "shared.otlp"
    exporters = [otel_replay.FileSpanExporter(path) for _ in range(4)]

    def write(exp: otel_replay.FileSpanExporter) -> None:
        for _ in range(50):
            exp.export(spans)

    threads = [threading.Thread(target=write, args=(e,)) for e in exporters]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    reader = SpanReader(path)
    assert sum(1 for _ in reader) == 4 * 50 * len(spans)
    assert reader.problems == []


def test_torn_tail_is_cut_before_appending(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    spans = make_spans()
    path = tmp_path / "t.otlp"
    export_to(path, spans)
    good = path.stat().st_size
    with open(path, "ab") as f:  # a writer killed mid-record
        f.write(struct.pack(">I", 5000) + b"partial")
    with caplog.at_level(logging.WARNING, "otel_replay"):
        export_to(path, spans)
    assert f"at byte {good}" in caplog.text
    reader = SpanReader(path)
    assert sum(1 for _ in reader) == 2 * len(spans)
    assert reader.problems == []


def test_disk_failure_never_raises_and_is_counted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "is-a-directory"
    path.mkdir()
    exporter = otel_replay.FileSpanExporter(path)
    spans = make_spans()
    with caplog.at_level(logging.WARNING, "otel_replay"):
        assert exporter.export(spans) is SpanExportResult.FAILURE
        assert exporter.export(spans) is SpanExportResult.FAILURE
    assert exporter.dropped == 2 * len(spans)
    assert caplog.text.count("cannot write spans") == 1


def test_truncated_last_record_is_reported_and_good_ones_kept(tmp_path: Path) -> None:
    spans = make_spans()
    path = tmp_path / "t.otlp"
    export_to(path, spans[:2])
    export_to(path, spans[2:4])
    second = list(iter_records(path))[1][0]
    with open(path, "r+b") as f:
        f.truncate(path.stat().st_size - 10)
    reader = SpanReader(path)
    got = list(reader)
    assert len(got) == 2
    (problem,) = reader.problems
    assert problem.offset == second and problem.path == str(path)
    assert "truncated record" in str(problem) and f"at byte {second}" in str(problem)


@pytest.mark.parametrize(
    ("content", "offset_of_fault", "words"),
    [
        (b'{"resourceMetrics": []}\n', 0, "metrics data, not traces"),
        (b"\x13\x37 neither proto nor json", 0, "no known format"),
        (b"\x00\x00\x00\x05\xff\xff\xff\xff\xff", 0, "corrupt record"),
        (b"\x00\x00", 0, "truncated record"),
    ],
)
def test_bad_files_name_file_and_offset(
    tmp_path: Path, content: bytes, offset_of_fault: int, words: str
) -> None:
    path = tmp_path / "bad.otlp"
    path.write_bytes(content)
    reader = SpanReader(path)
    assert list(reader) == []
    (problem,) = reader.problems
    assert problem.offset == offset_of_fault and words in str(problem) and str(path) in str(problem)


def test_corrupt_record_after_good_ones(tmp_path: Path) -> None:
    spans = make_spans()
    path = tmp_path / "t.otlp"
    export_to(path, spans[:3])
    bad_at = path.stat().st_size
    with open(path, "ab") as f:
        f.write(struct.pack(">I", 6) + b"\xff\xff\xff\xff\xff\xff")
    reader = SpanReader(path)
    assert len(list(reader)) == 3
    assert reader.problems[0].offset == bad_at


def test_empty_file_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "empty.otlp"
    path.write_bytes(b"")
    reader = SpanReader(path)
    assert list(reader) == [] and reader.problems == []


def test_load_warns_and_keeps_runs(tmp_path: Path) -> None:
    spans = make_spans()
    path = tmp_path / "t.otlp"
    export_to(path, spans)
    with open(path, "ab") as f:
        f.write(b"\x00\x00\x10")
    with pytest.warns(otel_replay.LoadWarning, match="truncated record"):
        runs = otel_replay.load(path)
    assert len(runs) == 1 and len(runs[0].steps) == len(spans) and len(runs.problems) == 1
    with pytest.raises(otel_replay.FormatError):
        otel_replay.load(path, strict=True)
