"""A span whose name holds a lone surrogate is written, the surrogate as U+FFFD.

A lone surrogate has no UTF-8 spelling: encoding the span failed and the
exporter dropped it whole.  Names with lone surrogates at any place (first,
last, several, beside other scripts) go through the real SDK to
``FileSpanExporter`` in protobuf and JSON lines, as a span's name and as an
event's; every span comes back, each surrogate written U+FFFD and everything
else kept, counted in ``names_replaced`` and said in one warning.
"""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import otel_replay
from otel_replay.sources.reader import SpanReader

_SURROGATES = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF)
_OTHERS = st.characters(exclude_categories=("Cs",))


def _lone(text: str) -> bool:
    """No high surrogate right before a low one (a pair, joined when written)."""
    return not any(
        "\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff" for a, b in itertools.pairwise(text)
    )


#: Names holding one lone surrogate or more, anywhere.
names = (
    st.lists(st.one_of(_OTHERS, _SURROGATES), min_size=1, max_size=24)
    .map("".join)
    .filter(lambda n: any("\ud800" <= c <= "\udfff" for c in n) and _lone(n))
)


def _written(name: str) -> str:
    return "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in name)


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(names, names, st.sampled_from(["proto", "json"]))
def test_a_name_with_a_lone_surrogate_is_written_with_u_fffd(
    tmp_path_factory: pytest.TempPathFactory,
    caplog: pytest.LogCaptureFixture,
    name: str,
    event: str,
    fmt: str,
) -> None:
    path = Path(tmp_path_factory.mktemp("names")) / f"run.{fmt}"
    exporter = otel_replay.FileSpanExporter(path, format=fmt)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("acme")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="otel_replay"):
        with tracer.start_as_current_span("before"):
            pass
        with tracer.start_as_current_span(name) as span:
            span.set_attribute("step", 1)
            span.add_event(event, {"n": 2})
        with tracer.start_as_current_span("ok") as span:
            span.update_name(f"renamed {name}")
        provider.shutdown()
    spans = {s.name: s for s in SpanReader(path)}
    assert set(spans) == {"before", _written(name), f"renamed {_written(name)}"}
    assert spans[_written(name)].attributes["step"] == 1
    assert [e.name for e in spans[_written(name)].events] == [_written(event)]
    assert exporter.dropped == 0
    assert exporter.names_replaced == 2
    said = [r for r in caplog.records if "lone surrogate" in r.getMessage()]
    assert len(said) == 1, [r.getMessage() for r in caplog.records]
