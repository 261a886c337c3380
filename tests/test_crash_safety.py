"""A writer killed with SIGKILL at random points never leaves a file the reader cannot read."""

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

from otel_replay.store.reader import SpanReader

ROOT = Path(__file__).resolve().parents[1]

WRITER = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    import otel_replay

    path, tag = sys.argv[1], sys.argv[2]
    provider = TracerProvider()
    recorder = otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path), schedule_delay_ms=2)
    provider.add_span_processor(recorder)
    tracer = provider.get_tracer("crash")
    payload = "x" * 3000
    n = 0
    while True:
        for _ in range(25):
            with tracer.start_as_current_span(f"{tag}-{n}") as span:
                span.set_attribute("gen_ai.input.messages", payload)
            n += 1
        recorder.force_flush()
        print(f"flushed {n}", flush=True)
    """
)


def run_and_kill(script: Path, path: Path, tag: str, rng: random.Random) -> int:
    """Start a writer, SIGKILL it at a random moment; returns how many spans it said were flushed."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    proc = subprocess.Popen(
        [sys.executable, str(script), str(path), tag], stdout=subprocess.PIPE, text=True, env=env
    )
    flushed = [0]
    started = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            flushed[0] = int(line.split()[1])
            started.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(30), "the writer never flushed"
    time.sleep(rng.uniform(0, 0.15))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    reader.join(5)
    return flushed[0]


def check(path: Path, expected: dict[str, int]) -> None:
    reader = SpanReader(path)
    names = {s.name for s in reader}  # must not raise, whatever the kill left
    for problem in reader.problems:
        assert "truncated record" in problem.reason and problem.offset >= 0
    for tag, count in expected.items():
        missing = [n for n in range(count) if f"{tag}-{n}" not in names]
        assert not missing, f"{tag}: {len(missing)} flushed spans lost, first {missing[:3]}"


def test_sigkill_at_random_points(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(20261123)
    shared = tmp_path / "shared.otlp"
    expected_shared: dict[str, int] = {}
    for i in range(50):
        if i % 2 == 0:  # the same file across kills: each new writer appends after a torn tail
            tag = f"s{i}"
            expected_shared[tag] = run_and_kill(script, shared, tag, rng)
            check(shared, expected_shared)
        else:  # a fresh file each time
            fresh = tmp_path / f"fresh{i}.otlp"
            count = run_and_kill(script, fresh, f"f{i}", rng)
            check(fresh, {f"f{i}": count})
    assert sum(expected_shared.values()) > 0
