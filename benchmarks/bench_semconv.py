"""The cost of adding GenAI semconv attributes on export, vs exporting the spans as they are.

    python benchmarks/bench_semconv.py [--spans N] [--repeats R]

Spans: every span of the third-party recordings in tests/data/thirdparty/
(OpenInference, OpenLLMetry, the OTel GenAI instrumentations, pydantic-ai,
the openai-agents bridges, the Anthropic SDK), rebuilt as SDK
``ReadableSpan`` objects and repeated up to N.  Measured in the same run
(best of R), in batches of 512:

- ``FileSpanExporter.export`` as is (baseline) vs wrapped in
  ``GenAISemconvExporter`` (the normalization ``ReplaySpanProcessor`` applies as a span ends)
- the SDK's OTLP encoding ``encode_spans(...).SerializeToString()`` (what
  ``OTLPSpanExporter`` pays) as is vs after normalization
- normalization alone, per span

Checks first that the normalized spans carry what the loader derives (exits
1 if not).
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import otel_replay
from otel_replay.dialects.registry import genai_attributes
from otel_replay.dialects.span import SpanView
from otel_replay.export.readable_spans import readable_spans
from otel_replay.export.semconv import Normalizer, attribute_value
from otel_replay.sources.reader import SpanReader

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "thirdparty"
BATCH = 512


def recorded_spans(n: int) -> list[ReadableSpan]:
    records = [r for p in sorted(DATA.glob("*/*/traces.otlp.jsonl")) for r in SpanReader(p)]
    out: list[ReadableSpan] = []
    while len(out) < n:
        out.extend(readable_spans(records))
    return out[:n]


class _Encode(SpanExporter):
    """What an OTLP exporter does before it sends: the SDK's protobuf encoding."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encode_spans(spans).SerializeToString()
        return SpanExportResult.SUCCESS


def check(spans: list[ReadableSpan]) -> int:
    normalizer = Normalizer()
    added = 0
    for span in spans:
        scope = span.instrumentation_scope
        view = SpanView(
            span.attributes or {},
            name=span.name,
            scope=scope.name if scope else "",
            events=[{"name": e.name, "attributes": e.attributes or {}} for e in span.events],
        )
        got = normalizer.span(span).attributes or {}
        for key, value in genai_attributes(view).items():
            if attribute_value(value) is not None and got.get(key) != attribute_value(value):
                print(f"FAIL: {span.name}: {key} differs from what the loader derives")
                sys.exit(1)
            added += key not in (span.attributes or {})
    return added


def best(fn: Callable[[], None], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def batches(exporter: SpanExporter, spans: list[ReadableSpan]) -> Callable[[], None]:
    def run() -> None:
        for i in range(0, len(spans), BATCH):
            exporter.export(spans[i : i + BATCH])

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--spans", type=int, default=20_000)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    spans = recorded_spans(a.spans)
    added = check(spans[: min(len(spans), 2000)])
    print(f"{len(spans)} spans from {len(list(DATA.glob('*/*/traces.otlp.jsonl')))} recordings")
    print(f"check: normalized spans carry what the loader derives ({added} attributes added)")

    with tempfile.TemporaryDirectory() as tmp:
        plain_file = otel_replay.FileSpanExporter(Path(tmp) / "plain.otlp")
        norm_file = otel_replay.GenAISemconvExporter(
            otel_replay.FileSpanExporter(Path(tmp) / "norm.otlp")
        )
        normalizer = Normalizer()
        rows = [
            ("FileSpanExporter.export (baseline)", batches(plain_file, spans)),
            ("GenAISemconvExporter(FileSpanExporter).export", batches(norm_file, spans)),
            ("encode_spans (OTLP exporter's encoding, baseline)", batches(_Encode(), spans)),
            (
                "GenAISemconvExporter(encode_spans)",
                batches(otel_replay.GenAISemconvExporter(_Encode()), spans),
            ),
            ("normalization alone", lambda: normalizer.spans(spans) and None),
        ]
        results = [(name, best(fn, a.repeats)) for name, fn in rows]
        plain_file.shutdown()
        norm_file.shutdown()

    n = len(spans)
    base = {0: results[0][1], 1: results[0][1], 2: results[2][1], 3: results[2][1]}
    print("| path | spans/s | µs/span | ratio |\n|---|---:|---:|---:|")
    for i, (name, t) in enumerate(results):
        ratio = f"{t / base[i]:.2f}x" if i in base else "-"
        print(f"| {name} | {n / t:,.0f} | {t / n * 1e6:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
