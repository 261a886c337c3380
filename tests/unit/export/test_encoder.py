"""The hand-written encoder: parsed back, its bytes equal ``encode_spans`` exactly.

Only the two extras (payloads moved to the blob store, secret-looking keys
redacted) may make it differ, and only in the attributes they touch.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link

from otel_replay import attributes as A
from otel_replay.export.scrub import hidden_copy
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.payload.blobs import BlobStore

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


def parse(data: bytes) -> Any:
    return ExportTraceServiceRequest.FromString(data)


def record(
    fn: Callable[[TracerProvider], None], resource: Resource | None = None
) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=resource) if resource else TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fn(provider)
    provider.shutdown()
    return list(exporter.get_finished_spans())


def all_key_values(message: Any) -> Iterator[Any]:
    """Every KeyValue of a request: resource, scope, span, event and link attributes."""
    for rs in message.resource_spans:
        yield from rs.resource.attributes
        for ss in rs.scope_spans:
            yield from ss.scope.attributes
            for s in ss.spans:
                yield from s.attributes
                for e in s.events:
                    yield from e.attributes
                for link in s.links:
                    yield from link.attributes


# --- equality with encode_spans ------------------------------------------------------


def test_equals_encode_spans_for_a_mixed_batch(varied_spans: list[ReadableSpan]) -> None:
    ours = parse(encode_request(varied_spans))
    assert ours == encode_spans(varied_spans)
    # The comparison is worth something only if the batch really is varied.
    assert len(ours.resource_spans) == 2 and len(ours.resource_spans[0].scope_spans) == 2
    kinds = {kv.value.WhichOneof("value") for kv in all_key_values(ours)}
    assert kinds == {
        "string_value",
        "bool_value",
        "int_value",
        "double_value",
        "bytes_value",
        "array_value",
        "kvlist_value",
    }


def test_equals_encode_spans_span_by_span_and_in_any_order(
    varied_spans: list[ReadableSpan],
) -> None:
    for span in varied_spans:
        assert parse(encode_request([span])) == encode_spans([span]), span.name
    rng = random.Random(7)
    for _ in range(20):
        batch = rng.sample(varied_spans, rng.randint(1, len(varied_spans)))
        assert parse(encode_request(batch)) == encode_spans(batch)


def test_dropped_counts(make_spans: Callable[..., list[ReadableSpan]]) -> None:
    spans = make_spans(
        max_span_attributes=3,
        max_events=1,
        max_links=1,
        max_event_attributes=1,
        max_link_attributes=0,
    )
    assert any(s.dropped_attributes for s in spans) and any(s.dropped_events for s in spans)
    assert any(s.dropped_links for s in spans)
    assert any(e.dropped_attributes for s in spans for e in s.events)
    assert any(link.dropped_attributes for s in spans for link in s.links)
    assert parse(encode_request(spans)) == encode_spans(spans)


def test_one_pair_in_every_kind_of_attribute_list() -> None:
    # The pair cache holds whole encoded fields; the field tag differs by place.
    def make(provider: TracerProvider) -> None:
        tracer = provider.get_tracer("s", attributes={"k": "v", "n": 1, "t": True})
        with tracer.start_as_current_span("a", attributes={"k": "v", "n": 1}) as a:
            a.add_event("e", {"k": "v", "n": 1, "t": True})
        with tracer.start_as_current_span(
            "b", links=[Link(a.get_span_context(), {"k": "v", "n": 1, "t": True})]
        ):
            pass

    spans = record(make, Resource.create({"k": "v", "n": 1, "t": True}))
    for _ in range(2):  # cold, then warm caches
        assert parse(encode_request(spans)) == encode_spans(spans)


def test_equal_but_distinct_resources_and_scopes_group_like_encode_spans() -> None:
    exporter = InMemorySpanExporter()
    providers = []
    for _ in range(2):  # two providers, equal resources: two objects, one group
        provider = TracerProvider(resource=Resource.create({"service.name": "same"}))
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        providers.append(provider)
    other = TracerProvider(resource=Resource.create({"service.name": "other"}))
    other.add_span_processor(SimpleSpanProcessor(exporter))
    for i in range(6):  # interleaved: the order inside each group must follow the batch
        provider = [providers[0], other, providers[1]][i % 3]
        with provider.get_tracer(f"scope-{i % 2}", "1").start_as_current_span(f"s{i}"):
            pass
    spans = list(exporter.get_finished_spans())
    assert spans[0].resource is not spans[2].resource and spans[0].resource == spans[2].resource
    message = parse(encode_request(spans))
    assert message == encode_spans(spans)
    assert len(message.resource_spans) == 2


def test_caches_survive_many_calls(varied_spans: list[ReadableSpan]) -> None:
    rng = random.Random(3)
    for _ in range(50):
        batch = rng.sample(varied_spans, 3)
        assert parse(encode_request(batch)) == encode_spans(batch)


def test_unencodable_attributes_are_skipped_as_encode_spans_skips_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    weird = {
        "too_big": 2**64,
        "too_small": -(2**63) - 1,
        "nested_too_big": [1, 2**70],
        "lone\ud800key": "x",
        "lone_value": "a\udfffb",
        "kept": "yes",
    }

    def make(provider: TracerProvider) -> None:
        with provider.get_tracer("w").start_as_current_span("weird", attributes=weird):
            pass

    spans = record(make)
    assert len(spans[0].attributes or {}) == len(weird)  # the SDK kept them all
    with caplog.at_level(logging.WARNING, "otel_replay"):
        message = parse(encode_request(spans))  # a corrupt varint would not parse
    assert message == encode_spans(spans)
    assert [kv.key for kv in message.resource_spans[0].scope_spans[0].spans[0].attributes] == [
        "kept"
    ]
    assert "too_big" in caplog.text


# --- property test -----------------------------------------------------------------

scalars = st.one_of(
    st.text(),
    st.booleans(),
    INT64,
    st.floats(allow_nan=False),
    st.binary(),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=10,
)
_prop_exporter = InMemorySpanExporter()
_prop_provider = TracerProvider()
_prop_provider.add_span_processor(SimpleSpanProcessor(_prop_exporter))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    attrs=st.dictionaries(st.text(min_size=1, max_size=20), values, max_size=8),
    event_attrs=st.dictionaries(st.text(min_size=1, max_size=10), scalars, max_size=4),
    name=st.text(max_size=30),
)
def test_property_random_attributes(
    attrs: dict[str, Any], event_attrs: dict[str, Any], name: str
) -> None:
    _prop_exporter.clear()
    with _prop_provider.get_tracer("p").start_as_current_span(name, attributes=attrs) as span:
        span.add_event(name, event_attrs)
    spans = _prop_exporter.get_finished_spans()
    assert parse(encode_request(spans)) == encode_spans(spans)


# --- extras: blobs and redaction --------------------------------------------------------


def expected_with(spans: list[ReadableSpan], change: Callable[[Any], None]) -> Any:
    """encode_spans' message with ``change`` applied to every KeyValue."""
    message = encode_spans(spans)
    for kv in all_key_values(message):
        change(kv)
    return message


