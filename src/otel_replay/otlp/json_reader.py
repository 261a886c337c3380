"""OTLP/JSON -> span and log records, read by hand.

``google.protobuf.json_format`` would read OTLP/JSON's hex ids as base64 and
silently produce wrong ids, so the mapping is done here: ids are hex (any
case) or base64 (as protobuf's own JSON mapping writes them: Tempo), enums
integers or names, int64 strings or numbers, bytes base64; unknown fields
are ignored.  The answers of trace backends are unwrapped first (see
:func:`unwrapped`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any, Final, TypeGuard

from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber

from ..bytes_text import from_base64
from ..limits import MAX_NESTING
from .envelopes import EmptyAnswer
from .envelopes import unwrapped as _backend_unwrapped
from .records import EventRecord, LinkRecord, LogRecord, Record, SpanRecord

_KINDS = {
    "SPAN_KIND_UNSPECIFIED": 0,
    "SPAN_KIND_INTERNAL": 1,
    "SPAN_KIND_SERVER": 2,
    "SPAN_KIND_CLIENT": 3,
    "SPAN_KIND_PRODUCER": 4,
    "SPAN_KIND_CONSUMER": 5,
}
_STATUS = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
_SEVERITIES = dict(SeverityNumber.items())
#: The attribute older SDKs named an event by, before log records had ``eventName``.
EVENT_NAME_ATTRIBUTE = "event.name"


class JsonShapeError(ValueError):
    """Valid JSON, but not OTLP trace or log data (the message says why)."""


class OtherSignalError(JsonShapeError):
    """OTLP data of a signal the reader does not take (metrics, profiles...)."""


class NotOtlpError(JsonShapeError):
    """JSON that is no OTLP request at all (no ``resourceSpans``, ``resourceLogs``...):
    another program's JSON, where a bad OTLP request would be a :class:`JsonShapeError`."""


def _id(value: Any, size: int, what: str) -> str:
    """An id as lower-case hex: OTLP/JSON writes hex; Tempo's answers (protobuf's own JSON
    mapping) write base64, a length hex never has."""
    if value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise JsonShapeError(f"{what} is not a hex string")
    stripped = value.strip()
    if len(stripped) == _BASE64_LENGTH.get(size):
        raw = from_base64(stripped)
        if raw is not None and len(raw) == size:
            return raw.hex()
    text = stripped.lower()
    if len(text) != size * 2:
        raise JsonShapeError(f"{what} {value!r} is not {size * 2} hex digits")
    try:
        bytes.fromhex(text)
    except ValueError:
        raise JsonShapeError(f"{what} {value!r} is not hex") from None
    return text


#: Characters of a padded base64 id, by its size in bytes.
_BASE64_LENGTH: Final = {16: 24, 8: 12}

#: The ranges of OTLP's integer fields: times are fixed64, an ``intValue`` int64, enums
#: and counts 32 bits.  A value past them is no time or number a writer could have meant.
U64: Final = (0, 2**64 - 1)
I64: Final = (-(2**63), 2**63 - 1)
I32: Final = (-(2**31), 2**31 - 1)


