"""Writers SIGKILLed at random moments lose no flushed span and leave files the reader can read."""

from __future__ import annotations

import os
import random
import signal
import struct
import subprocess
import sys
import textwrap
import threading
from collections import Counter
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay.export.file_exporter import FileSpanExporter
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT

WRITER = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from otel_replay.export.file_exporter import FileSpanExporter
    from otel_replay.export.recording_processor import RecordingSpanProcessor

    path, tag = sys.argv[1], sys.argv[2]
    provider = TracerProvider()
    # A short delay: the worker also exports between flushes, at moments of its own.
    recorder = RecordingSpanProcessor(FileSpanExporter(path), schedule_delay_ms=2)
    provider.add_span_processor(recorder)
    tracer = provider.get_tracer("crash")
    messages = '[{"role": "user", "parts": [{"type": "text", "content": "' + "x" * 3000 + '"}]}]'
    n = 0
    while True:
        for _ in range(25):
            with tracer.start_as_current_span(f"{tag}-{n}") as span:
                span.set_attribute("gen_ai.input.messages", messages)
                span.set_attribute("gen_ai.usage.input_tokens", n)
            n += 1
        assert recorder.force_flush()
        print(f"flushed {n}", flush=True)
    """
)


def spans_named(tag: str) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("t").start_as_current_span(f"{tag}-0"):
        pass
    return list(exporter.get_finished_spans())


def run_and_kill(script: Path, path: Path, tag: str, rng: random.Random) -> int:
    """Start a writer, SIGKILL it at a random moment; how many spans it said were flushed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path), tag], stdout=subprocess.PIPE, text=True, env=env
    )
    flushed = [0]
    started = threading.Event()

    def follow() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:  # lines already in the pipe are read after the kill too
            flushed[0] = int(line.split()[1])
            started.set()

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    try:
        assert started.wait(30), "the writer never flushed"
        # A random moment: while it makes spans, encodes, writes, or flushes.
        threading.Event().wait(rng.uniform(0, 0.12))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    follower.join(10)
    assert not follower.is_alive()
    return flushed[0]


def whole_records_end(path: Path) -> int:
    """Where the last whole record ends, by walking the headers independently of the reader."""
    data = path.read_bytes()
    offset = 0
    while offset + 4 <= len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        if offset + 4 + length > len(data):
            break
        offset += 4 + length
    return offset


def check(path: Path, expected: dict[str, int]) -> int:
    """The reader never raises, keeps every flushed span once, reports a torn tail exactly."""
    reader = SpanReader(path)
    names = Counter(s.name for s in reader)
    end, size = whole_records_end(path), path.stat().st_size
    if end == size:
        assert reader.problems == []
    else:
        (problem,) = reader.problems
        assert problem.offset == end and problem.path == str(path)
        assert problem.reason.startswith("truncated record")
    assert all(c == 1 for c in names.values()), "a span was written twice"
    for tag, count in expected.items():
        missing = [n for n in range(count) if f"{tag}-{n}" not in names]
        assert not missing, f"{tag}: {len(missing)} flushed spans lost, first {missing[:3]}"
    return size - end


# The default tier kills ten writers (and tears the shared file up to twice); the slow tier fifty.
@pytest.mark.parametrize("kills", [10, pytest.param(50, marks=pytest.mark.slow)])
def test_sigkill_at_random_moments(tmp_path: Path, kills: int) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(20261123)
    shared = tmp_path / "shared.otlp"
    expected_shared: dict[str, int] = {}
    for i in range(kills):
        if i % 2 == 0:  # one file across kills: each writer appends after what the last left
            tag = f"s{i}"
            expected_shared[tag] = run_and_kill(script, shared, tag, rng)
            tail = check(shared, expected_shared)
            # Inject only after whole records: bytes appended after a torn tail make
            # the torn record's length swallow them, a corrupt record (reported at
            # its offset) rather than a torn tail, which is not what this checks.
            if i % 8 == 0 and tail == 0:
                # What a kill inside write() leaves: the start of a record.  The reader
                # must report it and keep the rest; the next writer must cut it.
                record = shared.read_bytes()[: whole_records_end(shared)]
                first_length = struct.unpack(">I", record[:4])[0]
                with open(shared, "ab") as f:
                    f.write(record[: rng.randint(1, 4 + first_length - 1)])
                assert check(shared, expected_shared) > 0
        else:  # a fresh file each time
            fresh = tmp_path / f"fresh{i}.otlp"
            count = run_and_kill(script, fresh, f"f{i}", rng)
            assert count > 0
            check(fresh, {f"f{i}": count})
    assert sum(expected_shared.values()) > 0
    # One more writer cuts whatever tail the last kill (or injection) left.
    exporter = FileSpanExporter(shared)
    assert exporter.export(spans_named("final")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert check(shared, {**expected_shared, "final": 1}) == 0