def test_large_exact_payloads_go_to_the_blob_store(tmp_path: Path) -> None:
    big, edge, small = os.urandom(5000), os.urandom(1000), b"small"
    result_key = A.BYTES + A.TOOL_CALL_RESULT

    def make(provider: TracerProvider) -> None:
        with provider.get_tracer("p").start_as_current_span("s") as span:
            span.set_attributes(
                {
                    result_key: big,
                    A.BYTES + A.TOOL_CALL_ARGUMENTS: small,
                    A.BYTES + "at.the.limit": edge,  # not *longer* than max_inline
                    "plain.bytes": big,  # not an exact-payload attribute
                }
            )
            span.add_event("e", {result_key: big})

    spans = record(make)
    store = BlobStore(tmp_path / "t.otlp")
    message = parse(encode_request(spans, max_inline=1000, blobs=store))
    ref = "sha256:" + hashlib.sha256(big).hexdigest()

    def moved(kv: Any) -> None:
        if kv.key == result_key:
            kv.key = A.REF + A.TOOL_CALL_RESULT
            kv.value.string_value = ref

    assert message == expected_with(spans, moved)
    assert store.get(ref) == big
    assert sorted(p.name for p in store.root.iterdir()) == [ref.split(":")[1]]
    # Without both settings nothing moves.
    assert parse(encode_request(spans, blobs=store)) == encode_spans(spans)
    assert parse(encode_request(spans, max_inline=1000)) == encode_spans(spans)


def test_secrets_are_hidden_everywhere_and_nothing_else_changes() -> None:
    # What FileSpanExporter writes: each span through hidden_copy, then encoded.
    secret = "Bearer abcdefghijklmnop"

    def make(provider: TracerProvider) -> None:
        tracer = provider.get_tracer("p", attributes={"api_key": "scope-secret"})
        with tracer.start_as_current_span(
            "s",
            attributes={
                "http.request.header.authorization": secret,
                "db.password": 12345,
                "gen_ai.usage.input_tokens": 10,  # "token" inside a name that is not a secret
                "user.id": "u1",
            },
        ) as span:
            span.add_event("e", {"x-api-key": "event-secret", "ok": "fine"})
        with tracer.start_as_current_span(
            "t", links=[Link(span.get_span_context(), {"cookie": "link-secret"})]
        ):
            pass

    spans = record(make, Resource.create({"service.name": "r", "client_secret": "res-secret"}))
    flagged = {"http.request.header.authorization", "db.password", "x-api-key", "cookie"}
    flagged |= {"api_key", "client_secret"}

    def hidden(kv: Any) -> None:
        if kv.key in flagged:
            kv.value.Clear()
            kv.value.string_value = A.REDACTED_VALUE

    for _ in range(2):  # cold and warm caches
        data = encode_request([hidden_copy(s) for s in spans])
        message = parse(data)
        for rs in message.resource_spans:  # the record of what was hidden aside, compared
            for ss in rs.scope_spans:
                for sp in ss.spans:
                    kept = [kv for kv in sp.attributes if kv.key != A.REDACTED]
                    del sp.attributes[:]
                    sp.attributes.extend(kept)
        assert message == expected_with(spans, hidden)
        for plain in (b"abcdefghijklmnop", b"event-secret", b"link-secret", b"res-secret"):
            assert plain not in data
        # The spans themselves are untouched, and nothing hidden comes back from a cache.
        assert parse(encode_request(spans)) == encode_spans(spans)