def shown(value: Any) -> str:
    """``value`` as an error message shows it: its repr, cut short (a value may be a
    megabyte, or a whole nested structure)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _int(value: Any, what: str, bounds: tuple[int, int] = I64) -> int:
    """An integer field (a JSON number, or a string of digits as int64s are written)
    within ``bounds``; a float only when whole (``1e3``), never NaN or infinite."""
    if value is None:
        return 0
    if type(value) is str:  # as int64s are written: the commonest, first
        try:
            number = int(value)
        except ValueError:
            raise JsonShapeError(f"{what} {shown(value)} is not an integer") from None
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    else:
        raise JsonShapeError(f"{what} {shown(value)} is not an integer")
    low, high = bounds
    if not low <= number <= high:
        raise JsonShapeError(f"{what} {shown(value)} is out of range")
    return number


def _enum(value: Any, names: Mapping[str, int], what: str) -> int:
    if isinstance(value, str) and not value.strip().lstrip("-").isdigit():
        if value not in names:
            raise JsonShapeError(f"unknown {what} {shown(value)}")
        return names[value]
    return _int(value, what, I32)


def deeper(depth: int) -> int:
    """``depth + 1``, for the values inside a list or map at ``depth``; bounded by
    :data:`~.limits.MAX_NESTING`."""
    if depth >= MAX_NESTING:
        raise JsonShapeError(f"attribute value nested deeper than {MAX_NESTING} levels")
    return depth + 1


def _double(value: Any) -> float:
    """A ``doubleValue``: a number, or a string of one ("NaN", "Infinity" as JSON spells them)."""
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        try:
            return float(value)
        except (ValueError, OverflowError):
            pass
    raise JsonShapeError(f"doubleValue {shown(value)} is not a number")


def any_value(v: Any, depth: int = 0) -> Any:
    """OTLP/JSON ``AnyValue`` to a Python value (``depth``: lists and maps around it).

    A value of the wrong type for its field (``{"stringValue": 5}``, an ``arrayValue``
    that is a list) raises :class:`JsonShapeError`: the record is not OTLP.
    """
    if not _is_object(v):
        return None  # no value at all: OTLP's empty AnyValue
    if "stringValue" in v:
        return _text(v["stringValue"], "stringValue")
    if "boolValue" in v:
        value = v["boolValue"]
        if not isinstance(value, bool):
            raise JsonShapeError(f"boolValue {shown(value)} is not true or false")
        return value
    if "intValue" in v:
        return _int(v["intValue"], "intValue")
    if "doubleValue" in v:
        return _double(v["doubleValue"])
    if "bytesValue" in v:
        try:
            return base64.b64decode(v["bytesValue"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise JsonShapeError("bytesValue is not base64") from None
    if "arrayValue" in v:
        inner = deeper(depth)
        values = _list(_object(v["arrayValue"], "arrayValue").get("values"), "arrayValue values")
        return [any_value(x, inner) for x in values]
    if "kvlistValue" in v:
        return attributes(_object(v["kvlistValue"], "kvlistValue").get("values"), deeper(depth))
    return None


def attributes(kvs: Any, depth: int = 0) -> dict[str, Any]:
    """OTLP/JSON ``KeyValue``s to a dict; a key that is not text raises :class:`JsonShapeError`."""
    out: dict[str, Any] = {}
    for kv in _list(kvs, "attributes"):
        if not _is_object(kv):
            raise JsonShapeError("attributes is not a list of objects")
        key = kv.get("key", "")
        if not isinstance(key, str):
            raise JsonShapeError(f"attribute key {shown(key)} is not a string")
        value = kv.get("value")
        # Most values are text: read without a call (a fifth of reading a span).
        text = value.get("stringValue") if type(value) is dict and len(value) == 1 else None
        out[key] = text if type(text) is str else any_value(value, depth)
    return out


def _field(d: Mapping[str, Any], camel: str, snake: str) -> Any:
    """A field by its JSON name or its proto name (pdata reads both)."""
    value = d.get(camel)
    return d.get(snake) if value is None else value


def _is_object(value: Any) -> TypeGuard[Mapping[str, Any]]:
    # Parsed JSON's objects are dicts: told without asking the Mapping ABC (a third slower).
    return type(value) is dict or isinstance(value, Mapping)


def _objects(value: Any, what: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(map(_is_object, value)):
        raise JsonShapeError(f"{what} is not a list of objects")
    return value


def _list(value: Any, what: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise JsonShapeError(f"{what} is not a list")
    return value


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not _is_object(value):
        raise JsonShapeError(f"{what} is not an object")
    return value


def _text(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise JsonShapeError(f"{what} is not a string")
    return value


_SIGNALS = {
    "resourceSpans": "traces",
    "resourceLogs": "logs",
    "resourceMetrics": "metrics",
    "resourceProfiles": "profiles",
}


def _signal(doc: Any, wanted: tuple[str, ...]) -> str:
    """Which of the ``wanted`` top-level keys (``resourceSpans``...) the request holds."""
    if not isinstance(doc, Mapping):
        raise NotOtlpError("not a JSON object")
    for key in wanted:
        if key in doc:
            return key
    other = next((k for k in _SIGNALS if k in doc), None)
    if other:
        names = " or ".join(_SIGNALS[k] for k in wanted)
        raise OtherSignalError(f"OTLP {_SIGNALS[other]} data, not {names}")
    raise NotOtlpError(f"no {' or '.join(wanted)} in this JSON")


def unwrapped(doc: Any) -> Any:
    """:func:`~.backends.unwrapped`, an answer with no trace a :class:`JsonShapeError`."""
    try:
        return _backend_unwrapped(doc)
    except EmptyAnswer as exc:
        raise JsonShapeError(str(exc)) from None


def records_from_json(doc: Any, source: str) -> Iterator[Record]:
    """Records of one OTLP/JSON request (or ``TracesData`` / ``LogsData``) of either signal,
    or of a trace backend's answer wrapping one (see :func:`unwrapped`)."""
    doc = unwrapped(doc)
    if isinstance(doc, Mapping) and "resource_spans" in doc:
        return spans_from_json(doc, source)
    if _signal(doc, ("resourceSpans", "resourceLogs")) == "resourceLogs":
        return _logs(doc, source)
    return spans_from_json(doc, source)


