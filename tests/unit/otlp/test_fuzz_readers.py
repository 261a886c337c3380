"""Fuzzing the readers and the commands that use them, against the contract for any input:

- whatever the bytes, the only failure is a reported FormatError naming the
  file and a byte offset; the CLI prints it as one line and exits 2;
- a bad record or line between good ones costs only itself, in every
  framing and compression;
- what a record may expand to stays within the record limit, whatever the
  compressed bytes claim.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import struct
import tempfile
import tracemalloc
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner
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

from otel_replay.cli.main import cli
from otel_replay.otlp.errors import FormatError
from otel_replay.otlp.json_writer import encode_json_request
from otel_replay.otlp.sniff import ZSTD_MAGIC
from otel_replay.sources.reader import RecordReader, SpanReader


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
SEEDS += [gzip.compress(SEEDS[0]), gzip.compress(SEEDS[3])]  # gzip of a dump, of JSON lines
TMP = Path(tempfile.mkdtemp(prefix="otel-replay-fuzz-"))


@pytest.fixture(scope="module", autouse=True)
def _remove_tmp() -> Iterator[None]:
    # Whatever the commands keep in the user's cache directory stays in TMP.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XDG_CACHE_HOME", str(TMP / "cache"))
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


# --- a bad record between good ones costs only itself ----------------------------------


def _request(prefix: str) -> tuple[bytes, bytes, list[str]]:
    """A request of two spans as protobuf and as a JSON line, and the span names."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("fuzz").start_as_current_span(f"{prefix}-root"):
        with provider.get_tracer("fuzz").start_as_current_span(f"{prefix}-child"):
            pass
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    return encode_spans(spans).SerializeToString(), encode_json_request(spans), names


GOOD = [_request(p) for p in ("a", "b", "c")]
GOOD_NAMES = {n for _, _, names in GOOD for n in names}


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _framed(bodies: list[bytes], varint: bool = False) -> tuple[bytes, int]:
    """Good, good, bad, good: the file, and the offset of the bad record (the third)."""
    prefix = _varint if varint else (lambda n: struct.pack(">I", n))
    records = [prefix(len(b)) + b for b in bodies]
    return b"".join(records), len(records[0]) + len(records[1])


def _be32(bad: bytes) -> tuple[bytes, int]:
    (a, _, _), (b, _, _), (c, _, _) = GOOD
    return _framed([a, b, b"\xff" + bad, c])  # wire type 7: never a protobuf message


def _varint_file(bad: bytes) -> tuple[bytes, int]:
    (a, _, _), (b, _, _), (c, _, _) = GOOD
    return _framed([a, b, b"\xff" + bad, c], varint=True)


def _zstd_records(bad: bytes) -> tuple[bytes, int]:
    z = zstandard.ZstdCompressor()
    (a, _, _), (b, _, _), (c, _, _) = GOOD
    return _framed([z.compress(a), z.compress(b), ZSTD_MAGIC + bad, z.compress(c)])


def _lines(bad: bytes) -> tuple[bytes, int]:
    (_, a, _), (_, b, _), (_, c, _) = GOOD
    line = b"{" + bad.replace(b"\n", b" ")
    return b"".join(x + b"\n" for x in (a, b, line, c)), len(a) + len(b) + 2


def _compressed(
    make: Callable[[bytes], tuple[bytes, int]], compress: Callable[[bytes], bytes]
) -> Callable[[bytes], tuple[bytes, int]]:
    # Offsets inside a compressed stream count decompressed bytes: the same offset.
    def build(bad: bytes) -> tuple[bytes, int]:
        data, offset = make(bad)
        return compress(data), offset

    return build


CONTAINERS: dict[str, Callable[[bytes], tuple[bytes, int]]] = {
    "be32": _be32,
    "varint": _varint_file,
    "zstd records": _zstd_records,
    "json lines": _lines,
    "gzip be32": _compressed(_be32, gzip.compress),
    "gzip json lines": _compressed(_lines, gzip.compress),
    "zstd stream be32": _compressed(_be32, zstandard.ZstdCompressor().compress),
    "zstd stream json lines": _compressed(_lines, zstandard.ZstdCompressor().compress),
}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(sorted(CONTAINERS)), st.binary(max_size=300))
def test_a_bad_record_between_good_ones_costs_only_itself(container: str, bad: bytes) -> None:
    data, offset = CONTAINERS[container](bad)
    path = TMP / "between"
    path.write_bytes(data)
    reader = RecordReader(path)
    names = {r.name for r in reader}
    assert names == GOOD_NAMES, (container, reader.problems)
    (problem,) = reader.problems
    assert (problem.path, problem.offset) == (str(path), offset), (container, problem)


