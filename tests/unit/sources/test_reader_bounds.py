"""Readers on inputs anyone may hand over: long lines, bombs, deep nesting.

Whatever the file holds, reading it costs bounded memory and time; a bad
record is reported with the file and its byte offset and costs only itself.
"""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import struct
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import zstandard
from click.testing import CliRunner
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.otlp.sniff import HEAD
from otel_replay.sources.reader import RecordReader
from tests.fixtures.data import ROOT


def record_agent_runs(path: Path, runs: int, spans_per_run: int, pad: int, **exporter: Any) -> None:
    """``runs`` agent runs recorded with the SDK, one export batch (one line or record) per run.

    The batch processor is told never to export on its own: each run's
    ``force_flush`` is one export, however busy the machine (a timer would cut
    a run in two).
    """
    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    provider.add_span_processor(
        BatchSpanProcessor(
            otel_replay.FileSpanExporter(path, **exporter),
            max_queue_size=1 << 20,
            schedule_delay_millis=1e9,
            max_export_batch_size=1 << 20,
        )
    )
    previous = otel_replay.use_tracer_provider(provider)
    tracer = provider.get_tracer("bounds")
    try:
        for n in range(runs):
            with otel_replay.agent_run(f"agent-{n}", input="go") as run:
                for i in range(spans_per_run):
                    with tracer.start_as_current_span(f"step-{i}") as span:
                        span.set_attribute("pad", "x" * pad)
                run.record("done")
            provider.force_flush()
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


def show_json(*paths: Path) -> tuple[int, list[dict[str, Any]], str]:
    result = CliRunner().invoke(cli, ["show", "--json", *map(str, paths)])
    runs = json.loads(result.stdout)["runs"] if result.stdout.strip() else []
    return result.exit_code, runs, result.stderr


# --- JSON lines are told by what they hold, not by how much fits in a buffer ----------


