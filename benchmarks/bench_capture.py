"""Cost of one ``@tool`` call recorded to a file, against a bare SDK span.

    python benchmarks/bench_capture.py [--calls N]

Baseline: a bare SDK span (TracerProvider without processors, two
attributes), measured in the same run; both inside a parent span, as in an
agent run.  Measured: a ``@tool`` call with ReplaySpanProcessor and
RecordingSpanProcessor(FileSpanExporter): the time the app thread spends per
call, and the time per call until everything is on disk (flush included).
Prints the ratios.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider

import otel_replay

ARGS = {"query": "where is my order", "user_id": "u_7710", "limit": 3}
RESULT = [{"order_id": str(4400 + i), "item": "Widget Pro", "status": "shipped"} for i in range(3)]


@otel_replay.tool
def lookup_order(query: str, user_id: str, limit: int) -> list[dict[str, str]]:
    return RESULT


def bare_span(provider: TracerProvider, n: int) -> float:
    tracer = provider.get_tracer("bench")
    with tracer.start_as_current_span("invoke_agent bench"):
        t0 = time.perf_counter()
        for _ in range(n):
            with tracer.start_as_current_span("execute_tool lookup_order") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", "lookup_order")
        return (time.perf_counter() - t0) / n


def tool_calls(n: int, path: Path | None) -> tuple[float, float]:
    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    if path is not None:
        provider.add_span_processor(
            otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
        )
    previous = otel_replay.use_tracer_provider(provider)
    try:
        with otel_replay.agent_run("bench"):  # tool calls live inside an agent run
            t0 = time.perf_counter()
            for _ in range(n):
                lookup_order(**ARGS)
            app = time.perf_counter() - t0
        provider.force_flush()
        total = time.perf_counter() - t0
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
    return app / n, total / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    bare, app, total, capture_only = [], [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.repeats):
            bare.append(bare_span(TracerProvider(), args.calls))
            capture_only.append(tool_calls(args.calls, None)[0])
            a, t = tool_calls(args.calls, Path(tmp) / f"bench{r}.otlp")
            app.append(a)
            total.append(t)
    b, a, t = min(bare), statistics.median(app), statistics.median(total)
    b_med = statistics.median(bare)
    print(
        f"bare SDK span (no processors):          {b_med * 1e6:7.1f} µs/call (best {b * 1e6:.1f})"
    )
    c = statistics.median(capture_only)
    print(
        f"@tool call, no exporter:                {c * 1e6:7.1f} µs/call  ratio {c / b_med:5.2f}x"
    )
    print(
        f"@tool call + file recording, app thread: {a * 1e6:6.1f} µs/call  ratio {a / b_med:5.2f}x"
    )
    print(
        f"@tool call, until on disk (encode+I/O): {t * 1e6:7.1f} µs/call  ratio {t / b_med:5.2f}x"
    )


if __name__ == "__main__":
    main()
