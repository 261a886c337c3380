"""Secrets on every path of a span: its name, event names, link attributes, every exporter.

Generated secrets of every family the redactor knows (provider keys, tokens,
JWTs, ``Bearer``, passwords in URLs and query strings, ``password=``) are put
in a span's name as it starts and through ``update_name``, in event names and
attributes, link attributes (by text and by key), the status, the resource,
the instrumentation scope, and the trace states of a parent and of a link
from another service (its ``tracestate`` header).  The spans go out through the real SDK to every
sink at once: ``ReplaySpanProcessor`` with ``FileSpanExporter`` (protobuf, and
JSON lines compressed with zstd) and the standard OTLP/HTTP exporter (gzip) to
a collector on 127.0.0.1; a provider with no processor, where
``FileSpanExporter`` (protobuf and JSON lines) and ``GenAISemconvExporter``
around the OTLP/HTTP exporter scrub alone; and ``RecordingSpanProcessor``
around the OTLP/HTTP exporter, alone.  Every byte
written or sent is grepped, compressed bytes found in it decompressed first.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from opentelemetry import context, trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import (
    Link,
    NonRecordingSpan,
    SpanContext,
    Status,
    StatusCode,
    TraceFlags,
)
from opentelemetry.trace.span import TraceState

import otel_replay
from otel_replay import attributes as A
from otel_replay.redaction import configure_redaction, redactor
from otel_replay.sources.reader import SpanReader
from tests.fixtures.secrets import SECRET_SHAPES, WRITING, collector, decompressed, every_byte

#: Every place of a span a secret is put.
SITES = (
    "span name at start",
    "span name updated",
    "event name",
    "event attribute",
    "link attribute text",
    "link attribute key",
    "status description",
    "resource attribute",
    "scope attribute",
    "trace state",
    "link trace state",
)

#: A trace state member's value holds no "=" or "," (W3C): the shapes that fit in one.
_IN_TRACE_STATE = SECRET_SHAPES.filter(lambda s: "=" not in s[0] and "," not in s[0])


def _sites() -> st.SearchStrategy[dict[str, tuple[str, str]]]:
    return st.fixed_dictionaries(
        {site: _IN_TRACE_STATE if "trace state" in site else SECRET_SHAPES for site in SITES}
    )


def _remote(trace_id: int, vendor_value: str) -> SpanContext:
    """A context another service sent, its ``tracestate`` header holding ``vendor_value``."""
    state = TraceState([("acme", vendor_value), ("other", "1")])
    return SpanContext(trace_id, 0xC0FFEE, True, TraceFlags(TraceFlags.SAMPLED), state)


@pytest.fixture(autouse=True)
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


def _spans(provider: TracerProvider, planted: dict[str, tuple[str, str]]) -> None:
    """Two linked spans holding a secret at every site; a clean one beside them."""
    tracer = provider.get_tracer(
        "acme.http.client", "1.0", attributes={"note": f"from {planted['scope attribute'][0]}"}
    )
    # Under a parent of another service: every span takes its trace state.
    parent = trace.set_span_in_context(NonRecordingSpan(_remote(7, planted["trace state"][0])))
    token = context.attach(parent)
    try:
        _children(tracer, planted)
    finally:
        context.detach(token)


def _children(tracer: trace.Tracer, planted: dict[str, tuple[str, str]]) -> None:
    with tracer.start_as_current_span("plan") as first:
        first.set_attribute("step", 1)
    link_text, _ = planted["link attribute text"]
    _, link_key = planted["link attribute key"]
    with tracer.start_as_current_span(
        f"GET {planted['span name at start'][0]}",
        links=[Link(first.get_span_context(), {"peer": f"via {link_text}", "api_key": link_key})],
    ) as span:
        span.add_event(f"retry with {planted['event name'][0]}", {"attempt": 2})
        span.add_event("http.request", {"detail": f"sent {planted['event attribute'][0]} ok"})
        span.add_link(first.get_span_context(), {"why": f"again {link_text}"})
        span.add_link(_remote(8, planted["link trace state"][0]))
        span.set_status(
            Status(StatusCode.ERROR, f"refused: {planted['status description'][0]} expired")
        )
    with tracer.start_as_current_span("pending") as renamed:
        renamed.update_name(f"POST {planted['span name updated'][0]}")


def _leaks(written: dict[str, bytes], planted: dict[str, tuple[str, str]]) -> list[str]:
    return [
        f"{where} (planted in the {site})"
        for site, (_, secret) in planted.items()
        for where, data in written.items()
        if secret.encode() in data
    ]


def test_the_shapes_drawn_are_secrets_to_the_redactor() -> None:
    """The generated shapes are ones the redactor hides (else the tests below test nothing)."""

    @given(SECRET_SHAPES)
    def check(shape: tuple[str, str]) -> None:
        text, secret = shape
        assert secret not in redactor().text(f"x {text} y")

    check()


def test_no_secret_on_any_span_path_reaches_any_sink(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with collector() as (endpoint, received):

        @WRITING
        @given(planted=_sites())
        def check(planted: dict[str, tuple[str, str]]) -> None:
            received.clear()
            _write_and_check(tmp_path_factory.mktemp("sinks"), endpoint, received, planted)

        check()


def _write_and_check(
    root: Path, endpoint: str, received: list[bytes], planted: dict[str, tuple[str, str]]
) -> None:
    resource = Resource.create(
        {"service.name": "app", "deploy.source": planted["resource attribute"][0]}
    )
    full = TracerProvider(resource=resource)
    for exporter in (
        otel_replay.FileSpanExporter(root / "full.otlp"),
        otel_replay.FileSpanExporter(root / "full.jsonl", format="json", compression="zstd"),
        OTLPSpanExporter(endpoint=endpoint, compression=Compression.Gzip),
    ):
        full.add_span_processor(SimpleSpanProcessor(exporter))
    # Added last: it still changes the span before any exporter of the provider sees it.
    full.add_span_processor(otel_replay.ReplaySpanProcessor(semconv=False))
    bare = TracerProvider(resource=resource)  # no processor: our exporters scrub alone
    bare.add_span_processor(SimpleSpanProcessor(otel_replay.FileSpanExporter(root / "bare.otlp")))
    bare.add_span_processor(
        SimpleSpanProcessor(otel_replay.FileSpanExporter(root / "bare.jsonl", format="json"))
    )
    # Our semconv wrapper around the standard OTLP exporter, no processor: it scrubs too.
    wrapped = OTLPSpanExporter(endpoint=endpoint, compression=Compression.Gzip)
    bare.add_span_processor(SimpleSpanProcessor(otel_replay.GenAISemconvExporter(wrapped)))
    for provider in (full, bare):
        _spans(provider, planted)
        provider.shutdown()
    written = every_byte(root)
    assert len(received) == 6, "each OTLP exporter sends each of the 3 spans"
    written["OTLP requests"] = decompressed(b"".join(received[:3]))
    written["OTLP requests of the semconv wrapper"] = decompressed(b"".join(received[3:]))
    # Our queueing processor around the standard OTLP exporter, no other: it scrubs too.
    queued = TracerProvider(resource=resource)
    sending = OTLPSpanExporter(endpoint=endpoint, compression=Compression.Gzip)
    queued.add_span_processor(otel_replay.RecordingSpanProcessor(sending))
    _spans(queued, planted)
    queued.shutdown()
    assert len(received) > 6, "the queueing processor sent its spans"
    written["OTLP requests of RecordingSpanProcessor"] = decompressed(b"".join(received[6:]))
    assert not _leaks(written, planted)
    # Scrubbed, not dropped: each sink holds the spans, the placeholder where the secrets were.
    for where in written:
        assert written[where].count(A.REDACTED_VALUE.encode()) >= len(SITES), where
    for name in ("full.otlp", "full.jsonl", "bare.otlp", "bare.jsonl"):
        spans = list(SpanReader(root / name))
        names = sorted(s.name for s in spans)
        assert [n.split(" ", 1)[0] for n in names] == ["GET", "POST", "plan"], names
        assert all(A.REDACTED_VALUE in n for n in names[:2]), names
        hidden = {h for s in spans for h in s.attributes.get(A.REDACTED) or ()}
        assert {"span name", "events[0] name", "links[0].peer", "links[0].api_key"} <= hidden
        # (the first link's context is that of a span scrubbed as it ended, where the
        # processor ran: nothing left to hide in it then)
        assert {"trace state", "links[2] trace state"} <= hidden
