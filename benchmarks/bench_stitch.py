"""Stitching client-only traces: build_runs time as the dump grows.

    python benchmarks/bench_stitch.py [--conversations 2000] [--calls 6]

Each conversation is ``--calls`` model calls, one trace each (as client-only
instrumentations write them), with a tool call and its result between calls;
conversations overlap in time and half of them repeat the same messages (the
same scenario run again).  The dump is built at 1x, 2x and 4x the size; with
the prefix-hash index the time per trace stays flat instead of growing with
the number of traces.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from otel_replay.otlp.records import SpanRecord
from otel_replay.runs.build import build_runs


def conversation_spans(n: int, calls: int, start: int) -> list[SpanRecord]:
    prompt = f"order ORD-{n % (n // 2 + 1)}"  # every other conversation repeats one
    messages: list[dict[str, Any]] = [
        {"role": "system", "parts": [{"type": "text", "content": "Be concise."}]},
        {"role": "user", "parts": [{"type": "text", "content": prompt}]},
    ]
    spans = []
    for k in range(calls):
        call = {"type": "tool_call", "id": f"c{k}", "name": "lookup", "arguments": {"q": prompt}}
        out = [{"role": "assistant", "parts": [call]}]
        trace = (n << 16) + k + 1
        spans.append(
            SpanRecord(
                trace_id=f"{trace:032x}",
                span_id=f"{trace:016x}",
                parent_span_id=None,
                name="chat m",
                kind=3,
                start_ns=start + k * 1_000,
                end_ns=start + k * 1_000 + 500,
                attributes={
                    "gen_ai.operation.name": "chat",
                    "gen_ai.request.model": "m",
                    "gen_ai.input.messages": json.dumps(messages),
                    "gen_ai.output.messages": json.dumps(out),
                },
                events=[],
                status_code=0,
                status_message="",
                resource={"service.name": "bench"},
                scope_name="bench",
                scope_version="",
                source="",
            )
        )
        result = {"type": "tool_call_response", "id": f"c{k}", "response": f"result {k}"}
        messages = [*messages, *out, {"role": "tool", "parts": [result]}]
    return spans


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--conversations", type=int, default=2000)
    ap.add_argument("--calls", type=int, default=6)
    a = ap.parse_args()
    for scale in (1, 2, 4):
        n = a.conversations * scale
        spans = [s for c in range(n) for s in conversation_spans(c, a.calls, c * 300)]
        t0 = time.perf_counter()
        runs = build_runs(spans)
        took = time.perf_counter() - t0
        assert len(runs) == n, (len(runs), n)
        print(
            f"{len(spans):>7} traces -> {len(runs):>6} runs: {took:6.2f} s, "
            f"{took / len(spans) * 1e6:6.1f} µs per trace"
        )


if __name__ == "__main__":
    main()
