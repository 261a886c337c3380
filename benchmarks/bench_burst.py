"""A burst of GenAI spans: how many does each recording path keep?

    python benchmarks/bench_burst.py [--spans N]

The same burst of ~4.8 KB spans, created as fast as the app can, goes through
(a) the SDK's BatchSpanProcessor (default queue of 2048) with the SDK's OTLP
encoding, (b) BatchSpanProcessor with our FileSpanExporter, and (c) our
RecordingSpanProcessor with FileSpanExporter.  Prints spans kept, spans lost,
and the time until everything kept is on disk.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

import otel_replay
from otel_replay.sources.reader import SpanReader

MESSAGES = json.dumps(
    [{"role": "user", "parts": [{"type": "text", "content": "Where is my order? " * 220}]}]
)


class SdkEncodingFileExporter(SpanExporter):
    """Counts what the SDK's encoding path would write (encode + serialize)."""

    def __init__(self) -> None:
        self.kept = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializeToString()
        self.kept += len(spans)
        return SpanExportResult.SUCCESS


def burst(processor: SpanProcessor, n: int) -> float:
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("burst")
    t0 = time.perf_counter()
    for i in range(n):
        with tracer.start_as_current_span(f"chat {i}", kind=trace.SpanKind.CLIENT) as span:
            span.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.provider.name": "openai",
                    "gen_ai.request.model": "gpt-4o",
                    "gen_ai.usage.input_tokens": i,
                    "gen_ai.input.messages": MESSAGES,
                }
            )
    provider.shutdown()
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=100_000)
    n = parser.parse_args().spans
    with tempfile.TemporaryDirectory() as tmp:
        sdk = SdkEncodingFileExporter()
        t_a = burst(BatchSpanProcessor(sdk), n)
        path_b = Path(tmp) / "b.otlp"
        t_b = burst(BatchSpanProcessor(otel_replay.FileSpanExporter(path_b)), n)
        kept_b = sum(1 for _ in SpanReader(path_b))
        path_c = Path(tmp) / "c.otlp"
        recorder = otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path_c))
        t_c = burst(recorder, n)
        kept_c = sum(1 for _ in SpanReader(path_c))
    print(f"burst of {n:,} spans of ~4.8 KB")
    for label, kept, secs in (
        ("BatchSpanProcessor + SDK encoding      ", sdk.kept, t_a),
        ("BatchSpanProcessor + FileSpanExporter  ", kept_b, t_b),
        ("RecordingSpanProcessor + FileSpanExporter", kept_c, t_c),
    ):
        print(f"{label}: kept {kept:7,} lost {n - kept:7,} ({(n - kept) / n:6.1%})  {secs:6.1f} s")
    print(f"RecordingSpanProcessor reported {recorder.dropped} dropped")


if __name__ == "__main__":
    main()
