"""The exporter writes, byte for byte, what its span walk wrote before it was made fast.

``tests.fixtures.scrub_reference`` is that walk frozen: every value judged
through the redactor's public calls one at a time, every field read through the
SDK's properties.  Spans are drawn with every kind of attribute the walk tells
apart (texts short and long, with and without secrets of every family, ids that
look like base64, JSON conversations, numbers, tuples and lists, bytes, the
placeholder itself), under plain names, secret names, names that hold a secret
themselves and our own bookkeeping and payload names, with events, links,
statuses and trace states that may hide secrets too, on the SDK's
``ReadableSpan`` and on a class of its own that overrides a property.  Each goes
through ``FileSpanExporter`` into a real file, whose bytes must be those of the
reference's spans encoded and framed; stored spans (``convert``, ``export``)
likewise through ``hidden_copy(stored=True)``.
"""

from __future__ import annotations

import base64
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode
from opentelemetry.trace.span import TraceState

from otel_replay import FileSpanExporter
from otel_replay import attributes as A
from otel_replay.export.scrub import hidden_copy
from otel_replay.otlp.framing import frame
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.redaction import PLACEHOLDER
from tests.fixtures import scrub_reference as reference
from tests.fixtures.secrets import SECRET_SHAPES

_SECRET = SECRET_SHAPES.map(lambda shape: shape[0])
_ID = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789", min_size=8, max_size=24)
_WORDS = st.sampled_from(["order", "the", "token", "key", "café", "Where is", "%20", "\\n"])


@st.composite
def _prose(draw: st.DrawFn) -> str:
    """Text around secrets or none, short or past the engine's memory of short texts."""
    parts = draw(st.lists(st.one_of(_WORDS, _SECRET, st.text(max_size=12)), max_size=8))
    text = " ".join(parts)
    if draw(st.booleans()):
        text = (text + " " + "the parcel left the warehouse on Monday; " * 8)[
            : draw(st.integers(0, 900))
        ]
    return text


_TEXT = st.one_of(
    _prose(),
    _SECRET,
    _ID.map(lambda b: f"chatcmpl-{b}"),
    _SECRET.map(lambda s: base64.b64encode(f"key: {s}".encode()).decode()),
    st.just(PLACEHOLDER),
    st.lists(st.fixed_dictionaries({"role": st.just("user"), "content": _prose()}), max_size=4).map(
        json.dumps
    ),
)
_VALUE = st.one_of(
    _TEXT,
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, width=32),
    st.booleans(),
    st.tuples(st.sampled_from(["stop", "length"])),
    st.lists(_TEXT, max_size=3).map(tuple),
    st.lists(st.one_of(_TEXT, st.integers()), max_size=3),
    _TEXT.map(lambda t: t.encode("utf-8")),
)
_NAME = st.one_of(
    st.sampled_from(
        [
            "note",
            "url.full",
            "gen_ai.input.messages",
            "gen_ai.response.id",
            "api_key",
            "db.password",
            "http.request.header.authorization",
            "llm.invocation_parameters",
            A.REDACTED,
            A.FP + "host",
        ]
    ),
    _SECRET.map(lambda s: f"header {s}"),  # a name that holds a secret itself
)


@st.composite
def _attributes(draw: st.DrawFn, payload: bool = True) -> dict[str, Any]:
    attrs = draw(st.dictionaries(_NAME, _VALUE, max_size=6))
    if payload and draw(st.booleans()):  # a payload of ours, with its companions
        key = "gen_ai.output.messages"
        text = draw(_TEXT)
        attrs[key] = text
        attrs[A.SHA256 + key] = "ab" * 32
        attrs[A.TYPE + key] = "str"
        if draw(st.booleans()):
            attrs[A.BYTES + key] = text.encode("utf-8")
    if A.REDACTED in attrs:
        attrs[A.REDACTED] = ("note",)
    return attrs


class _OwnName(ReadableSpan):
    """A span class of its own: read through its properties, not past them."""

    @property
    def name(self) -> str:
        return self._name


@st.composite
def _spans(draw: st.DrawFn) -> list[ReadableSpan]:
    resource = Resource(draw(_attributes(payload=False)))
    scope = InstrumentationScope("instrumentation", draw(st.sampled_from(["1.0", None])))
    spans = []
    for i in range(draw(st.integers(1, 4))):
        state = TraceState(
            [("vendor", draw(st.sampled_from(["k1", "sk-proj-abcdefghijklmnop1234"])))]
        )
        context = SpanContext(7, i + 1, False, trace_state=draw(st.sampled_from([None, state])))
        events = [
            Event(draw(st.one_of(_WORDS, _SECRET)), draw(_attributes()), 10 + j)
            for j in range(draw(st.integers(0, 2)))
        ]
        links = [Link(SpanContext(8, 9, False), draw(_attributes(payload=False)))] * draw(
            st.integers(0, 1)
        )
        status = draw(
            st.one_of(
                st.just(Status(StatusCode.UNSET)),
                st.one_of(_WORDS, _SECRET).map(lambda d: Status(StatusCode.ERROR, d)),
            )
        )
        cls = draw(st.sampled_from([ReadableSpan, _OwnName]))
        spans.append(
            cls(
                name=draw(st.one_of(_WORDS, _SECRET)),
                context=context,
                resource=resource,
                attributes=draw(_attributes()),
                events=events,
                links=links,
                kind=SpanKind.CLIENT,
                status=status,
                start_time=1,
                end_time=2,
                instrumentation_scope=scope,
            )
        )
    return spans


@settings(
    max_examples=80,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(spans=_spans())
def test_the_exporter_writes_what_the_reference_walk_makes(
    tmp_path: Path, spans: list[ReadableSpan]
) -> None:
    path = Path(tempfile.mkdtemp(dir=tmp_path)) / "spans.otlp"
    exporter = FileSpanExporter(path)
    exporter.export(spans)
    exporter.shutdown()
    expected = frame(
        encode_request(
            [reference.hidden_copy(s) for s in spans],
            max_inline=exporter.max_inline,
            blobs=exporter.blobs,
        ),
        "proto",
    )
    assert path.read_bytes() == expected
    stored = encode_request([hidden_copy(s, stored=True) for s in spans])
    assert stored == encode_request([reference.hidden_copy(s, stored=True) for s in spans])