def _logs(doc: Mapping[str, Any], source: str) -> Iterator[LogRecord]:
    for rl in _objects(doc.get("resourceLogs"), "resourceLogs"):
        resource = attributes(_object(rl.get("resource"), "resource").get("attributes"))
        for sl in _objects(rl.get("scopeLogs"), "scopeLogs"):
            scope = _object(sl.get("scope"), "scope")
            for r in _objects(sl.get("logRecords"), "logRecords"):
                attrs = attributes(r.get("attributes"))
                name = r.get("eventName") or attrs.get(EVENT_NAME_ATTRIBUTE)
                yield LogRecord(
                    trace_id=_id(r.get("traceId"), 16, "traceId"),
                    span_id=_id(r.get("spanId"), 8, "spanId"),
                    time_ns=_int(r.get("timeUnixNano"), "timeUnixNano", U64)
                    or _int(r.get("observedTimeUnixNano"), "observedTimeUnixNano", U64),
                    event_name=name if isinstance(name, str) else "",
                    body=any_value(r.get("body")),
                    attributes=attrs,
                    severity_number=_enum(
                        r.get("severityNumber", 0), _SEVERITIES, "severity number"
                    ),
                    severity_text=_text(r.get("severityText"), "severityText"),
                    resource=resource,
                    scope_name=_text(scope.get("name"), "scope name"),
                    scope_version=_text(scope.get("version"), "scope version"),
                    source=source,
                )


def spans_from_json(doc: Any, source: str) -> Iterator[SpanRecord]:
    """Spans of one OTLP/JSON ``ExportTraceServiceRequest`` / ``TracesData`` object (or a
    trace backend's answer wrapping one: see :func:`unwrapped`).

    A field of the wrong type (a list where an object goes, a key that is a number,
    a time past 64 bits) raises :class:`JsonShapeError`: the request is not OTLP.
    """
    doc = unwrapped(doc)
    if not (isinstance(doc, Mapping) and "resource_spans" in doc):
        _signal(doc, ("resourceSpans",))
    groups = doc.get("resourceSpans", doc.get("resource_spans"))
    for rs in _objects(groups, "resourceSpans"):
        resource = attributes(_object(rs.get("resource"), "resource").get("attributes"))
        for ss in _objects(
            rs.get("scopeSpans", rs.get("instrumentationLibrarySpans")), "scopeSpans"
        ):
            scope = _object(ss.get("scope", ss.get("instrumentationLibrary")), "scope")
            for s in _objects(ss.get("spans"), "spans"):
                status = _object(s.get("status"), "status")
                yield SpanRecord(
                    trace_id=_id(s.get("traceId"), 16, "traceId"),
                    span_id=_id(s.get("spanId"), 8, "spanId"),
                    parent_span_id=_id(s.get("parentSpanId"), 8, "parentSpanId") or None,
                    name=_text(s.get("name"), "span name"),
                    kind=_enum(s.get("kind", 0), _KINDS, "span kind"),
                    start_ns=_int(s.get("startTimeUnixNano"), "startTimeUnixNano", U64),
                    end_ns=_int(s.get("endTimeUnixNano"), "endTimeUnixNano", U64),
                    attributes=attributes(s.get("attributes")),
                    events=[
                        EventRecord(
                            _text(e.get("name"), "event name"),
                            _int(e.get("timeUnixNano"), "timeUnixNano", U64),
                            attributes(e.get("attributes")),
                        )
                        for e in _objects(s.get("events"), "events")
                    ],
                    status_code=_enum(status.get("code", 0), _STATUS, "status code"),
                    status_message=_text(status.get("message"), "status message"),
                    resource=resource,
                    scope_name=_text(scope.get("name"), "scope name"),
                    scope_version=_text(scope.get("version"), "scope version"),
                    source=source,
                    links=[
                        LinkRecord(
                            _id(lk.get("traceId"), 16, "link traceId"),
                            _id(lk.get("spanId"), 8, "link spanId"),
                            attributes(lk.get("attributes")),
                        )
                        for lk in _objects(s.get("links"), "links")
                    ],
                )


# --- OTLP/JSON -> protobuf requests (everything kept, for converting) -------------------


def _id_bytes(value: Any, size: int, what: str) -> bytes:
    return bytes.fromhex(_id(value, size, what))


