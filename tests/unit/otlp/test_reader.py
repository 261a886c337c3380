"""SpanReader on 4-byte framed files: ours and Collector ``format: proto`` dumps.

Bad input never raises: the fault lands in ``problems`` with the file and
the offset of the record, and every record before it is kept.
"""

from __future__ import annotations

import random
import struct
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)
from opentelemetry.proto.metrics.v1.metrics_pb2 import Metric, ResourceMetrics, ScopeMetrics
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.otlp.errors import FormatError
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.otlp.sniff import iter_records
from otel_replay.sources.reader import SpanReader


def frame(*bodies: bytes) -> bytes:
    return b"".join(struct.pack(">I", len(b)) + b for b in bodies)


def spans(n: int, prefix: str, **attributes: Any) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("r", "2")
    with tracer.start_as_current_span(f"{prefix}-root"):
        for i in range(n - 1):
            with tracer.start_as_current_span(f"{prefix}-{i}", attributes=attributes or None):
                pass
    return list(exporter.get_finished_spans())


def write(tmp_path: Path, data: bytes, name: str = "t.otlp") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def read(path: Path) -> tuple[list[Any], list[FormatError]]:
    reader = SpanReader(path)
    return list(reader), reader.problems


# --- good files ------------------------------------------------------------------------


def test_collector_dump_and_our_file_read_the_same(
    tmp_path: Path, varied_spans: list[ReadableSpan]
) -> None:
    half = len(varied_spans) // 2
    batches = [varied_spans[:half], varied_spans[half:]]
    ours = write(tmp_path, frame(*(encode_request(b) for b in batches)), "ours.otlp")
    collector = write(
        tmp_path, frame(*(encode_spans(b).SerializeToString() for b in batches)), "dump.pb"
    )
    got_ours, problems_ours = read(ours)
    got_collector, problems_collector = read(collector)
    assert problems_ours == problems_collector == []
    assert len(got_ours) == len(varied_spans)
    for a, b in zip(got_ours, got_collector, strict=True):
        a.source = b.source = ""
        assert a == b


def test_records_as_read(tmp_path: Path, varied_spans: list[ReadableSpan]) -> None:
    path = write(tmp_path, frame(encode_request(varied_spans)))
    got, problems = read(path)
    assert problems == []
    root = next(r for r in got if r.name == "remote child")
    assert root.trace_id == f"{0xABC:032x}" and root.parent_span_id == f"{0xDEF:016x}"
    assert len(root.span_id) == 16 and root.span_id == root.span_id.lower()
    a = root.attributes
    assert (a["s"], a["empty"], a["uni"], a["t"], a["zero"], a["neg"]) == (
        "text",
        "",
        "日本語 ✓ 🚀",
        True,
        0,
        -42,
    )
    assert (a["big"], a["small"], a["d"]) == (2**63 - 1, -(2**63), 1.5)
    assert a["b"] == b"\x00\xff\xfenon-utf8" and a["b_empty"] == b""
    assert a["mixed"] == [1, "a", 2.5, None, b"\xff"] and a["nested"] == [[1, 2], ["x"]]
    assert a["kv"] == {"a": 1, "b": [1, "x", None], "n": {"z": b"\xfe", "e": {}}}
    assert a["arr_empty"] == [] and a["kv_empty"] == {}
    assert [(e.name, e.time_ns, e.attributes) for e in root.events][1] == (
        "ev",
        123,
        {"k": "v", "n": 1, "kv": {"x": [1]}},
    )
    assert (root.scope_name, root.scope_version, root.kind) == ("scope-1", "0.1", 2)
    assert root.source == str(path)
    # A local root has no parent; one resource dict per ResourceSpans, shared.
    local = spans(3, "x")
    got, _ = read(write(tmp_path, frame(encode_request(local)), "local.otlp"))
    assert [r.parent_span_id is None for r in got] == [False, False, True]
    assert got[0].resource is got[2].resource and got[0].resource["telemetry.sdk.language"]


def test_iter_records_gives_offsets_and_messages(tmp_path: Path) -> None:
    bodies = [encode_request(spans(2, f"b{i}")) for i in range(3)]
    path = write(tmp_path, frame(*bodies))
    records = list(iter_records(path))
    assert [body for _, body in records] == bodies
    assert [offset for offset, _ in records] == [
        0,
        4 + len(bodies[0]),
        8 + len(bodies[0]) + len(bodies[1]),
    ]


def test_empty_file_has_no_spans_and_no_problem(tmp_path: Path) -> None:
    assert read(write(tmp_path, b"")) == ([], [])


