"""RecordingSpanProcessor keeps a burst the SDK's BatchSpanProcessor drops, and never drops silently."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from otel_replay.export.file_exporter import FileSpanExporter
from otel_replay.export.recording_processor import RecordingSpanProcessor
from otel_replay.sources.reader import SpanReader

HISTORY = json.dumps(
    [
        {
            "role": "system",
            "parts": [{"type": "text", "content": "You are a support agent. " * 20}],
        },
        {"role": "user", "parts": [{"type": "text", "content": "Where is my order? " * 120}]},
    ]
)


def genai_burst(tracer: trace.Tracer, n: int, prefix: str = "chat") -> None:
    """``n`` chat spans of ~4.8 KB each, as a GenAI instrumentation writes them."""
    for i in range(n):
        with tracer.start_as_current_span(f"{prefix} {i}", kind=trace.SpanKind.CLIENT) as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.response.model": "gpt-4o-2024-08-06",
                    "gen_ai.response.id": f"chatcmpl-{i:08d}",
                    "gen_ai.request.temperature": 0.7,
                    "gen_ai.request.seed": 42,
                    "gen_ai.usage.input_tokens": 900 + i % 50,
                    "gen_ai.usage.output_tokens": 120 + i % 30,
                    "gen_ai.response.finish_reasons": ["stop"],
                    "gen_ai.input.messages": HISTORY,
                    "gen_ai.output.messages": json.dumps(
                        [
                            {
                                "role": "assistant",
                                "parts": [{"type": "text", "content": f"{i}. " * 150}],
                            }
                        ]
                    ),
                    "otel_replay.bytes.gen_ai.tool.call.result": bytes(range(256)),
                }
            )
            span.add_event("gen_ai.choice", {"index": 0})


def recorder_on(
    exporter: SpanExporter, **kwargs: Any
) -> tuple[TracerProvider, RecordingSpanProcessor]:
    recorder = RecordingSpanProcessor(exporter, **kwargs)
    provider = TracerProvider()
    provider.add_span_processor(recorder)
    return provider, recorder


# The default tier's burst is still past the 2,048 spans the SDK's BatchSpanProcessor queues.
@pytest.mark.parametrize("n", [5_000, pytest.param(100_000, marks=pytest.mark.slow)])
def test_a_span_burst_loses_nothing(tmp_path: Path, n: int) -> None:
    path = tmp_path / "burst.otlp"
    exporter = FileSpanExporter(path)
    provider, recorder = recorder_on(exporter)
    genai_burst(provider.get_tracer("burst"), n)
    provider.shutdown()
    assert recorder.dropped == 0 and exporter.dropped == 0
    size = path.stat().st_size
    assert 4_500 * n < size < 5_500 * n  # the spans really are ~4.8 KB
    reader = SpanReader(path)
    seen = Counter(int(s.name.split()[1]) for s in reader)
    assert reader.problems == []
    assert len(seen) == n and set(seen.values()) == {1}
    assert set(seen) == set(range(n))


class Gate(SpanExporter):
    """Holds every export until released, then writes through ``inner``."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.release = threading.Event()
        self.exported = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.release.wait(30)
        self.exported += len(spans)
        return self.inner.export(spans)

    def shutdown(self) -> None:
        self.inner.shutdown()


