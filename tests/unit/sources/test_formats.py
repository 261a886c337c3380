"""Every format a user may hold reads to the same spans; bad input names file and offset."""

from __future__ import annotations

import base64
import gzip
import http.server
import io
import json
import struct
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import zstandard
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.sources.files import expand
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import COLLECTOR, THIRDPARTY_FORMATS, found


def make_spans(n: int = 4) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("formats")
    with tracer.start_as_current_span("root"):
        for i in range(n):
            with tracer.start_as_current_span(f"child {i}") as s:
                s.set_attributes(
                    {"i": i, "b": b"\xff\x00", "s": "ü", "l": [1, 2], "f": 0.5, "t": True}
                )
    return list(exporter.get_finished_spans())


def to_json(spans: list[ReadableSpan]) -> dict[str, Any]:
    """OTLP/JSON as the spec writes it: hex ids, int64 as strings, bytes base64."""

    def value(v: Any) -> dict[str, Any]:
        if isinstance(v, bool):
            return {"boolValue": v}
        if isinstance(v, int):
            return {"intValue": str(v)}
        if isinstance(v, float):
            return {"doubleValue": v}
        if isinstance(v, bytes):
            return {"bytesValue": base64.b64encode(v).decode()}
        if isinstance(v, (list, tuple)):
            return {"arrayValue": {"values": [value(x) for x in v]}}
        return {"stringValue": v}

    return {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [
                    {
                        "scope": {"name": "formats"},
                        "spans": [
                            {
                                "traceId": f"{s.context.trace_id:032X}",  # upper case is allowed
                                "spanId": f"{s.context.span_id:016x}",
                                "parentSpanId": f"{s.parent.span_id:016x}" if s.parent else "",
                                "name": s.name,
                                "kind": "SPAN_KIND_INTERNAL",
                                "startTimeUnixNano": str(s.start_time),
                                "endTimeUnixNano": s.end_time,  # a number works too
                                "attributes": [
                                    {"key": k, "value": value(v)} for k, v in s.attributes.items()
                                ],
                                "status": {"code": 0},
                                "someFutureField": {"ignored": True},
                            }
                            for s in spans
                        ],
                    }
                ],
            }
        ]
    }


def be32(messages: list[bytes]) -> bytes:
    return b"".join(struct.pack(">I", len(m)) + m for m in messages)


def varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def signature(records: Any) -> list[tuple[Any, ...]]:
    return sorted(
        (
            r.trace_id,
            r.span_id,
            r.parent_span_id,
            r.name,
            r.start_ns,
            r.end_ns,
            tuple(sorted(r.attributes.items(), key=lambda kv: kv[0])).__repr__(),
        )
        for r in records
    )


def variants(spans: list[ReadableSpan]) -> dict[str, bytes]:
    half = len(spans) // 2
    protos = [
        encode_spans(spans[:half]).SerializeToString(),
        encode_spans(spans[half:]).SerializeToString(),
    ]
    jsons = [json.dumps(to_json(spans[:half])).encode(), json.dumps(to_json(spans[half:])).encode()]
    z = zstandard.ZstdCompressor()
    return {
        "proto.otlp": be32(protos),
        "proto-zstd-per-message.otlp": be32([z.compress(m) for m in protos]),
        "proto-zstd-whole-file.otlp": z.compress(be32(protos)),
        "varint.ldpb": b"".join(varint(len(m)) + m for m in protos),
        "single.pb": encode_spans(spans).SerializeToString(),
        "lines.json": b"\n".join(jsons) + b"\n",
        "lines-zstd-per-message.json": be32([z.compress(j + b"\n") for j in jsons]),
        "lines-zstd-whole-file.json": z.compress(b"\n".join(jsons) + b"\n"),
        "pretty.json": json.dumps(to_json(spans), indent=2).encode(),
        "proto.otlp.gz": gzip.compress(be32(protos)),
        "lines.json.gz": gzip.compress(b"\n".join(jsons)),
    }


def test_every_format_reads_the_same_spans(tmp_path: Path) -> None:
    spans = make_spans()
    expected = signature(
        SpanReader(_write(tmp_path / "ref.otlp", be32([encode_spans(spans).SerializeToString()])))
    )
    assert len(expected) == len(spans)
    for name, data in variants(spans).items():
        reader = SpanReader(_write(tmp_path / name, data))
        got = signature(reader)
        assert reader.problems == [], (name, reader.problems)
        assert got == expected, name


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_public_samples(tmp_path: Path) -> None:
    proto_example = SpanReader(COLLECTOR / "proto-examples-trace.json")
    (span,) = list(proto_example)
    assert span.trace_id == "5b8efff798038103d269b633813fc60c" and span.kind == 2
    assert span.start_ns == 1544712660000000000 and span.parent_span_id == "eee19b7ec3c1b173"
    spec = SpanReader(COLLECTOR / "file-exporter-md-traces-example.jsonl")
    assert len(list(spec)) == 8 and spec.format == "jsonl" and spec.problems == []
    for case in found(THIRDPARTY_FORMATS, "*/*/*/"):
        sigs = [
            signature(SpanReader(case / f"traces.otlp.{ext}")) for ext in ("jsonl", "ldpb", "pb")
        ]
        assert sigs[0] == sigs[1] == sigs[2] and sigs[0], case


