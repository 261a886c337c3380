"""Fields a reader does not know never change which signal a request is read as.

A newer OTLP adds fields to its records, and anyone may send extensions: a log
record carrying a field of any number past the span's own must still be read as
a log record (it was refused as "corrupt" when the first record of a request had
one), and a span carrying one must still be read as a span. The class: a field of
every wire type, of any number no span uses, planted on the first or any record of
real requests: the log records of every conformance case that sends them (Google ADK
1.x and 2.x, Semantic Kernel, OpenLLMetry's OpenAI and Anthropic, OpenTelemetry's
OpenAI v2) and both event schemes of ``tests/data/genai_logs``, and the order-support
example's spans.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from otel_replay.otlp.proto_reader import parse_request, records_from_proto
from otel_replay.otlp.records import LogRecord, SpanRecord
from otel_replay.otlp.sniff import iter_records
from tests.fixtures.data import DATA, ROOT, TESTS, found
from tests.fixtures.protobuf import varint

LOGS = [p.read_bytes() for p in found(DATA / "genai_logs", "*/logs.otlp.pb")] + [
    body
    for p in found(TESTS / "conformance" / "cases", "*/*/logs.binpb")
    for _, body in iter_records(p)
]
TRACES = [
    body for _, body in iter_records(ROOT / "examples/order_support/recordings/wrong_order.otlp")
]

_TAKEN = {f.number for f in Span.DESCRIPTOR.fields}
#: Any field number a span does not use (protobuf's reserved range left out).
NUMBERS = st.integers(1, 2**29 - 1).filter(lambda n: n not in _TAKEN and not 19000 <= n < 20000)


@st.composite
def fields(draw: st.DrawFn) -> bytes:
    """One encoded field of a number no span uses, of any wire type."""
    number = draw(NUMBERS)
    kind = draw(st.sampled_from([0, 1, 2, 5]))
    key = varint(number << 3 | kind)
    if kind == 0:
        return key + varint(draw(st.integers(0, 2**64 - 1)))
    if kind == 1:
        return key + draw(st.binary(min_size=8, max_size=8))
    if kind == 5:
        return key + draw(st.binary(min_size=4, max_size=4))
    data = draw(st.binary(max_size=40))
    return key + varint(len(data)) + data


@settings(max_examples=100, deadline=None)
@given(planted=st.lists(fields(), min_size=1, max_size=4), first=st.booleans(), data=st.data())
def test_a_log_record_with_fields_of_a_newer_otlp_is_read_as_a_log_record(
    planted: list[bytes], first: bool, data: st.DataObject
) -> None:
    request = ExportLogsServiceRequest.FromString(data.draw(st.sampled_from(LOGS)))
    records = [r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records]
    where = records[0] if first else data.draw(st.sampled_from(records))
    for field in planted:
        where.MergeFromString(field)
    body = request.SerializeToString()
    assert isinstance(parse_request(body, "logs.pb", 0), ExportLogsServiceRequest)
    read = list(records_from_proto(body, "logs.pb", 0))
    assert len(read) == len(records) and all(isinstance(r, LogRecord) for r in read)


@settings(max_examples=100, deadline=None)
@given(planted=st.lists(fields(), min_size=1, max_size=4), data=st.data())
def test_a_span_with_fields_of_a_newer_otlp_is_read_as_a_span(
    planted: list[bytes], data: st.DataObject
) -> None:
    request = ExportTraceServiceRequest.FromString(data.draw(st.sampled_from(TRACES)))
    spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    where = data.draw(st.sampled_from(spans))
    for field in planted:
        where.MergeFromString(field)
    body = request.SerializeToString()
    assert isinstance(parse_request(body, "spans.pb", 0), ExportTraceServiceRequest)
    read = list(records_from_proto(body, "spans.pb", 0))
    assert len(read) == len(spans) and all(isinstance(r, SpanRecord) for r in read)
