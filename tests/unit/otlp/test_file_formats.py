"""FileSpanExporter in each of the Collector's layouts: proto or JSON lines, zstd or not."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.export.file_exporter import FileSpanExporter
from otel_replay.otlp import framing
from otel_replay.otlp.json_writer import encode_json_request
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.otlp.sniff import iter_be32
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT


def spans(n: int, prefix: str = "s", **attributes: Any) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("formats")
    with tracer.start_as_current_span(f"{prefix}-root"):
        for i in range(n - 1):
            with tracer.start_as_current_span(f"{prefix}-{i}") as span:
                span.set_attributes({"i": i, "b": b"\xff\x00", "d": 0.25, **attributes})
    return list(exporter.get_finished_spans())


def read(path: Path) -> tuple[list[Any], SpanReader]:
    reader = SpanReader(path)
    return list(reader), reader


def export_all(path: Path, batches: list[list[ReadableSpan]], **kwargs: Any) -> FileSpanExporter:
    exporter = FileSpanExporter(path, **kwargs)
    for batch in batches:
        assert exporter.export(batch) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert exporter.dropped == 0
    return exporter


LAYOUTS = {
    "proto": {},
    "proto+zstd": {"compression": "zstd"},
    "json": {"format": "json"},
    "json+zstd": {"format": "json", "compression": "zstd"},
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_every_layout_reads_back(tmp_path: Path, layout: str) -> None:
    batches = [spans(3, "a"), spans(4, "b")]
    path = tmp_path / "t.dump"
    export_all(path, batches, **LAYOUTS[layout])
    records, reader = read(path)
    assert reader.problems == []
    assert [r.name for r in records] == [s.name for b in batches for s in b]
    assert records[0].attributes == {"i": 0, "b": b"\xff\x00", "d": 0.25}


def test_json_lines_are_the_json_writer_bytes(tmp_path: Path) -> None:
    batches = [spans(3, "a"), spans(2, "b")]
    path = tmp_path / "t.jsonl"
    export_all(path, batches, format="json")
    assert path.read_bytes() == b"".join(encode_json_request(b) + b"\n" for b in batches)


@pytest.mark.parametrize("fmt", ["proto", "json"])
def test_zstd_is_one_frame_per_record_inside_the_length_prefix(tmp_path: Path, fmt: str) -> None:
    # The Collector's default zstd mode, for both formats: each message compressed
    # on its own, prefixed by its compressed length (json+zstd has no newline).
    batches = [spans(3, "a"), spans(2, "b")]
    path = tmp_path / "t.zst"
    export_all(path, batches, format=fmt, compression="zstd")
    with open(path, "rb") as f:
        bodies = [body for _, body in iter_be32(f, str(path))]
    assert [b[:4] for b in bodies] == [b"\x28\xb5\x2f\xfd"] * 2
    encode = encode_json_request if fmt == "json" else encode_request
    assert [zstandard.ZstdDecompressor().decompress(b) for b in bodies] == [
        encode(b) for b in batches
    ]


def test_format_and_compression_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OTEL_REPLAY_FORMAT", "JSON")
    monkeypatch.setenv("OTEL_REPLAY_COMPRESSION", "zstd")
    exporter = FileSpanExporter()
    assert (exporter.format, exporter.compression, exporter.path) == (
        "json",
        "zstd",
        "otel-replay.jsonl",
    )
    assert FileSpanExporter(format="proto", compression="none").compression is None
    monkeypatch.setenv("OTEL_REPLAY_COMPRESSION", "none")
    exporter = FileSpanExporter()
    assert exporter.compression is None
    assert exporter.export(spans(2)) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert (tmp_path / "otel-replay.jsonl").read_bytes().startswith(b'{"resourceSpans":')
    monkeypatch.delenv("OTEL_REPLAY_FORMAT")
    monkeypatch.delenv("OTEL_REPLAY_COMPRESSION")
    default = FileSpanExporter()
    assert (default.format, default.compression, default.path) == (
        "proto",
        None,
        "otel-replay.otlp",
    )


def test_unknown_settings_are_logged_and_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_REPLAY_COMPRESSION", "brotli")
    exporter = FileSpanExporter(tmp_path / "t", format="xml")
    assert (exporter.format, exporter.compression) == ("proto", None)
    assert "'xml' is not one of proto, json" in caplog.text
    assert "'brotli' is not one of zstd" in caplog.text
    assert exporter.export(spans(2)) is SpanExportResult.SUCCESS


# --- torn tails and other people's files, JSON lines -------------------------------------


def test_torn_json_line_is_cut_before_appending(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t.jsonl"
    export_all(path, [spans(2, "a")], format="json")
    whole = path.read_bytes()
    with open(path, "ab") as f:
        f.write(encode_json_request(spans(2, "torn"))[:100])  # a killed writer's half line
    records, reader = read(path)
    assert [r.name for r in records] == ["a-0", "a-root"]
    assert [p.offset for p in reader.problems] == [len(whole)]
    export_all(path, [spans(2, "b")], format="json")
    assert "cutting 100 bytes" in caplog.text
    records, reader = read(path)
    assert reader.problems == []
    assert [r.name for r in records] == ["a-0", "a-root", "b-0", "b-root"]


def test_torn_first_json_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"resourceSpans":[{"reso')
    export_all(path, [spans(2, "b")], format="json")
    assert [r.name for r in read(path)[0]] == ["b-0", "b-root"]


@pytest.mark.parametrize(
    ("fmt", "content"),
    [
        ("json", b"2026-05-11 INFO not a trace file\n"),
        ("json", framing.HEADER.pack(3) + b"\x0a\x01\x00"),  # a proto dump
        ("proto", b'{"resourceSpans":[]}\n'),  # a JSON dump
    ],
)
def test_does_not_append_to_a_file_of_another_layout(
    tmp_path: Path, fmt: str, content: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "other"
    path.write_bytes(content)
    exporter = FileSpanExporter(path, format=fmt)
    assert exporter.export(spans(2)) is SpanExportResult.FAILURE  # counted, not raised
    assert exporter.dropped == 2
    assert path.read_bytes() == content
    assert "does not look like a file of" in caplog.text


def test_zstd_torn_tail_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "t.zst"
    export_all(path, [spans(2, "a")], compression="zstd")
    whole = path.read_bytes()
    path.write_bytes(whole + whole[:9])  # a header and the start of a zstd frame
    export_all(path, [spans(2, "b")], compression="zstd")
    records, reader = read(path)
    assert reader.problems == []
    assert [r.name for r in records] == ["a-0", "a-root", "b-0", "b-root"]


# --- a writer killed while it writes JSON lines -------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from otel_replay.export.file_exporter import FileSpanExporter

    path, tag = sys.argv[1], sys.argv[2]
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(FileSpanExporter(path, format="json")))
    tracer = provider.get_tracer("kill")
    big = "z" * (24 << 20)  # lines of 24 MB: a write takes long enough to be killed in
    n = 0
    while True:
        with tracer.start_as_current_span(f"{tag}-{n}") as span:
            span.set_attribute("pad", big if n % 2 else "small")
        n += 1
        print(f"exported {n}", flush=True)
    """
)


