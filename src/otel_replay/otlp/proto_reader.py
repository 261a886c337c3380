"""A serialized OTLP ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest`` -> records."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final, NamedTuple, TypeAlias

from google.protobuf import unknown_fields
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

from .errors import FormatError, OtherSignal
from .records import EventRecord, LinkRecord, LogRecord, Record, SpanRecord, values

Request: TypeAlias = "ExportTraceServiceRequest | ExportLogsServiceRequest"
#: The attribute older SDKs named an event by, before log records had ``event_name``.
EVENT_NAME_ATTRIBUTE = "event.name"


def any_value(v: Any) -> Any:
    """OTLP ``AnyValue`` to a Python value."""
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "int_value":
        return v.int_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "double_value":
        return v.double_value
    if kind == "bytes_value":
        return bytes(v.bytes_value)
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return None


#: Text values this short are kept once per request (operations, type tags, models
#: and tool names repeat on every span); longer ones are mostly unique.
_SHORT: Final = 32


def attributes(kvs: Any, shared: dict[str, str] | None = None) -> dict[str, Any]:
    """OTLP attributes to a dict; names and short text values are taken from ``shared``
    when met there before (one copy of each in memory: a third of what spans hold)."""
    if shared is None:
        shared = {}
    out = {}
    for kv in kvs:
        key, v = kv.key, kv.value
        key = shared.setdefault(key, key)
        # Most values are strings: read them without a call (a third of reading a span).
        if v.WhichOneof("value") == "string_value":
            text = v.string_value
            out[key] = shared.setdefault(text, text) if len(text) <= _SHORT else text
        else:
            out[key] = any_value(v)
    return out


def _decoded(name: str) -> Any:
    """A field of :class:`_ProtoSpan` that its span's bytes are decoded for when first read."""

    def get(record: _ProtoSpan) -> Any:
        return getattr(record.plain(), name)

    def put(record: _ProtoSpan, value: Any) -> None:
        setattr(record.plain(), name, value)

    return property(get, put)


