"""Secrets in attribute NAMES: no writer puts a key holding one on disk or on the wire.

Class: an attribute key (not its value) whose text holds a secret of any family
the redactor knows, on a span, an event, a link, a resource or an instrumentation
scope.  Generated secrets are planted as keys of each kind; the spans go out
through the real SDK to every writer (``ReplaySpanProcessor`` with
``FileSpanExporter`` in protobuf and zstd JSON lines and the OTLP/HTTP exporter to
a collector on 127.0.0.1; ``FileSpanExporter`` alone in protobuf and JSON lines;
``GenAISemconvExporter`` around the OTLP/HTTP exporter), and a third party's
dump holding them is converted (protobuf, JSON lines with zstd) and re-sent
(``export``).  Every byte written or sent is grepped.  Each key is renamed to its
scrubbed text, its value kept under it; a scrubbed name that is already taken is
suffixed, never overwriting another attribute; the new name is listed in
``otel_replay.redacted``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Link

import otel_replay
from otel_replay import attributes as A
from otel_replay.cli.main import cli
from otel_replay.export.scrub import hidden_copy
from otel_replay.redaction import PLACEHOLDER, configure_redaction, redactor
from otel_replay.sources.reader import SpanReader
from tests.fixtures.secrets import SECRET_SHAPES, WRITING, collector, decompressed, every_byte

#: Each kind of attribute a key holding a secret is planted on.
KINDS = ("span", "event", "link", "resource", "scope")
Planted = dict[str, tuple[str, str]]


@pytest.fixture(autouse=True)
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


def _draws() -> st.SearchStrategy[Planted]:
    return st.fixed_dictionaries({kind: SECRET_SHAPES for kind in KINDS})


def _key(planted: Planted, kind: str) -> str:
    return f"{kind}.key {planted[kind][0]}"


def _leaks(written: dict[str, bytes], planted: Planted) -> list[str]:
    return [
        f"{where} (a {kind} attribute key)"
        for kind, (_, secret) in planted.items()
        for where, data in written.items()
        if secret.encode() in data
    ]


def _live(provider: TracerProvider, planted: Planted) -> None:
    tracer = provider.get_tracer(
        "acme.client", "1.0", attributes={_key(planted, "scope"): "scope value"}
    )
    with tracer.start_as_current_span("plan") as first:
        first.set_attribute("step", 1)
    with tracer.start_as_current_span(
        "work",
        links=[Link(first.get_span_context(), {_key(planted, "link"): "link value"})],
        attributes={_key(planted, "span"): "span value", "plain": 1},
    ) as span:
        span.add_event("retry", {_key(planted, "event"): "event value"})


def test_no_secret_in_an_attribute_key_reaches_any_live_sink(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with collector() as (endpoint, received):

        @WRITING
        @given(planted=_draws())
        def check(planted: Planted) -> None:
            received.clear()
            root = tmp_path_factory.mktemp("keys")
            resource = Resource.create({"service.name": "app", _key(planted, "resource"): "r"})
            full = TracerProvider(resource=resource)
            for exporter in (
                otel_replay.FileSpanExporter(root / "full.otlp"),
                otel_replay.FileSpanExporter(
                    root / "full.jsonl", format="json", compression="zstd"
                ),
                OTLPSpanExporter(endpoint=endpoint),
            ):
                full.add_span_processor(SimpleSpanProcessor(exporter))
            full.add_span_processor(otel_replay.ReplaySpanProcessor(semconv=False))
            bare = TracerProvider(resource=resource)
            for exporter in (
                otel_replay.FileSpanExporter(root / "bare.otlp"),
                otel_replay.FileSpanExporter(root / "bare.jsonl", format="json"),
                otel_replay.GenAISemconvExporter(OTLPSpanExporter(endpoint=endpoint)),
            ):
                bare.add_span_processor(SimpleSpanProcessor(exporter))
            for provider in (full, bare):
                _live(provider, planted)
                provider.shutdown()
            written = every_byte(root)
            assert len(received) == 4
            written["OTLP requests"] = decompressed(b"".join(received))
            assert not _leaks(written, planted)
            for name in ("full.otlp", "full.jsonl", "bare.otlp", "bare.jsonl"):
                spans = {s.name: s for s in SpanReader(root / name)}
                _check_renamed(spans["work"], planted)

        check()


def _check_renamed(span: Any, planted: Planted) -> None:
    """Renamed, not dropped: each value is kept under the key's scrubbed name, listed."""
    r = redactor()
    hidden = span.attributes[A.REDACTED]
    for kind, where, attrs in (
        ("span", "", span.attributes),
        ("event", "events[0].", span.events[0].attributes),
        ("link", "links[0].", span.links[0].attributes),
    ):
        key = _key(planted, kind)
        # A key named like a secret (``... password=``) hides its value whole, as ever.
        value = PLACEHOLDER if r.is_secret_key(key) else f"{kind} value"
        assert attrs[r.text(key)] == value, (kind, dict(attrs))
        assert where + r.text(key) in hidden, (kind, hidden)
    assert span.attributes.get("plain", 1) == 1