def _set_any(target: Any, v: Any, depth: int = 0) -> None:
    """Fill protobuf ``AnyValue`` ``target`` from OTLP/JSON ``v``."""
    if not isinstance(v, Mapping):
        return  # null or not an object: an empty value, as any_value reads it
    for key in ("stringValue", "string_value"):
        if key in v:
            target.string_value = _text(v[key], "stringValue")
            return
    for key in ("boolValue", "bool_value"):
        if key in v:
            target.bool_value = bool(v[key])
            return
    for key in ("intValue", "int_value"):
        if key in v:
            target.int_value = _int(v[key], "intValue")
            return
    for key in ("doubleValue", "double_value"):
        if key in v:
            target.double_value = _double(v[key])
            return
    for key in ("bytesValue", "bytes_value"):
        if key in v:
            target.bytes_value = any_value({"bytesValue": v[key]})
            return
    for key in ("arrayValue", "array_value"):
        if key in v:
            array = target.array_value
            array.SetInParent()
            inner = deeper(depth)
            for x in _field(_object(v[key], "arrayValue"), "values", "values") or []:
                _set_any(array.values.add(), x, inner)
            return
    for key in ("kvlistValue", "kvlist_value"):
        if key in v:
            kvlist = target.kvlist_value
            kvlist.SetInParent()
            values = _field(_object(v[key], "kvlistValue"), "values", "values")
            _set_attributes(kvlist.values, values, deeper(depth))
            return


def _set_attributes(target: Any, kvs: Any, depth: int = 0) -> None:
    for kv in _objects(kvs, "attributes"):
        item = target.add()
        item.key = _text(kv.get("key"), "attribute key")
        _set_any(item.value, kv.get("value"), depth)


def _set_resource(target: Any, doc: Any) -> None:
    d = _object(doc, "resource")
    target.SetInParent()
    _set_attributes(target.attributes, d.get("attributes"))
    target.dropped_attributes_count = _int(
        _field(d, "droppedAttributesCount", "dropped_attributes_count"), "droppedAttributesCount"
    )


def _set_scope(target: Any, doc: Any) -> None:
    d = _object(doc, "scope")
    target.SetInParent()
    target.name = _text(d.get("name"), "scope name")
    target.version = _text(d.get("version"), "scope version")
    _set_attributes(target.attributes, d.get("attributes"))
    target.dropped_attributes_count = _int(
        _field(d, "droppedAttributesCount", "dropped_attributes_count"), "droppedAttributesCount"
    )


def _set_span(sp: Any, s: Mapping[str, Any]) -> None:
    sp.trace_id = _id_bytes(_field(s, "traceId", "trace_id"), 16, "traceId")
    sp.span_id = _id_bytes(_field(s, "spanId", "span_id"), 8, "spanId")
    sp.trace_state = _text(_field(s, "traceState", "trace_state"), "traceState")
    sp.parent_span_id = _id_bytes(_field(s, "parentSpanId", "parent_span_id"), 8, "parentSpanId")
    sp.flags = _int(s.get("flags"), "flags")
    sp.name = _text(s.get("name"), "span name")
    sp.kind = _enum(s.get("kind", 0), _KINDS, "span kind")
    sp.start_time_unix_nano = _int(
        _field(s, "startTimeUnixNano", "start_time_unix_nano"), "startTimeUnixNano", U64
    )
    sp.end_time_unix_nano = _int(
        _field(s, "endTimeUnixNano", "end_time_unix_nano"), "endTimeUnixNano", U64
    )
    _set_attributes(sp.attributes, s.get("attributes"))
    sp.dropped_attributes_count = _int(
        _field(s, "droppedAttributesCount", "dropped_attributes_count"), "droppedAttributesCount"
    )
    for e in _objects(s.get("events"), "events"):
        event = sp.events.add()
        event.time_unix_nano = _int(
            _field(e, "timeUnixNano", "time_unix_nano"), "timeUnixNano", U64
        )
        event.name = _text(e.get("name"), "event name")
        _set_attributes(event.attributes, e.get("attributes"))
        event.dropped_attributes_count = _int(
            _field(e, "droppedAttributesCount", "dropped_attributes_count"),
            "droppedAttributesCount",
        )
    sp.dropped_events_count = _int(
        _field(s, "droppedEventsCount", "dropped_events_count"), "droppedEventsCount"
    )
    for lk in _objects(s.get("links"), "links"):
        link = sp.links.add()
        link.trace_id = _id_bytes(_field(lk, "traceId", "trace_id"), 16, "link traceId")
        link.span_id = _id_bytes(_field(lk, "spanId", "span_id"), 8, "link spanId")
        link.trace_state = _text(_field(lk, "traceState", "trace_state"), "traceState")
        _set_attributes(link.attributes, lk.get("attributes"))
        link.dropped_attributes_count = _int(
            _field(lk, "droppedAttributesCount", "dropped_attributes_count"),
            "droppedAttributesCount",
        )
        link.flags = _int(lk.get("flags"), "flags")
    sp.dropped_links_count = _int(
        _field(s, "droppedLinksCount", "dropped_links_count"), "droppedLinksCount"
    )
    status = _object(s.get("status"), "status")
    sp.status.SetInParent()
    sp.status.message = _text(status.get("message"), "status message")
    sp.status.code = _enum(status.get("code", 0), _STATUS, "status code")