class _ProtoSpan(SpanRecord):
    """A span read from protobuf that keeps its bytes and decodes them when a field other
    than its ids, times, resource and scope is first read.

    Loading runs whose steps wait to be built (see
    :class:`~otel_replay.runs.model.PendingRun`) then holds about the bytes of
    their spans, not a dict per span; the parsed request is freed at once.
    """

    __slots__ = ("_plain", "_span", "_where")
    _span: bytes | None
    _where: _Where | None
    _plain: SpanRecord | None

    parent_span_id = _decoded("parent_span_id")
    name = _decoded("name")
    kind = _decoded("kind")
    attributes = _decoded("attributes")
    events = _decoded("events")
    status_code = _decoded("status_code")
    status_message = _decoded("status_message")
    links = _decoded("links")

    def __new__(cls, *args: Any, **kwargs: Any) -> SpanRecord:  # type: ignore[misc]
        # Made from fields (dataclasses.replace), it is a plain record.
        return SpanRecord(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return (SpanRecord, values(self.plain()))

    @classmethod
    def of(cls, s: Any, ids: tuple[str, str], where: _Where) -> _ProtoSpan:
        record = object.__new__(cls)
        record._span, record._where, record._plain = s.SerializeToString(), where, None
        record.trace_id, record.span_id = ids
        record.start_ns, record.end_ns = s.start_time_unix_nano, s.end_time_unix_nano
        record.resource = where.resource
        record.scope_name, record.scope_version = where.scope_name, where.scope_version
        record.source, record.notes = where.source, ()
        return record

    def plain(self) -> SpanRecord:
        plain = self._plain
        if plain is None:
            data, where = self._span, self._where
            if data is None or where is None:  # decoded by another thread meanwhile
                assert self._plain is not None
                return self._plain
            plain = _record(Span.FromString(data), (self.trace_id, self.span_id), where)
            # The record first, then the bytes let go of: a thread that finds no bytes
            # finds the record.
            self._plain = plain
            self._span = self._where = None
        return plain


class _Where(NamedTuple):
    """What the spans of one scope share: the request's shared texts (see
    :func:`attributes`), resource, scope and source file."""

    shared: dict[str, str]
    resource: dict[str, Any]
    scope_name: str
    scope_version: str
    source: str


def _record(s: Any, ids: tuple[str, str], where: _Where) -> SpanRecord:
    """The record of span ``s`` (its hex ids given), every field decoded."""
    shared = where.shared
    status, events, links = s.status, s.events, s.links
    # In field order, not by keyword: a keyword call costs three times as much.
    return SpanRecord(
        *ids,
        s.parent_span_id.hex() or None,
        s.name,
        s.kind,
        s.start_time_unix_nano,
        s.end_time_unix_nano,
        attributes(s.attributes, shared),
        [EventRecord(e.name, e.time_unix_nano, attributes(e.attributes, shared)) for e in events]
        if events
        else [],
        status.code,
        status.message,
        where.resource,
        where.scope_name,
        where.scope_version,
        where.source,
        [LinkRecord(lk.trace_id.hex(), lk.span_id.hex(), attributes(lk.attributes)) for lk in links]
        if links
        else [],
    )


def _spans(
    request: ExportTraceServiceRequest,
    source: str,
    offset: int,
    keep: Callable[[str], bool] | None,
    lazy: bool,
) -> Iterator[SpanRecord]:
    make = _ProtoSpan.of if lazy else _record
    shared: dict[str, str] = {}
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            where = _Where(shared, resource, ss.scope.name, ss.scope.version, source)
            for s in ss.spans:
                tid, sid = s.trace_id, s.span_id
                if len(tid) not in (0, 16) or len(sid) not in (0, 8):
                    raise bad_ids(request, source, offset)
                trace_id = tid.hex()
                if keep is not None and not keep(trace_id):
                    continue
                yield make(s, (trace_id, sid.hex()), where)


def bad_ids(request: Request, source: str, offset: int) -> FormatError:
    """The fault of a request holding a span id of a length no span has.

    Metrics share field numbers with traces and parse as spans "fine": the ids
    give them away.  A file holds one signal, so a first record that is metrics
    (:func:`_metrics`) is :class:`OtherSignal` and reading stops.  Anything else
    is this record's own fault: a span crafted with a 17-byte trace id, or a
    metrics request planted among traces, costs that record only, not every
    record after it.
    """
    if offset == 0 and _metrics(request.SerializeToString()):
        return OtherSignal(source, offset, "not OTLP trace or log data (metrics?): bad span ids")
    return FormatError(source, offset, "bad span ids (no span has ids of those lengths)")


def _metrics(body: bytes) -> bool:
    """Whether ``body`` reads as an OTLP metrics request whole: a metric at least, and no
    field left over (a span read as a metric leaves its kind and times over)."""
    # lazy: only a file of this kind needs these messages
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
        ExportMetricsServiceRequest,
    )

    try:
        metrics = ExportMetricsServiceRequest.FromString(body)
    except DecodeError:
        return False
    if not any(sm.metrics for rm in metrics.resource_metrics for sm in rm.scope_metrics):
        return False
    size: int = metrics.ByteSize()
    metrics.DiscardUnknownFields()
    left: int = metrics.ByteSize()
    return left == size


def _first(groups: Any, scopes: str, items: str) -> Any:
    """The first span or log record of a request, or None."""
    for group in groups:
        for scope in getattr(group, scopes):
            for item in getattr(scope, items):
                return item
    return None


#: A span's field numbers: read as a log record, a span leaves some of them unknown
#: (their wire types differ), while a log record's own unknown fields (a newer OTLP's,
#: anyone's extensions) are numbered past them.
_SPAN_FIELDS: Final = frozenset(f.number for f in Span.DESCRIPTOR.fields)


