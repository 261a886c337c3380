"""The recording path keeps a burst the SDK's BatchSpanProcessor would drop, and never drops silently."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import otel_replay
from otel_replay.store.reader import SpanReader

MESSAGES = json.dumps(
    [{"role": "user", "parts": [{"type": "text", "content": "Where is my order? " * 220}]}]
)


def burst(tracer: trace.Tracer, n: int, prefix: str = "chat") -> None:
    for i in range(n):
        with tracer.start_as_current_span(f"{prefix} {i}", kind=trace.SpanKind.CLIENT) as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": i,
                    "gen_ai.input.messages": MESSAGES,
                }
            )


def test_hundred_thousand_span_burst_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "burst.otlp"
    recorder = otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
    provider = TracerProvider()
    provider.add_span_processor(recorder)
    burst(provider.get_tracer("burst"), 100_000)
    provider.shutdown()
    assert recorder.dropped == 0
    assert path.stat().st_size > 100_000 * 4000  # ~4.8 KB GenAI spans
    reader = SpanReader(path)
    seen = {int(s.name.split()[1]) for s in reader}
    assert reader.problems == []
    assert seen == set(range(100_000))


def test_full_queue_drops_are_counted_and_reported(caplog: pytest.LogCaptureFixture) -> None:
    release = threading.Event()

    class Stuck(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            release.wait(10)
            return SpanExportResult.SUCCESS

    recorder = otel_replay.RecordingSpanProcessor(Stuck(), max_queue_spans=100, max_batch=10)
    provider = TracerProvider()
    provider.add_span_processor(recorder)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        burst(provider.get_tracer("q"), 500)
        assert recorder.dropped >= 500 - 100 - 10
        release.set()
        provider.shutdown()
    assert "queue full" in caplog.text
    assert f"{recorder.dropped} spans were dropped" in caplog.text


def test_failing_exporter_is_counted_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    class Broken(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            raise OSError("disk on fire")

    recorder = otel_replay.RecordingSpanProcessor(Broken())
    provider = TracerProvider()
    provider.add_span_processor(recorder)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        burst(provider.get_tracer("b"), 30)
        assert recorder.force_flush(5000)
        provider.shutdown()
    assert recorder.dropped == 30
    assert "disk on fire" in caplog.text


def test_force_flush_means_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "f.otlp"
    recorder = otel_replay.RecordingSpanProcessor(
        otel_replay.FileSpanExporter(path), schedule_delay_ms=60_000
    )
    provider = TracerProvider()
    provider.add_span_processor(recorder)
    burst(provider.get_tracer("f"), 7)
    assert recorder.force_flush(5000)
    assert sum(1 for _ in SpanReader(path)) == 7  # without waiting for the schedule
    provider.shutdown()