def run_and_kill(script: Path, path: Path, tag: str, rng: random.Random) -> int:
    """Start a JSON-lines writer, SIGKILL it at a random moment; how many it said it exported."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path), tag], stdout=subprocess.PIPE, text=True, env=env
    )
    exported = [0]
    started = threading.Event()

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            exported[0] = int(line.split()[1])
            started.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    try:
        assert started.wait(30), "the writer never exported"
        time.sleep(rng.uniform(0.0, 0.4))
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
    follower.join(10)
    return exported[0]


def test_sigkilled_json_writer_loses_no_exported_line(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    path = tmp_path / "t.jsonl"
    rng = random.Random(7)
    expected: dict[str, int] = {}
    tears = 0
    for round_ in range(5):
        tag = f"w{round_}"
        expected[tag] = run_and_kill(script, path, tag, rng)
        data = path.read_bytes()
        if not data.endswith(b"\n"):
            tears += 1  # killed inside a write: the reader keeps every whole line before it
        whole = data[: data.rfind(b"\n") + 1]
        records, reader = read(path)
        assert [p.offset for p in reader.problems] == ([len(whole)] if whole != data else [])
        names = [r.name for r in records]
        for t, n in expected.items():  # every exported span of every writer, in order
            mine = [x for x in names if x.startswith(f"{t}-")]
            assert mine[:n] == [f"{t}-{i}" for i in range(n)] and len(mine) <= n + 1
    if tears == 0:  # the kills all fell between writes: tear the last line ourselves
        with open(path, "ab") as f:
            f.write(b'{"resourceSpans":[{"resource":{"attr')
    # The next writer cuts the torn line and appends whole lines after the last good one.
    exporter = FileSpanExporter(path, format="json")
    assert exporter.export(spans(2, "after")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    records, reader = read(path)
    assert reader.problems == []
    assert [r.name for r in records][-2:] == ["after-0", "after-root"]
    assert path.read_bytes().endswith(b"\n")