def _kv(key: str, value: str) -> dict[str, Any]:
    return {"key": key, "value": {"stringValue": value}}


def _dump(planted: Planted, n: int) -> dict[str, Any]:
    trace = f"{n + 1:032x}"
    span = {
        "traceId": trace,
        "spanId": "00000000000000a1",
        "name": "work",
        "kind": 3,
        "startTimeUnixNano": "1000",
        "endTimeUnixNano": "2000",
        "attributes": [_kv(_key(planted, "span"), "span value")],
        "events": [
            {
                "timeUnixNano": "1500",
                "name": "retry",
                "attributes": [_kv(_key(planted, "event"), "event value")],
            }
        ],
        "links": [
            {
                "traceId": trace,
                "spanId": "00000000000000a2",
                "attributes": [_kv(_key(planted, "link"), "link value")],
            }
        ],
    }
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [_kv(_key(planted, "resource"), "r")]},
                "scopeSpans": [
                    {
                        "scope": {
                            "name": "acme",
                            "attributes": [_kv(_key(planted, "scope"), "s")],
                        },
                        "spans": [span],
                    }
                ],
            }
        ]
    }


def test_no_secret_in_a_stored_attribute_key_is_converted_or_resent(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    with collector() as (endpoint, received):

        @settings(WRITING, max_examples=10)
        @given(draws=st.lists(_draws(), min_size=2, max_size=2))
        def check(draws: list[Planted]) -> None:
            received.clear()
            root = tmp_path_factory.mktemp("stored")
            (root / "in").mkdir()
            src = root / "in" / "traces.jsonl"
            src.write_text("".join(json.dumps(_dump(p, n)) + "\n" for n, p in enumerate(draws)))
            for name, args in (
                ("out.pb", []),
                ("out.jsonl", ["--format", "json"]),
                ("out.jsonl.zst", ["--format", "json", "--zstd"]),
            ):
                out = root / "out" / name
                result = CliRunner().invoke(cli, ["convert", str(src), "-o", str(out), *args])
                assert result.exit_code == 0, result.output
                spans = list(SpanReader(out))
                assert len(spans) == len(draws)
                for span, planted in zip(spans, draws, strict=True):
                    _check_renamed(span, planted)
            result = CliRunner().invoke(cli, ["export", str(src), "--endpoint", endpoint])
            assert result.exit_code == 0, result.output
            written = every_byte(root / "out")
            written["OTLP requests"] = decompressed(b"".join(received))
            for planted in draws:
                assert not _leaks(written, planted)

        check()


def test_a_key_scrubbed_to_a_name_already_taken_overwrites_nothing() -> None:
    """Keys that scrub to one name (to each other's, or to a clean key's) all keep their values."""

    @settings(max_examples=50, deadline=None)
    @given(st.lists(SECRET_SHAPES, min_size=2, max_size=5, unique_by=lambda s: s[0]), st.booleans())
    def check(shapes: list[tuple[str, str]], taken: bool) -> None:
        r = redactor()
        keys = [f"k {s}" for s, _ in shapes]
        attrs: dict[str, Any] = {key: i for i, key in enumerate(keys)}
        if taken:
            attrs = {r.text(keys[0]): "clean", **attrs}
        out = dict(hidden_copy(ReadableSpan(name="s", attributes=attrs)).attributes or {})
        hidden = out.pop(A.REDACTED)
        assert len(out) == len(attrs)
        kept = sorted(map(str, out.values()))
        # A key named like a secret (``k password=...``) hides its value whole, as ever.
        want = [PLACEHOLDER if r.is_secret_key(k) else v for k, v in attrs.items()]
        assert kept == sorted(map(str, want))
        assert not [secret for _, secret in shapes if secret in repr((out, hidden))]
        assert len(hidden) >= len(keys)
        assert set(hidden) <= set(out)

    check()