def test_a_full_queue_drops_are_counted_and_reported(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "small.otlp"
    gate = Gate(FileSpanExporter(path))
    provider, recorder = recorder_on(gate, max_queue_spans=100, max_batch=10)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        genai_burst(provider.get_tracer("q"), 500)
        # The worker holds at most one batch; the queue holds 100; the rest is dropped.
        assert 500 - 100 - 10 <= recorder.dropped <= 500 - 100
        assert caplog.text.count("recording queue full (100 spans)") == 1
        gate.release.set()
        provider.shutdown()
    kept = sum(1 for _ in SpanReader(path))
    assert kept == gate.exported == 500 - recorder.dropped  # nothing lost unaccounted
    assert f"{recorder.dropped} spans were dropped while recording" in caplog.text
    assert any(r.levelno == logging.ERROR for r in caplog.records)


def test_eight_threads_record_without_lost_or_crossed_spans(tmp_path: Path) -> None:
    path = tmp_path / "threads.otlp"
    provider, recorder = recorder_on(FileSpanExporter(path), max_batch=64)
    tracer = provider.get_tracer("threads")
    per_thread = 1500
    start = threading.Barrier(8)

    def work(t: int) -> None:
        start.wait()
        for i in range(per_thread):
            with tracer.start_as_current_span(f"parent {t} {i}", attributes={"t": t, "i": i}):
                with tracer.start_as_current_span(f"child {t} {i}", attributes={"t": t, "i": i}):
                    pass

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    provider.shutdown()
    assert recorder.dropped == 0
    reader = SpanReader(path)
    records = list(reader)
    assert reader.problems == []
    assert len(records) == 8 * per_thread * 2
    by_id = {r.span_id: r for r in records}
    assert len(by_id) == len(records)
    for r in records:
        kind, t, i = r.name.split()
        assert (r.attributes["t"], r.attributes["i"]) == (int(t), int(i))
        if kind == "child":
            parent = by_id[r.parent_span_id or ""]
            assert parent.name == f"parent {t} {i}" and parent.trace_id == r.trace_id
        else:
            assert r.parent_span_id is None


def test_force_flush_exports_what_was_queued_before_it(tmp_path: Path) -> None:
    path = tmp_path / "flush.otlp"
    gate = Gate(FileSpanExporter(path))
    provider, recorder = recorder_on(gate, schedule_delay_ms=60_000)
    genai_burst(provider.get_tracer("f"), 7)
    assert recorder.force_flush(50) is False  # the exporter is stuck: not done in time
    gate.release.set()
    assert recorder.force_flush(5_000) is True
    assert sum(1 for _ in SpanReader(path)) == 7  # on disk, without waiting for the schedule
    genai_burst(provider.get_tracer("f"), 3, "more")
    assert recorder.force_flush(5_000) is True
    assert sum(1 for _ in SpanReader(path)) == 10
    provider.shutdown()
    assert recorder.force_flush() is True  # after shutdown: nothing left to do


def test_a_failing_exporter_is_counted_never_raised(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(SpanExporter):
        calls = 0

        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            Broken.calls += 1
            if Broken.calls % 2:
                raise OSError("disk on fire")
            return SpanExportResult.FAILURE

    provider, recorder = recorder_on(Broken(), max_batch=10)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        genai_burst(provider.get_tracer("b"), 30)
        assert recorder.force_flush(5_000)
        provider.shutdown()
    assert recorder.dropped == 30 and Broken.calls >= 3
    assert "disk on fire" in caplog.text
    assert "30 spans were dropped while recording" in caplog.text


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_records_with_its_own_worker(tmp_path: Path) -> None:
    path = tmp_path / "fork.otlp"
    provider, recorder = recorder_on(FileSpanExporter(path), schedule_delay_ms=60_000)
    tracer = provider.get_tracer("fork")
    with tracer.start_as_current_span("parent before fork"):
        pass
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = False
        try:
            with tracer.start_as_current_span("child"):
                pass
            ok = recorder.force_flush(5_000)
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, "the child's flush failed"
    with tracer.start_as_current_span("parent after fork"):
        pass
    provider.shutdown()
    # The span queued before the fork is the parent's alone: never written twice.
    assert Counter(s.name for s in SpanReader(path)) == {
        "parent before fork": 1,
        "child": 1,
        "parent after fork": 1,
    }


def test_never_raises_into_the_app(caplog: pytest.LogCaptureFixture) -> None:
    class Hostile(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            raise RuntimeError("export exploded")

        def shutdown(self) -> None:
            raise RuntimeError("shutdown exploded")

    provider, recorder = recorder_on(Hostile())
    tracer = provider.get_tracer("h")
    with caplog.at_level(logging.WARNING, "otel_replay"):
        genai_burst(tracer, 5)
        provider.shutdown()  # flushes, then the exporter's shutdown raises: swallowed
        genai_burst(tracer, 2)  # after shutdown: ignored
    assert recorder.dropped == 5
    assert "shutdown exploded" in caplog.text
