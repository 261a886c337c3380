"""One trace out of a big dump: index build vs a plain parse, then one-trace loads.

    python benchmarks/bench_index.py [--size-mb 1024]

Writes a dump of 4-byte framed requests (GenAI spans of ~2.8 KB, 10 spans
per trace, batches of 500 spans cutting across traces) of the given size.
Baseline, measured in the same run: reading every record and parsing it with
upb (``ExportTraceServiceRequest.FromString``), the least any reader does.
Then: building the trace index (one pass), and loading one trace through it
(``otel_replay.load(path, trace_id=...)`` and its steps built, median of 20
random traces).
Peak RSS is read after each phase.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import struct
import tempfile
import time
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay
from otel_replay.otlp import index
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.otlp.sniff import iter_be32, iter_records


def template(
    traces: int = 50, per_trace: int = 10, agent: bool = False
) -> tuple[bytes, list[bytes]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("bench")
    messages = json.dumps(
        [{"role": "user", "parts": [{"type": "text", "content": "Where is my order? " * 100}]}]
    )
    for t in range(traces):
        with tracer.start_as_current_span(f"invoke_agent run-{t}") as root:
            if agent:  # a run of an agent, not calls of a bare client
                root.set_attributes(
                    {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "support"}
                )
            for i in range(per_trace - 1):
                with tracer.start_as_current_span("chat gpt-4o") as span:
                    span.set_attributes(
                        {
                            "gen_ai.operation.name": "chat",
                            "gen_ai.input.messages": messages,
                            "gen_ai.usage.input_tokens": i,
                        }
                    )
    spans = list(exporter.get_finished_spans())
    ids = sorted({s.context.trace_id.to_bytes(16, "big") for s in spans})
    return encode_request(spans), ids


def write_dump(path: Path, size: int, agent: bool = False) -> list[str]:
    body, ids = template(agent=agent)
    rng = random.Random(7)
    written, all_ids = 0, []
    with open(path, "wb") as f:
        while written < size:
            fresh = [rng.randbytes(16) for _ in ids]
            out = body
            for old, new in zip(ids, fresh, strict=True):
                out = out.replace(old, new)
            f.write(struct.pack(">I", len(out)) + out)
            written += 4 + len(out)
            all_ids.extend(t.hex() for t in fresh)
    return all_ids


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump.otlp"
        t0 = time.perf_counter()
        ids = write_dump(dump, args.size_mb * 1024 * 1024)
        size = dump.stat().st_size
        took = time.perf_counter() - t0
        print(f"dump: {size / 1e9:.2f} GB, {len(ids):,} traces, written in {took:.1f} s")
        t0 = time.perf_counter()
        spans = 0
        for _, body in iter_records(dump):
            spans += sum(
                len(ss.spans)
                for rs in ExportTraceServiceRequest.FromString(body).resource_spans
                for ss in rs.scope_spans
            )
        parse = time.perf_counter() - t0
        rate = size / parse / 1e9
        print(
            f"baseline, upb parse of all records: {parse:6.2f} s ({rate:.2f} GB/s, {spans:,} spans)"
        )
        print(f"  peak RSS so far {peak_rss_mb():.0f} MB")
        t0 = time.perf_counter()
        with open(dump, "rb") as f:
            idx = index.build(dump, iter_be32(f, str(dump)))
        index.save(dump, idx)
        build = time.perf_counter() - t0
        mb = index.index_path(dump).stat().st_size / 1e6
        print(
            f"index build (one pass) + save: {build:6.2f} s  ratio vs baseline {build / parse:.2f}x"
        )
        print(f"  index file {mb:.1f} MB; peak RSS so far {peak_rss_mb():.0f} MB")
        rng = random.Random(11)
        samples = []
        for tid in rng.sample(ids, 20):
            t0 = time.perf_counter()
            (run,) = otel_replay.load(dump, trace_id=tid)
            steps = len(run.steps)  # built on first use: counted in
            samples.append(time.perf_counter() - t0)
            assert run.run_id == tid and steps == 10
        one = statistics.median(samples)
        print(f"one trace via the index: {one * 1e3:6.1f} ms  ratio vs baseline {one / parse:.4f}x")
        print(f"  median of 20, reading the index file included; peak RSS {peak_rss_mb():.0f} MB")
        os.remove(index.index_path(dump))


if __name__ == "__main__":
    main()