def test_memory_does_not_grow_with_the_file(tmp_path: Path) -> None:
    body = encode_request(spans(20, "m", payload="z" * 20_000))  # ~400 KB a record
    path = tmp_path / "big.otlp"
    with open(path, "wb") as f:
        for _ in range(100):
            f.write(frame(body))
    assert path.stat().st_size > 35_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in SpanReader(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert count == 2000
    assert peak < 8 * len(body), f"peak {peak} bytes for {len(body)}-byte records"


# --- bad files -------------------------------------------------------------------------


def good_prefix() -> tuple[bytes, int]:
    data = frame(encode_request(spans(2, "a")), encode_request(spans(3, "b")))
    return data, 5


@pytest.mark.parametrize("cut", [1, 3, 4, 10, -1])
def test_truncated_last_record(tmp_path: Path, cut: int) -> None:
    good, n_good = good_prefix()
    last = encode_request(spans(2, "c"))
    torn = frame(last)[:cut]
    path = write(tmp_path, good + torn)
    got, problems = read(path)
    assert len(got) == n_good
    (problem,) = problems
    assert (problem.path, problem.offset) == (str(path), len(good))
    assert "truncated record" in problem.reason
    if len(torn) >= 4:
        assert problem.reason == (
            f"truncated record: header says {len(last)} bytes, {len(torn) - 4} present"
        )
    assert f"{path}: " in str(problem) and f"at byte {len(good)}" in str(problem)


@pytest.mark.parametrize(
    ("garbage", "after_kept"),
    [
        (frame(b"\xff" * 12), True),  # not protobuf
        (frame(b"\x0a\x05\x0a\x03"), True),  # a sub-message longer than its record
        (struct.pack(">I", 2**31) + b"\x0a" * 16, False),  # an absurd length: framing lost
        (
            frame(
                ExportMetricsServiceRequest(
                    resource_metrics=[
                        ResourceMetrics(scope_metrics=[ScopeMetrics(metrics=[Metric(name="m")])])
                    ]
                ).SerializeToString()
            ),
            True,  # metrics after spans: planted, it costs only itself
        ),
    ],
)
def test_corrupt_record_after_good_ones(tmp_path: Path, garbage: bytes, after_kept: bool) -> None:
    good, n_good = good_prefix()
    after = frame(encode_request(spans(2, "after")))
    path = write(tmp_path, good + garbage + after)
    got, problems = read(path)
    assert [r.name for r in got][:n_good] == [r.name for r in read(write(tmp_path, good, "g"))[0]]
    # A bad record costs only itself while the framing holds; reading stops where it does not.
    assert [r.name for r in got][n_good:] == (["after-0", "after-root"] if after_kept else [])
    (problem,) = problems
    assert problem.offset == len(good) and problem.path == str(path)


@pytest.mark.parametrize(
    "content",
    [
        b"hello, this is a log file and not a trace\n",
        b"\x13\x37 neither framing nor a message",
        b"\xff\xff\xff\xff" + b"\x00" * 64,
    ],
)
def test_not_a_trace_file(tmp_path: Path, content: bytes) -> None:
    path = write(tmp_path, content)
    got, problems = read(path)
    assert got == []
    (problem,) = problems
    assert problem.offset == 0 and "not an OTLP" in problem.reason and str(path) in str(problem)


def test_missing_file_is_a_problem_not_an_exception(tmp_path: Path) -> None:
    got, problems = read(tmp_path / "nope.otlp")
    assert got == [] and len(problems) == 1 and problems[0].offset == 0


def test_mangled_files_never_raise_and_keep_what_precedes_the_fault(tmp_path: Path) -> None:
    bodies = [encode_request(spans(3, f"r{i}")) for i in range(4)]
    data = frame(*bodies)
    ends = []  # where each record ends, and how many spans precede that point
    offset = 0
    for body in bodies:
        offset += 4 + len(body)
        ends.append(offset)
    rng = random.Random(2026)
    for i in range(300):
        mangled = bytearray(data)
        how = i % 3
        if how == 0:
            for _ in range(rng.randint(1, 4)):
                mangled[rng.randrange(len(mangled))] = rng.randrange(256)
        elif how == 1:
            del mangled[rng.randrange(len(mangled)) :]
        else:
            at = rng.randrange(len(mangled))
            mangled[at:at] = rng.randbytes(rng.randint(1, 8))
        path = write(tmp_path, bytes(mangled), "m.otlp")
        reader = SpanReader(path)
        got = list(reader)  # must not raise
        assert all(isinstance(p, FormatError) for p in reader.problems)
        first_change = next(
            (k for k, (x, y) in enumerate(zip(data, mangled, strict=False)) if x != y),
            min(len(data), len(mangled)),
        )
        intact = sum(1 for end in ends if end <= first_change)
        names = {r.name for r in got}
        for k in range(intact):  # records wholly before the damage are all there
            assert {f"r{k}-root", f"r{k}-0", f"r{k}-1"} <= names, (i, how)


def test_a_problem_survives_the_trip_from_a_worker_process(tmp_path: Path) -> None:
    # check and ls read big dumps in worker processes: their problems come back pickled.
    import pickle

    path = write(tmp_path, frame(encode_request(spans(2, "a")))[:-3])
    (problem,) = read(path)[1]
    back = pickle.loads(pickle.dumps(problem))
    assert type(back) is FormatError
    assert (back.path, back.offset, back.reason, str(back)) == (
        problem.path,
        problem.offset,
        problem.reason,
        str(problem),
    )