def _set_log(r: Any, d: Mapping[str, Any]) -> None:
    r.time_unix_nano = _int(_field(d, "timeUnixNano", "time_unix_nano"), "timeUnixNano", U64)
    r.observed_time_unix_nano = _int(
        _field(d, "observedTimeUnixNano", "observed_time_unix_nano"), "observedTimeUnixNano", U64
    )
    r.severity_number = _enum(
        _field(d, "severityNumber", "severity_number") or 0, _SEVERITIES, "severity number"
    )
    r.severity_text = _text(_field(d, "severityText", "severity_text"), "severityText")
    r.body.SetInParent()
    _set_any(r.body, d.get("body"))
    _set_attributes(r.attributes, d.get("attributes"))
    r.dropped_attributes_count = _int(
        _field(d, "droppedAttributesCount", "dropped_attributes_count"), "droppedAttributesCount"
    )
    r.flags = _int(d.get("flags"), "flags")
    r.trace_id = _id_bytes(_field(d, "traceId", "trace_id"), 16, "traceId")
    r.span_id = _id_bytes(_field(d, "spanId", "span_id"), 8, "spanId")
    r.event_name = _text(_field(d, "eventName", "event_name"), "eventName")


def request_from_json(doc: Any) -> Any:
    """One OTLP/JSON request (or ``TracesData`` / ``LogsData``) as its protobuf request.

    Unlike the record readers above, nothing is left out: trace state, flags,
    dropped counts, schema URLs and scope attributes are kept, so a request
    converted to protobuf and back writes the same JSON.  The same spellings
    are read (hex ids in any case, enums as numbers or names, 64-bit integers
    as strings or numbers, proto field names, ``instrumentationLibrarySpans``).
    Raises :class:`JsonShapeError` (or :class:`OtherSignalError`).
    """
    # lazy: only a file of this kind needs these messages
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    doc = unwrapped(doc)
    if isinstance(doc, Mapping) and "resource_spans" in doc:
        signal = "resourceSpans"
    elif isinstance(doc, Mapping) and "resource_logs" in doc:
        signal = "resourceLogs"
    else:
        signal = _signal(doc, ("resourceSpans", "resourceLogs"))
    try:
        if signal == "resourceLogs":
            logs = ExportLogsServiceRequest()
            for rl in _objects(_field(doc, "resourceLogs", "resource_logs"), "resourceLogs"):
                group = logs.resource_logs.add()
                _set_resource(group.resource, rl.get("resource"))
                for sl in _objects(_field(rl, "scopeLogs", "scope_logs"), "scopeLogs"):
                    scope = group.scope_logs.add()
                    _set_scope(scope.scope, sl.get("scope"))
                    for r in _objects(_field(sl, "logRecords", "log_records"), "logRecords"):
                        _set_log(scope.log_records.add(), r)
                    scope.schema_url = _text(_field(sl, "schemaUrl", "schema_url"), "schemaUrl")
                group.schema_url = _text(_field(rl, "schemaUrl", "schema_url"), "schemaUrl")
            return logs
        traces = ExportTraceServiceRequest()
        for rs in _objects(_field(doc, "resourceSpans", "resource_spans"), "resourceSpans"):
            group = traces.resource_spans.add()
            _set_resource(group.resource, rs.get("resource"))
            scopes = _field(rs, "scopeSpans", "scope_spans")
            if scopes is None:
                scopes = rs.get("instrumentationLibrarySpans")
            for ss in _objects(scopes, "scopeSpans"):
                scope = group.scope_spans.add()
                _set_scope(scope.scope, ss.get("scope", ss.get("instrumentationLibrary")))
                for s in _objects(ss.get("spans"), "spans"):
                    _set_span(scope.spans.add(), s)
                scope.schema_url = _text(_field(ss, "schemaUrl", "schema_url"), "schemaUrl")
            group.schema_url = _text(_field(rs, "schemaUrl", "schema_url"), "schemaUrl")
        return traces
    except JsonShapeError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:  # a value protobuf will not take
        raise JsonShapeError(f"not OTLP data ({exc})") from None
