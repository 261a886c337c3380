"""Stored spans rebuilt as SDK spans encode to the same OTLP request as the originals."""

from __future__ import annotations

import json

from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanKind, Status, StatusCode

from otel_replay.export.readable_spans import readable_spans
from otel_replay.sources.reader import SpanReader


def _spans() -> list:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource({"service.name": "agent", "n": 3}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("agent.lib", "1.2")
    other = provider.get_tracer("other.lib")
    with tracer.start_as_current_span("invoke_agent", kind=SpanKind.SERVER) as root:
        root.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("chat m", kind=SpanKind.CLIENT) as chat:
            chat.set_attribute("raw", b"\xff\x00bytes")
            chat.set_attribute("nested", {"a": [1, 2.5, "x"], "b": {"c": True}})
            chat.add_event("gen_ai.choice", {"index": 0}, timestamp=123)
        link = Link(root.get_span_context(), {"why": "retry"})
        with other.start_as_current_span("tool", links=[link]) as tool:
            tool.set_status(Status(StatusCode.ERROR, "boom"))
        with other.start_as_current_span("ok") as ok:
            ok.set_status(Status(StatusCode.OK))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def _canonical(request: object) -> list[dict]:
    # Order of blocks and spans is not part of the contract; their content is.
    doc = MessageToDict(request)  # type: ignore[arg-type]
    spans = []
    for rs in doc["resourceSpans"]:
        for ss in rs["scopeSpans"]:
            for span in ss["spans"]:
                spans.append({"resource": rs["resource"], "scope": ss["scope"], "span": span})
    return sorted(spans, key=lambda s: json.dumps(s, sort_keys=True))


def test_rebuilt_spans_encode_like_the_originals(tmp_path):
    original = _spans()
    path = tmp_path / "run.pb"
    path.write_bytes(encode_spans(original).SerializeToString())

    rebuilt = list(readable_spans(SpanReader(path)))

    assert len(rebuilt) == len(original) == 4
    assert _canonical(encode_spans(rebuilt)) == _canonical(encode_spans(original))


def test_spans_of_one_resource_stay_in_one_block(tmp_path):
    path = tmp_path / "run.pb"
    path.write_bytes(encode_spans(_spans()).SerializeToString())

    request = encode_spans(list(readable_spans(SpanReader(path))))

    assert len(request.resource_spans) == 1
    assert sorted(ss.scope.name for ss in request.resource_spans[0].scope_spans) == [
        "agent.lib",
        "other.lib",
    ]
