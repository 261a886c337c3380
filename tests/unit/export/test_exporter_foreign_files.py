"""FileSpanExporter pointed at a file that is not a trace dump leaves it byte for byte as it was.

Only a file in the exporter's own layout is appended to, and only a tail that
looks like one of its records cut short (a killed writer's) is cut.  Anything
else is refused: one log line, the spans counted as dropped, the file intact.
"""

from __future__ import annotations

import gzip
import json
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.export.file_exporter import FileSpanExporter
from otel_replay.sources.reader import SpanReader

LAYOUTS: dict[str, dict[str, Any]] = {
    "proto": {},
    "proto+zstd": {"compression": "zstd"},
    "json": {"format": "json"},
    "json+zstd": {"format": "json", "compression": "zstd"},
}

PACKAGE_JSON = json.dumps({"name": "app", "version": "1.0.0", "private": True}, indent=2)

FOREIGN: dict[str, bytes] = {
    "package.json": PACKAGE_JSON.encode() + b"\n",
    "package.json, no final newline": PACKAGE_JSON.encode(),
    "a JSON line that is not OTLP": b'{"name":"app","version":"1.0.0"}\n',
    "a JSON object that is not OTLP, no newline": b'{"name":"app"}',
    "an OTLP/JSON document, not lines": json.dumps({"resourceSpans": []}, indent=2).encode(),
    "a JSON-lines log": b'{"level":"info","msg":"up"}\n{"level":"warn","msg":"slo',
    "a PNG": b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)),
    "a binary whose first bytes read as a small length": b"\x00\x00\x00\x05hello, not a record",
    "gzip": gzip.compress(b"hello world\n" * 10),
    "zeroes": bytes(64),
    "random bytes": random.Random(7).randbytes(4096),
}


def spans(n: int, prefix: str = "s") -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("foreign")
    for i in range(n):
        with tracer.start_as_current_span(f"{prefix}-{i}"):
            pass
    return list(exporter.get_finished_spans())


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("kind", FOREIGN)
def test_a_foreign_file_is_left_byte_for_byte(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, layout: str, kind: str
) -> None:
    path = tmp_path / "target"
    content = FOREIGN[kind]
    path.write_bytes(content)
    exporter = FileSpanExporter(path, **LAYOUTS[layout])
    with caplog.at_level(logging.WARNING, "otel_replay"):
        assert exporter.export(spans(3)) is SpanExportResult.FAILURE
        assert exporter.export(spans(2)) is SpanExportResult.FAILURE
    exporter.shutdown()
    assert path.read_bytes() == content
    assert exporter.dropped == 5
    (line,) = [r.getMessage() for r in caplog.records if "cannot write spans" in r.getMessage()]
    assert f"{path} does not look like a file of" in line and "not appending to it" in line


@pytest.mark.parametrize("layout", LAYOUTS)
def test_our_file_with_somebody_elses_bytes_after_it_is_not_cut(
    tmp_path: Path, layout: str
) -> None:
    """Past our records, bytes that are not one of our records cut short: not ours to cut."""
    path = tmp_path / "runs"
    exporter = FileSpanExporter(path, **LAYOUTS[layout])
    assert exporter.export(spans(2, "ours")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    with open(path, "ab") as f:
        f.write(b"2026-05-11 INFO a line some other program wrote here")
    content = path.read_bytes()
    later = FileSpanExporter(path, **LAYOUTS[layout])
    assert later.export(spans(1, "later")) is SpanExportResult.FAILURE
    later.shutdown()
    assert path.read_bytes() == content


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_torn_record_of_ours_is_still_cut(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "runs"
    for prefix in ("a", "torn"):
        exporter = FileSpanExporter(path, **LAYOUTS[layout])
        assert exporter.export(spans(2, prefix)) is SpanExportResult.SUCCESS
        exporter.shutdown()
    whole = path.read_bytes()
    cut = len(whole) - 7
    path.write_bytes(whole[:cut])  # a writer killed 7 bytes before the end of its record
    exporter = FileSpanExporter(path, **LAYOUTS[layout])
    assert exporter.export(spans(2, "b")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    reader = SpanReader(path)
    assert sorted(s.name for s in reader) == ["a-0", "a-1", "b-0", "b-1"]
    assert reader.problems == []


@pytest.mark.parametrize("first", [0x0A, 0x28, ord("{")])
def test_a_gzip_file_is_never_taken_for_a_torn_record(tmp_path: Path, first: int) -> None:
    """Its first bytes (1f 8b 08 00) read as a 529 MB length, then its mtime's low byte:
    with the byte a record body starts with, it looked like our record cut short."""
    path = tmp_path / "notes.gz"
    content = gzip.compress(b"hello world\n" * 10, mtime=first)
    path.write_bytes(content)
    exporter = FileSpanExporter(path)
    assert exporter.export(spans(1)) is SpanExportResult.FAILURE
    exporter.shutdown()
    assert path.read_bytes() == content
