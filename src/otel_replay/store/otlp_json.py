"""OTLP/JSON -> span and log records, read by hand.

``google.protobuf.json_format`` would read OTLP/JSON's hex ids as base64 and
silently produce wrong ids, so the mapping is done here: ids are hex (any
case), enums integers or names, int64 strings or numbers, bytes base64;
unknown fields are ignored.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry.proto.logs.v1.logs_pb2 import SeverityNumber

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


def _id(value: Any, size: int, what: str) -> str:
    if value in (None, ""):
        return ""
    if not isinstance(value, str):
        raise JsonShapeError(f"{what} is not a hex string")
    text = value.strip().lower()
    if len(text) != size * 2:
        raise JsonShapeError(f"{what} {value!r} is not {size * 2} hex digits")
    try:
        bytes.fromhex(text)
    except ValueError:
        raise JsonShapeError(f"{what} {value!r} is not hex") from None
    return text


def _int(value: Any, what: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool):
        raise JsonShapeError(f"{what} is not an integer")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise JsonShapeError(f"{what} {value!r} is not an integer") from None


def _enum(value: Any, names: Mapping[str, int], what: str) -> int:
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        if value not in names:
            raise JsonShapeError(f"unknown {what} {value!r}")
        return names[value]
    return _int(value, what)


def any_value(v: Any) -> Any:
    """OTLP/JSON ``AnyValue`` to a Python value."""
    if not isinstance(v, Mapping):
        return None
    if "stringValue" in v:
        return v["stringValue"]
    if "boolValue" in v:
        return bool(v["boolValue"])
    if "intValue" in v:
        return _int(v["intValue"], "intValue")
    if "doubleValue" in v:
        return float(v["doubleValue"])  # a number, or "NaN" / "Infinity" as strings
    if "bytesValue" in v:
        try:
            return base64.b64decode(v["bytesValue"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise JsonShapeError("bytesValue is not base64") from None
    if "arrayValue" in v:
        return [any_value(x) for x in (v["arrayValue"] or {}).get("values", [])]
    if "kvlistValue" in v:
        return attributes((v["kvlistValue"] or {}).get("values", []))
    return None


def attributes(kvs: Any) -> dict[str, Any]:
    if not isinstance(kvs, list):
        return {}
    return {kv.get("key", ""): any_value(kv.get("value")) for kv in kvs if isinstance(kv, Mapping)}


_SIGNALS = {
    "resourceSpans": "traces",
    "resourceLogs": "logs",
    "resourceMetrics": "metrics",
    "resourceProfiles": "profiles",
}


def _signal(doc: Any, wanted: tuple[str, ...]) -> str:
    """Which of the ``wanted`` top-level keys (``resourceSpans``...) the request holds."""
    if not isinstance(doc, Mapping):
        raise JsonShapeError("not a JSON object")
    for key in wanted:
        if key in doc:
            return key
    other = next((k for k in _SIGNALS if k in doc), None)
    if other:
        names = " or ".join(_SIGNALS[k] for k in wanted)
        raise OtherSignalError(f"OTLP {_SIGNALS[other]} data, not {names}")
    raise JsonShapeError(f"no {' or '.join(wanted)} in this JSON")


def records_from_json(doc: Any, source: str) -> Iterator[Record]:
    """Records of one OTLP/JSON request (or ``TracesData`` / ``LogsData``) of either signal."""
    if isinstance(doc, Mapping) and "resource_spans" in doc:
        return spans_from_json(doc, source)
    if _signal(doc, ("resourceSpans", "resourceLogs")) == "resourceLogs":
        return _logs(doc, source)
    return spans_from_json(doc, source)


def _logs(doc: Mapping[str, Any], source: str) -> Iterator[LogRecord]:
    for rl in doc.get("resourceLogs") or []:
        resource = attributes((rl.get("resource") or {}).get("attributes"))
        for sl in rl.get("scopeLogs") or []:
            scope = sl.get("scope") or {}
            for r in sl.get("logRecords") or []:
                attrs = attributes(r.get("attributes"))
                name = r.get("eventName") or attrs.get(EVENT_NAME_ATTRIBUTE)
                yield LogRecord(
                    trace_id=_id(r.get("traceId"), 16, "traceId"),
                    span_id=_id(r.get("spanId"), 8, "spanId"),
                    time_ns=_int(r.get("timeUnixNano"), "timeUnixNano")
                    or _int(r.get("observedTimeUnixNano"), "observedTimeUnixNano"),
                    event_name=name if isinstance(name, str) else "",
                    body=any_value(r.get("body")),
                    attributes=attrs,
                    severity_number=_enum(
                        r.get("severityNumber", 0), _SEVERITIES, "severity number"
                    ),
                    severity_text=str(r.get("severityText", "")),
                    resource=resource,
                    scope_name=str(scope.get("name", "")),
                    scope_version=str(scope.get("version", "")),
                    source=source,
                )


def spans_from_json(doc: Any, source: str) -> Iterator[SpanRecord]:
    """Spans of one OTLP/JSON ``ExportTraceServiceRequest`` / ``TracesData`` object."""
    if not (isinstance(doc, Mapping) and "resource_spans" in doc):
        _signal(doc, ("resourceSpans",))
    for rs in doc.get("resourceSpans", doc.get("resource_spans")) or []:
        resource = attributes((rs.get("resource") or {}).get("attributes"))
        for ss in rs.get("scopeSpans", rs.get("instrumentationLibrarySpans")) or []:
            scope = ss.get("scope", ss.get("instrumentationLibrary")) or {}
            for s in ss.get("spans") or []:
                status = s.get("status") or {}
                yield SpanRecord(
                    trace_id=_id(s.get("traceId"), 16, "traceId"),
                    span_id=_id(s.get("spanId"), 8, "spanId"),
                    parent_span_id=_id(s.get("parentSpanId"), 8, "parentSpanId") or None,
                    name=str(s.get("name", "")),
                    kind=_enum(s.get("kind", 0), _KINDS, "span kind"),
                    start_ns=_int(s.get("startTimeUnixNano"), "startTimeUnixNano"),
                    end_ns=_int(s.get("endTimeUnixNano"), "endTimeUnixNano"),
                    attributes=attributes(s.get("attributes")),
                    events=[
                        EventRecord(
                            str(e.get("name", "")),
                            _int(e.get("timeUnixNano"), "timeUnixNano"),
                            attributes(e.get("attributes")),
                        )
                        for e in s.get("events") or []
                    ],
                    status_code=_enum(status.get("code", 0), _STATUS, "status code"),
                    status_message=str(status.get("message", "")),
                    resource=resource,
                    scope_name=str(scope.get("name", "")),
                    scope_version=str(scope.get("version", "")),
                    source=source,
                    links=[
                        LinkRecord(
                            _id(lk.get("traceId"), 16, "link traceId"),
                            _id(lk.get("spanId"), 8, "link spanId"),
                            attributes(lk.get("attributes")),
                        )
                        for lk in s.get("links") or []
                        if isinstance(lk, Mapping)
                    ],
                )
