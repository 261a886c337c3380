"""A protobuf record whose span ids no span has costs that record only; metrics still stop.

Metrics share field numbers with traces, so a metrics request parses as a
traces one whose "spans" have ids of odd lengths, and a file holds one signal:
reading stops there.  But any record whose ids are odd was taken for metrics,
so one span crafted with a 17-byte trace id at the head of a dump hid every
good run after it.  The class: a real recording's request (the order-support
example) with the trace id, the span id or both of one or more spans given any
other length, at any place among good requests, read by the reader behind
``ls``/``show``/``load`` and by the one behind ``convert``; and, against it, real
metrics requests (the SDK's own metrics, encoded by the OTLP exporter's encoder)
of every instrument kind: a dump of them is named so at its first record and
read no further (a gauge or a histogram was a "corrupt record" each), one
planted after a first record of spans costs itself only.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.metrics_encoder import encode_metrics
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from otel_replay.cli.main import cli
from otel_replay.export.convert import MessageReader
from otel_replay.otlp.errors import OtherSignal
from otel_replay.otlp.sniff import iter_records
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT

EXAMPLE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
(SEED,) = [body for _, body in iter_records(EXAMPLE)]


def _good(n: int) -> bytes:
    """The example with a trace id of its own (``n`` in every byte)."""
    request = ExportTraceServiceRequest.FromString(SEED)
    for rs in request.resource_spans:
        for ss in rs.scope_spans:
            for span in ss.spans:
                span.trace_id = bytes([n]) * 16
    return request.SerializeToString()


def _metrics(kinds: list[str]) -> bytes:
    """A metrics request the SDK makes, with an instrument of each of ``kinds``."""
    reader = InMemoryMetricReader()
    meter = MeterProvider(metric_readers=[reader]).get_meter("m")
    for i, kind in enumerate(kinds):
        if kind == "counter":
            meter.create_counter(f"c{i}").add(3, {"k": "v"})
        elif kind == "updown":
            meter.create_up_down_counter(f"u{i}").add(-2)
        elif kind == "histogram":
            meter.create_histogram(f"h{i}").record(1.5)
        else:
            meter.create_gauge(f"g{i}").set(7)
    data = reader.get_metrics_data()
    assert data is not None
    return encode_metrics(data).SerializeToString()


def _framed(bodies: list[bytes]) -> tuple[bytes, list[int]]:
    out, offsets = b"", []
    for body in bodies:
        offsets.append(len(out))
        out += struct.pack(">I", len(body)) + body
    return out, offsets


_ODD_TRACE = st.integers(1, 40).filter(lambda n: n != 16)
_ODD_SPAN = st.integers(1, 20).filter(lambda n: n != 8)


@st.composite
def _crafted(draw: st.DrawFn) -> bytes:
    request = ExportTraceServiceRequest.FromString(SEED)
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    for span in draw(st.lists(st.sampled_from(spans), min_size=1, max_size=len(spans))):
        which = draw(st.sampled_from(["trace", "span", "both"]))
        if which in ("trace", "both"):
            span.trace_id = bytes(range(draw(_ODD_TRACE)))
        if which in ("span", "both"):
            span.span_id = b"\x07" * draw(_ODD_SPAN)
    return request.SerializeToString()


def _read(path: Path) -> tuple[set[str], list[Any], list[Any]]:
    reader = SpanReader(path)
    traces = {r.trace_id for r in reader}
    messages = MessageReader(path)
    requests = list(messages)
    return traces, reader.problems + messages.problems, requests


_KINDS = st.lists(st.sampled_from(["counter", "updown", "histogram", "gauge"]), min_size=1)


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    planted=st.tuples(st.just("span"), _crafted()) | st.tuples(st.just("metrics"), _KINDS),
    good=st.integers(1, 3),
    at=st.integers(0, 3),
)
def test_a_record_with_odd_span_ids_costs_only_itself(
    tmp_path_factory: pytest.TempPathFactory, planted: tuple[str, Any], good: int, at: int
) -> None:
    """A crafted span anywhere, or a metrics request planted after the first record."""
    kind, bad = planted
    bodies = [_good(n) for n in range(1, good + 1)]
    at = min(at, len(bodies))
    if kind == "metrics":  # first, it says what the file holds: the next test
        at, bad = max(at, 1), _metrics(bad)
    bodies.insert(at, bad)
    data, offsets = _framed(bodies)
    path = tmp_path_factory.mktemp("ids") / "dump.otlp"
    path.write_bytes(data)
    traces, problems, requests = _read(path)
    assert {bytes([n]).hex() * 16 for n in range(1, good + 1)} <= traces
    assert len(requests) == good
    assert problems and all(not isinstance(p, OtherSignal) for p in problems)
    assert {p.offset for p in problems} == {offsets[at]}
    listed = CliRunner().invoke(cli, ["ls", "--no-cache", str(path)])
    for n in range(1, good + 1):
        assert bytes([n]).hex() * 8 in listed.stdout, listed.output


@settings(max_examples=10, deadline=None, suppress_health_check=list(HealthCheck))
@given(kinds=_KINDS)
def test_a_metrics_dump_is_still_named_so_and_read_no_further(
    tmp_path_factory: pytest.TempPathFactory, kinds: list[str]
) -> None:
    data, _ = _framed([_metrics(kinds), _metrics(kinds[::-1])])
    path = tmp_path_factory.mktemp("metrics") / "metrics.otlp"
    path.write_bytes(data)
    _, problems, requests = _read(path)
    assert requests == []
    assert len(problems) == 2  # one for each reader: the first record, then no more
    assert all(isinstance(p, OtherSignal) and p.offset == 0 for p in problems), problems
