"""A serialized OTLP ``ExportTraceServiceRequest`` -> span records."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .errors import FormatError
from .records import EventRecord, LinkRecord, SpanRecord


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


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


def spans_from_proto(
    body: bytes, source: str, offset: int, keep: Callable[[str], bool] | None = None
) -> Iterator[SpanRecord]:
    """Decode one request; a body that is not a trace request is a :class:`FormatError`.

    ``keep`` (trace id -> bool) skips unwanted spans before their attributes are decoded.
    """
    try:
        request = ExportTraceServiceRequest.FromString(body)
    except DecodeError as exc:
        raise FormatError(source, offset, f"corrupt record ({exc})") from exc
    for rs in request.resource_spans:
        resource = attributes(rs.resource.attributes)
        for ss in rs.scope_spans:
            scope_name, scope_version = ss.scope.name, ss.scope.version
            for s in ss.spans:
                if len(s.trace_id) not in (0, 16) or len(s.span_id) not in (0, 8):
                    # Metrics and logs share field numbers with traces and parse
                    # "fine": the ids give them away.
                    raise FormatError(
                        source, offset, "not OTLP trace data (metrics or logs?): bad span ids"
                    )
                trace_id = s.trace_id.hex()
                if keep is not None and not keep(trace_id):
                    continue
                yield SpanRecord(
                    trace_id=trace_id,
                    span_id=s.span_id.hex(),
                    parent_span_id=s.parent_span_id.hex() or None,
                    name=s.name,
                    kind=s.kind,
                    start_ns=s.start_time_unix_nano,
                    end_ns=s.end_time_unix_nano,
                    attributes=attributes(s.attributes),
                    events=[
                        EventRecord(e.name, e.time_unix_nano, attributes(e.attributes))
                        for e in s.events
                    ],
                    status_code=s.status.code,
                    status_message=s.status.message,
                    resource=resource,
                    scope_name=scope_name,
                    scope_version=scope_version,
                    source=source,
                    links=[
                        LinkRecord(lk.trace_id.hex(), lk.span_id.hex(), attributes(lk.attributes))
                        for lk in s.links
                    ],
                )