def test_metrics_and_logs_are_named_not_misread() -> None:
    for path, said in [
        # A file of metrics is one as a whole: no byte meant.
        (COLLECTOR / "filereceiver-metrics.json", "metrics data, not traces or logs"),
        (COLLECTOR / "proto-examples-logs.json", "logs data, not traces at byte 0"),
    ]:
        reader = SpanReader(path)
        assert list(reader) == []
        assert str(reader.problems[0]).endswith(said)


def test_bad_json_line_costs_only_that_line(tmp_path: Path) -> None:
    spans = make_spans()
    good = json.dumps(to_json(spans[:2])).encode()
    bad_id = json.dumps(to_json(spans[2:3])).replace('"spanId": "', '"spanId": "zz', 1).encode()
    data = (
        good + b"\n{not json\n" + bad_id + b"\n" + json.dumps(to_json(spans[3:])).encode() + b"\n"
    )
    reader = SpanReader(_write(tmp_path / "x.json", data))
    got = list(reader)
    assert len(got) == len(spans) - 1
    offsets = [p.offset for p in reader.problems]
    assert offsets == [len(good) + 1, len(good) + 1 + len(b"{not json\n")]
    assert "spanId" in str(reader.problems[1])


def test_bad_zstd_frame_keeps_the_records_before(tmp_path: Path) -> None:
    spans = make_spans()
    z = zstandard.ZstdCompressor()
    first = z.compress(encode_spans(spans[:2]).SerializeToString())
    broken = bytearray(z.compress(encode_spans(spans[2:]).SerializeToString()))
    broken[6:12] = b"\x00" * 6
    reader = SpanReader(_write(tmp_path / "z.otlp", be32([first, bytes(broken)])))
    assert len(list(reader)) == 2
    assert reader.problems[0].offset == 4 + len(first) and "zstd" in str(reader.problems[0])


def test_stdin(tmp_path: Path) -> None:
    data = variants(make_spans())["lines-zstd-whole-file.json"]
    code = "import sys; from otel_replay.sources.reader import SpanReader; r = SpanReader('-'); print(len(list(r)), r.format, r.problems)"
    done = subprocess.run(
        [sys.executable, "-c", code], input=data, capture_output=True, check=False
    )
    assert done.stdout.decode().split()[:2] == ["5", "zstd+jsonl"], done.stderr


def test_http_url_on_loopback() -> None:
    body = json.dumps(to_json(make_spans())).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.handle_request, daemon=True)
    thread.start()
    reader = SpanReader(f"http://127.0.0.1:{server.server_address[1]}/api/traces/abc")
    assert len(list(reader)) == 5 and reader.problems == []
    thread.join(5)
    server.server_close()


def test_expand_directories_globs_and_rotation(tmp_path: Path) -> None:
    live = tmp_path / "dump" / "svc-a" / "traces.json"
    live.parent.mkdir(parents=True)
    for name in (
        "traces-2022-09-14T05-02-14.173.json",
        "traces-2022-09-13T23-59-59.000.json",
        "traces.json",
    ):
        (live.parent / name).write_text("{}")
    (live.parent / ".hidden").write_text("x")
    (live.parent / "notes.md").write_text("x")
    blobs = tmp_path / "dump" / "run.otlp.blobs"
    blobs.mkdir()
    (blobs / ("0" * 64)).write_bytes(b"blob")
    got = [Path(p).name for p in expand([tmp_path / "dump"])]
    assert got == [
        "traces-2022-09-13T23-59-59.000.json",
        "traces-2022-09-14T05-02-14.173.json",
        "traces.json",
    ]
    assert [Path(p).name for p in expand([str(tmp_path / "dump" / "**" / "traces*.json")])] == got
    assert expand(["-", "https://tempo.local/api/traces/1", str(tmp_path / "missing.otlp")]) == [
        "-",
        "https://tempo.local/api/traces/1",
        str(tmp_path / "missing.otlp"),
    ]


def test_reading_does_not_load_whole_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Frames are read one by one: a reader stopped early has not read the file."""
    spans = make_spans(50)
    message = encode_spans(spans).SerializeToString()
    path = _write(tmp_path / "big.otlp", be32([message] * 200))
    reads: list[int] = []

    class Counting(io.FileIO):
        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            reads.append(len(data or b""))
            return data or b""

    import otel_replay.sources.files as files_module  # where a file source is opened

    monkeypatch.setattr(
        files_module, "open", lambda name, mode="rb": Counting(name, "r"), raising=False
    )
    it = iter(SpanReader(path))
    for _ in range(60):
        next(it)
    assert reads and sum(reads) < path.stat().st_size / 10


def test_load_warns_keeps_runs_and_can_be_strict(tmp_path: Path) -> None:
    import otel_replay

    spans = make_spans()
    path = _write(
        tmp_path / "t.otlp", be32([encode_spans(spans).SerializeToString()]) + b"\x00\x00\x10"
    )
    with pytest.warns(otel_replay.LoadWarning, match="truncated record"):
        runs = otel_replay.load(path)
    assert len(runs) == 1 and len(runs[0].steps) == len(spans) and len(runs.problems) == 1
    with pytest.raises(otel_replay.FormatError):
        otel_replay.load(path, strict=True)
