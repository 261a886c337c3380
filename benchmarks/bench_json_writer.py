"""Our OTLP/JSON writer vs our protobuf writer vs ``json_format.MessageToJson``.

    python benchmarks/bench_json_writer.py [--spans N] [--repeats R]

Builds the GenAI spans of ``bench_encoder.py`` (~4.8 KB each) with the real
SDK, checks that our JSON is, as data, protobuf's own JSON mapping of the
request our protobuf encoder writes (ids made hex; exits 1 if not), then
measures spans/s in the same run (best of R, rounds interleaved):

- ``MessageToJson`` of that request, already parsed (the baseline; and it
  writes ids as base64, enums by name, and is not what the Collector writes)
- ``request_to_json`` of the same parsed request (what ``otel-replay convert`` uses)
- ``encode_json_request`` from the SDK spans (what ``FileSpanExporter(format="json")`` uses)
- ``encode_request`` from the SDK spans (our protobuf writer)
- ``FileSpanExporter.export`` in batches of 512, JSON lines and protobuf, writes included
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_encoder import best_rates, genai_spans
from google.protobuf import json_format
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import otel_replay
from otel_replay.otlp.json_writer import encode_json_request, request_to_json
from otel_replay.otlp.proto_writer import encode_request


def hexify(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex()
            if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str)
            else hexify(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hexify(v) for v in node]
    return node


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--spans", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    spans = genai_spans(args.spans)
    message = ExportTraceServiceRequest.FromString(encode_request(spans))
    ours = encode_json_request(spans)
    canonical = hexify(json_format.MessageToDict(message, use_integers_for_enums=True))
    if json.loads(ours, parse_int=float) != canonical or request_to_json(message) != ours:
        print("MISMATCH: our JSON is not protobuf's JSON mapping of the same request")
        return 1
    size = len(ours) / len(spans)
    print(
        f"{len(spans)} spans, {size / 1024:.1f} KB of OTLP/JSON each; our JSON equals "
        "protobuf's JSON mapping of the same request (ids as hex)"
    )
    batches = [spans[i : i + 512] for i in range(0, len(spans), 512)]
    with tempfile.TemporaryDirectory() as tmp:
        as_json = otel_replay.FileSpanExporter(Path(tmp) / "bench.jsonl", format="json")
        as_proto = otel_replay.FileSpanExporter(Path(tmp) / "bench.otlp")
        rates = best_rates(
            {
                "MessageToJson": lambda: json_format.MessageToJson(message, indent=None),
                "request_to_json": lambda: request_to_json(message),
                "encode_json_request": lambda: encode_json_request(spans),
                "encode_request": lambda: encode_request(spans),
                "export json": lambda: [as_json.export(b) for b in batches],
                "export proto": lambda: [as_proto.export(b) for b in batches],
            },
            len(spans),
            args.repeats,
        )
        for exporter in (as_json, as_proto):
            exporter.shutdown()
            if exporter.dropped:
                print(f"FileSpanExporter dropped {exporter.dropped} spans")
                return 1
    base = rates["MessageToJson"]
    rows = [
        ("json_format.MessageToJson(request) (baseline)", "MessageToJson"),
        ("request_to_json(request) (ours, from the message)", "request_to_json"),
        ("encode_json_request(spans) (ours, from SDK spans)", "encode_json_request"),
        ("encode_request(spans) (ours, protobuf)", "encode_request"),
        ("FileSpanExporter(format=json).export, batches of 512", "export json"),
        ("FileSpanExporter(format=proto).export, batches of 512", "export proto"),
    ]
    for label, key in rows:
        rate = rates[key]
        print(f"{label:55} {rate:9,.0f} spans/s {1e6 / rate:7.1f} µs/span {rate / base:6.2f}x")
    print(
        f"JSON lines cost {rates['encode_request'] / rates['encode_json_request']:.2f}x "
        "our protobuf encoding (encode only)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