# --- bombs stay within the record limit ------------------------------------------------

LIMIT = 1 << 20


#: A MiB of zeros as one gzip member, as one zstd frame.
_MIB_OF_ZEROS = {
    "gzip": gzip.compress(bytes(LIMIT)),
    "zstd": zstandard.ZstdCompressor().compress(bytes(LIMIT)),
}


def _zeros(compression: str, megabytes: int) -> bytes:
    """``megabytes`` MiB of zeros as repeated gzip members or zstd frames (both read on)."""
    return _MIB_OF_ZEROS[compression] * megabytes


def _bomb(kind: str, megabytes: int) -> tuple[bytes, int]:
    """A file holding a good record, a bomb, a good record; and the bomb's offset."""
    (a, a_line, _), (_, _, _), (c, c_line, _) = GOOD
    zstd = zstandard.ZstdCompressor()
    if kind == "zstd record":
        writer = zstd.compressobj()
        body = b"".join(writer.compress(bytes(LIMIT)) for _ in range(megabytes)) + writer.flush()
        data = b"".join(struct.pack(">I", len(x)) + x for x in (a, body, c))
        return data, 4 + len(a)
    if kind == "gzip line":
        line = gzip.compress(a_line + b"\n") + _zeros("gzip", megabytes)
        return line + gzip.compress(b"\n" + c_line + b"\n"), len(a_line) + 1
    if kind == "zstd stream line":
        line = zstd.compress(a_line + b"\n") + _zeros("zstd", megabytes)
        return line + zstd.compress(b"\n" + c_line + b"\n"), len(a_line) + 1
    # A length prefix the framing allows, inside a gzip stream: never read into memory.
    head = gzip.compress(struct.pack(">I", len(a)) + a + struct.pack(">I", megabytes * LIMIT))
    tail = gzip.compress(struct.pack(">I", len(c)) + c)
    return head + _zeros("gzip", megabytes) + tail, 4 + len(a)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["zstd record", "gzip line", "zstd stream line", "gzip framed record"]),
    st.integers(min_value=2, max_value=48),
)
def test_bombs_cost_their_record_and_memory_stays_near_the_limit(kind: str, megabytes: int) -> None:
    data, offset = _bomb(kind, megabytes)
    path = TMP / "bomb"
    path.write_bytes(data)
    os.environ["OTEL_REPLAY_MAX_RECORD_BYTES"] = str(LIMIT)
    tracemalloc.start()
    try:
        reader = RecordReader(path)
        names = {r.name for r in reader}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        del os.environ["OTEL_REPLAY_MAX_RECORD_BYTES"]
    assert names == {n for i in (0, 2) for n in GOOD[i][2]}, reader.problems
    (problem,) = reader.problems
    assert problem.offset == offset and "the 1 MiB limit (OTEL_REPLAY_MAX_RECORD_BYTES)" in str(
        problem
    )
    assert peak < 4 * LIMIT, f"{peak} bytes held for a {megabytes} MiB bomb"


# --- the commands ----------------------------------------------------------------------

#: A record's fault names its byte offset; a fault of the whole input (no known format)
#: names none.
_ERROR = re.compile(
    r"^otel-replay: error: (?P<path>.+?): (?:.* at byte (?P<offset>\d+)|[^:]*\(no known format\))$"
)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from([("show",), ("show", "--json"), ("ls", "--no-cache"), ("check",)]),
    st.sampled_from(range(len(SEEDS))),
    st.lists(st.tuples(st.integers(min_value=0, max_value=4096), st.integers(0, 255)), max_size=4),
    st.integers(min_value=0, max_value=4096),
)
def test_commands_on_mutated_files(
    command: tuple[str, ...], seed: int, flips: list[tuple[int, int]], cut: int
) -> None:
    data = bytearray(SEEDS[seed])
    for pos, value in flips:
        if data:
            data[pos % len(data)] = value
    path = TMP / "cli-input"
    path.write_bytes(bytes(data[: max(0, len(data) - cut % (len(data) + 1))]))
    result = CliRunner().invoke(cli, [*command, str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    errors = [line for line in result.stderr.splitlines() if line.startswith("otel-replay: error:")]
    for line in errors:  # one line each, naming the file and the offset
        match = _ERROR.match(line)
        assert match and match["path"] == str(path), line
    if command[0] == "check":
        assert result.exit_code in (0, 1, 2)
        assert result.exit_code != 0 or not errors
    else:
        assert result.exit_code == (2 if errors else 0), result.output