def parse_request(body: bytes, source: str, offset: int) -> Request:
    """One serialized request of the traces or the logs signal, told apart by its first record.

    The two share field numbers down to the record, so each parses the other's
    bytes (or fails on them).  A span read from a log record never has a
    16-byte trace id (field 1 of a log record is a fixed64 timestamp); a log
    record read from a span has span fields of the wrong wire type, left unknown.
    """
    traces: ExportTraceServiceRequest | None = None
    try:
        traces = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        error = exc
    else:
        span = _first(traces.resource_spans, "scope_spans", "spans")
        if span is None or len(span.trace_id) == 16:
            return traces
    try:
        logs: ExportLogsServiceRequest = ExportLogsServiceRequest.FromString(body)
    except DecodeError:
        pass
    else:
        record = _first(logs.resource_logs, "scope_logs", "log_records")
        if (
            record is not None
            and len(record.trace_id) in (0, 16)
            and len(record.span_id) in (0, 8)
            and not any(
                f.field_number in _SPAN_FIELDS for f in unknown_fields.UnknownFieldSet(record)
            )
        ):
            return logs
    if traces is None:
        if offset == 0 and _metrics(body):  # a gauge or a histogram: not even spans
            raise OtherSignal(source, offset, "not OTLP trace or log data: OTLP metrics")
        raise FormatError(source, offset, f"corrupt record ({error})") from error
    return traces


def trace_ids(request: Request) -> set[bytes]:
    """The (16-byte) trace ids of the spans or log records in ``request``."""
    if isinstance(request, ExportLogsServiceRequest):
        items = (r for rl in request.resource_logs for sl in rl.scope_logs for r in sl.log_records)
    else:
        items = (s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans)
    return {item.trace_id for item in items if len(item.trace_id) == 16}


def spanless_logs(request: Request) -> int:
    """How many log records of ``request`` name no (8-byte) span id."""
    if not isinstance(request, ExportLogsServiceRequest):
        return 0
    return sum(
        len(r.span_id) != 8
        for rl in request.resource_logs
        for sl in rl.scope_logs
        for r in sl.log_records
    )


def records_from_proto(
    body: bytes,
    source: str,
    offset: int,
    keep: Callable[[str], bool] | None = None,
    *,
    lazy: bool = False,
) -> Iterator[Record]:
    """Decode one request of either signal (see :func:`parse_request`).

    ``lazy``: spans keep their bytes and decode them when a field past their ids,
    times, resource and scope is first read (for spans that may never be read).
    """
    request = parse_request(body, source, offset)
    if isinstance(request, ExportLogsServiceRequest):
        return _logs(request, source, offset, keep)
    return _spans(request, source, offset, keep, lazy)


def _logs(
    request: ExportLogsServiceRequest,
    source: str,
    offset: int,
    keep: Callable[[str], bool] | None,
) -> Iterator[LogRecord]:
    for rl in request.resource_logs:
        resource = attributes(rl.resource.attributes)
        for sl in rl.scope_logs:
            scope_name, scope_version = sl.scope.name, sl.scope.version
            for r in sl.log_records:
                if len(r.trace_id) not in (0, 16) or len(r.span_id) not in (0, 8):
                    raise FormatError(source, offset, "bad trace or span id in a log record")
                trace_id = r.trace_id.hex()
                if keep is not None and not keep(trace_id):
                    continue
                attrs = attributes(r.attributes)
                name = r.event_name or attrs.get(EVENT_NAME_ATTRIBUTE)
                yield LogRecord(
                    trace_id=trace_id,
                    span_id=r.span_id.hex(),
                    time_ns=r.time_unix_nano or r.observed_time_unix_nano,
                    event_name=name if isinstance(name, str) else "",
                    body=any_value(r.body),
                    attributes=attrs,
                    severity_number=r.severity_number,
                    severity_text=r.severity_text,
                    resource=resource,
                    scope_name=scope_name,
                    scope_version=scope_version,
                    source=source,
                )