def test_json_lines_longer_than_the_sniffer_reads(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    record_agent_runs(path, runs=3, spans_per_run=300, pad=10_000, format="json")
    lines = path.read_bytes().splitlines()
    # A line per run, every one far past what the sniffer reads.
    assert len(lines) == 3 and all(len(line) > 10 * HEAD for line in lines)

    runs = otel_replay.load(path, strict=True)
    assert [r.steps[0].name for r in runs] == [f"invoke_agent agent-{n}" for n in range(3)]
    assert all(len(r.steps) == 301 for r in runs)

    code, shown, stderr = show_json(path)
    assert code == 0, stderr
    assert len(shown) == 3

    # The same file gzip-compressed: read as a stream, the first line is not in the buffer either.
    zipped = tmp_path / "big.jsonl.gz"
    zipped.write_bytes(gzip.compress(path.read_bytes(), compresslevel=1))
    reader = RecordReader(zipped)
    assert sum(1 for _ in reader) == 3 * 301 and reader.problems == []
    assert reader.format == "gzip+jsonl"


def test_a_long_bad_first_line_costs_only_that_line(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    record_agent_runs(good, runs=2, spans_per_run=30, pad=10_000, format="json")
    bad_line = b'{"resourceSpans": [' + b'"x",' * 100_000 + b"\n"  # cut short: not JSON
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(bad_line + good.read_bytes())
    reader = RecordReader(path)
    assert sum(1 for _ in reader) == 2 * 31
    assert reader.format == "jsonl"
    (problem,) = reader.problems
    assert problem.offset == 0 and "bad JSON line" in problem.reason


# --- decompression bombs ---------------------------------------------------------------

SRC = ROOT / "src"
#: Address space the CLI gets below: far under what any bomb here expands to.
ADDRESS_SPACE = 256 * 1024 * 1024
CAP = 16 * 1024 * 1024
_UNDER_RLIMIT = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[1]), int(sys.argv[1])))
from otel_replay.cli.main import main
sys.argv = ["otel-replay", *sys.argv[2:]]
main()
"""


def cli_in_little_memory(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """``otel-replay ARGS`` in a process that cannot map more than :data:`ADDRESS_SPACE`."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "OTEL_REPLAY_MAX_RECORD_BYTES": str(CAP)}
    return subprocess.run(
        [sys.executable, "-c", _UNDER_RLIMIT, str(ADDRESS_SPACE), *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )


def zstd_bomb(gigabytes: int) -> bytes:
    """One zstd frame of zeros, without its size in the header: ~33 KB a gigabyte."""
    out = io.BytesIO()
    chunk = bytes(64 * 1024 * 1024)
    with zstandard.ZstdCompressor(level=1).stream_writer(out, closefd=False) as writer:
        for _ in range(gigabytes * 16):
            writer.write(chunk)
    return out.getvalue()


def repeated(compress: Callable[[bytes], bytes], byte: bytes, megabytes: int) -> bytes:
    """``megabytes`` of ``byte`` as concatenated gzip members or zstd frames (both read on)."""
    piece = compress(byte * (16 * 1024 * 1024))
    return piece * (megabytes // 16)


def frame(body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + body


def two_dumps(tmp_path: Path, **exporter: Any) -> tuple[bytes, bytes]:
    """Two real dumps of one agent run each."""
    out = []
    for name in ("before", "after"):
        path = tmp_path / f"{name}.dump"
        record_agent_runs(path, runs=1, spans_per_run=3, pad=10, **exporter)
        out.append(path.read_bytes())
    return out[0], out[1]


def assert_bomb_reported(done: subprocess.CompletedProcess[str], path: Path, offset: int) -> None:
    assert "Traceback" not in done.stderr and "MemoryError" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stderr
    shown = json.loads(done.stdout)["runs"]
    assert [r["steps"][0]["name"] for r in shown] == ["invoke_agent agent-0"] * 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"otel-replay: error: {path}: ") and line.endswith(f" at byte {offset}")
    assert "the 16 MiB limit (OTEL_REPLAY_MAX_RECORD_BYTES)" in line


def test_zstd_record_bomb_costs_that_record(tmp_path: Path) -> None:
    before, after = two_dumps(tmp_path, compression="zstd")
    bomb = zstd_bomb(3)
    assert len(bomb) < 150_000  # 3 GB of zeros
    path = tmp_path / "bomb.otlp"
    path.write_bytes(before + frame(bomb) + after)
    done = cli_in_little_memory("show", "--json", path)
    assert_bomb_reported(done, path, len(before))
    assert "record decompresses past the 16 MiB limit" in done.stderr


@pytest.mark.parametrize("compression", ["gzip", "zstd"])
def test_compressed_json_line_bomb_costs_that_line(tmp_path: Path, compression: str) -> None:
    before, after = two_dumps(tmp_path, format="json")
    compress = (
        functools.partial(gzip.compress, compresslevel=9)
        if compression == "gzip"
        else zstandard.ZstdCompressor(level=3).compress
    )
    bomb = repeated(compress, b"x", 512) + compress(b"\n")  # one 512 MB line
    assert len(bomb) < 1_000_000
    path = tmp_path / f"bomb.jsonl.{compression}"
    path.write_bytes(compress(before) + bomb + compress(after))
    done = cli_in_little_memory("show", "--json", path)
    assert_bomb_reported(done, path, len(before))
    assert "line longer than the 16 MiB limit" in done.stderr


def test_compressed_framed_record_bomb_costs_that_record(tmp_path: Path) -> None:
    before, after = two_dumps(tmp_path)
    body = bytes(400 * 1024 * 1024)  # a length the framing allows, far past the record limit
    path = tmp_path / "bomb.otlp.gz"
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(before)
        f.write(struct.pack(">I", len(body)))
        f.write(body)
        f.write(after)
    del body
    done = cli_in_little_memory("show", "--json", path)
    assert_bomb_reported(done, path, len(before))
    assert "record of 419430400 bytes is past the 16 MiB limit" in done.stderr


def test_a_zstd_record_cut_short_is_reported(tmp_path: Path) -> None:
    before, after = two_dumps(tmp_path, compression="zstd")
    records = tmp_path / "records.dump"
    record_agent_runs(records, runs=1, spans_per_run=3, pad=10)
    # A frame that does not say its size (streamed), cut short: it decompresses quietly to less.
    whole = zstandard.ZstdCompressor(write_content_size=False).compress(records.read_bytes()[4:])
    path = tmp_path / "t.otlp"
    path.write_bytes(before + frame(whole[: len(whole) // 2]) + after)
    reader = RecordReader(path)
    assert sum(1 for _ in reader) == 2 * 4
    (problem,) = reader.problems
    assert (problem.offset, problem.reason) == (len(before), "bad zstd frame (cut short)")


def test_a_gzip_stream_cut_short_is_reported_where_it_ends(tmp_path: Path) -> None:
    lines = tmp_path / "t.jsonl"
    record_agent_runs(lines, runs=30, spans_per_run=3, pad=1000, format="json")
    data = lines.read_bytes()
    zipped = gzip.compress(data)
    cut = zipped[: len(zipped) - 12]  # the trailer and a little of the last block
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(cut)
    reader = RecordReader(path)
    kept = [r.name for r in reader]
    assert "invoke_agent agent-2" in kept
    (problem,) = reader.problems
    got = len(zlib.decompressobj(31).decompress(cut))  # what the cut stream still holds
    assert 0 < problem.offset <= got and problem.reason.startswith("bad gzip stream")


def test_a_record_past_the_limit_is_passed_over_and_the_limit_is_configurable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    before, after = two_dumps(tmp_path)
    big = tmp_path / "big.dump"
    record_agent_runs(big, runs=1, spans_per_run=200, pad=10_000)  # one ~2 MB record
    path = tmp_path / "t.otlp"
    path.write_bytes(before + big.read_bytes() + after)

    monkeypatch.setenv("OTEL_REPLAY_MAX_RECORD_BYTES", str(1024 * 1024))
    reader = RecordReader(path)
    assert sum(1 for _ in reader) == 2 * 4
    (problem,) = reader.problems
    assert problem.offset == len(before)
    assert problem.reason == (
        f"record of {len(big.read_bytes()) - 4} bytes is past the 1 MiB limit "
        "(OTEL_REPLAY_MAX_RECORD_BYTES)"
    )

    monkeypatch.setenv("OTEL_REPLAY_MAX_RECORD_BYTES", str(4 * 1024 * 1024))
    reader = RecordReader(path)
    assert sum(1 for _ in reader) == 2 * 4 + 201 and reader.problems == []


def test_a_json_document_past_the_limit_is_reported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = tmp_path / "t.jsonl"
    record_agent_runs(lines, runs=1, spans_per_run=200, pad=10_000, format="json")
    path = tmp_path / "t.json"
    path.write_text(json.dumps(json.loads(lines.read_bytes()), indent=2))
    monkeypatch.setenv("OTEL_REPLAY_MAX_RECORD_BYTES", str(1024 * 1024))
    reader = RecordReader(path)
    assert list(reader) == [] and reader.format == "json"
    (problem,) = reader.problems
    assert str(problem) == (
        f"{path}: JSON document larger than the 1 MiB limit (OTEL_REPLAY_MAX_RECORD_BYTES)"
    )


# --- deep nesting ----------------------------------------------------------------------


def nested_value(levels: int) -> dict[str, Any]:
    """An OTLP/JSON AnyValue: a list in a list ... ``levels`` deep."""
    value: dict[str, Any] = {"stringValue": "bottom"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


def span_line(name: str, value: dict[str, Any] | None = None) -> bytes:
    span: dict[str, Any] = {"traceId": "ab" * 16, "spanId": f"{len(name):016x}", "name": name}
    if value is not None:
        span["attributes"] = [{"key": "deep", "value": value}]
    doc = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
    return json.dumps(doc).encode() + b"\n"


def test_a_deeply_nested_json_line_costs_only_that_line(tmp_path: Path) -> None:
    first, last = span_line("first"), span_line("last-one")
    path = tmp_path / "deep.jsonl"
    path.write_bytes(first + b"[" * 100_000 + b"\n" + last)
    reader = RecordReader(path)
    assert [r.name for r in reader] == ["first", "last-one"]
    (problem,) = reader.problems
    assert problem.offset == len(first)
    assert problem.reason.startswith("bad JSON line (JSON nested too deep")

    code, shown, stderr = show_json(path)
    assert code == 2 and len(shown) == 1 and len(shown[0]["steps"]) == 2
    assert stderr.strip().endswith(f"at byte {len(first)}") and "Traceback" not in stderr


def test_attribute_values_nested_past_the_bound_cost_their_line(tmp_path: Path) -> None:
    first, last = span_line("first"), span_line("last-one")
    fine = span_line("fine", nested_value(64))
    path = tmp_path / "deep.jsonl"
    path.write_bytes(first + span_line("deep", nested_value(65)) + fine + last)
    reader = RecordReader(path)
    assert [r.name for r in reader] == ["first", "fine", "last-one"]
    (problem,) = reader.problems
    assert problem.offset == len(first)
    assert problem.reason == "bad JSON line (attribute value nested deeper than 64 levels)"


def test_a_deeply_nested_json_document_is_reported_where_it_gets_too_deep(tmp_path: Path) -> None:
    head = b'{\n  "resourceSpans": '
    path = tmp_path / "deep.json"
    path.write_bytes(head + b"[" * 100_000 + b"]" * 100_000 + b"\n}\n")
    reader = RecordReader(path)
    assert list(reader) == [] and reader.format == "json"
    (problem,) = reader.problems
    assert problem.reason.startswith("JSON nested too deep")
    assert len(head) < problem.offset < len(head) + 100_000

    done = CliRunner().invoke(cli, ["check", str(path)])
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert done.stderr.splitlines()[0].startswith(
        f"otel-replay: error: {path}: JSON nested too deep"
    )


def test_a_protobuf_record_nested_past_the_parser_bound_costs_that_record(tmp_path: Path) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = b"\x01" * 16, b"\x02" * 8, "deep"
    value = span.attributes.add(key="deep").value
    for _ in range(200):
        value = value.array_value.values.add()
    value.string_value = "bottom"
    before, after = two_dumps(tmp_path)
    path = tmp_path / "deep.otlp"
    path.write_bytes(before + frame(request.SerializeToString()) + after)
    reader = RecordReader(path)
    assert sum(1 for _ in reader) == 2 * 4
    (problem,) = reader.problems
    assert problem.offset == len(before) and "corrupt record" in problem.reason
