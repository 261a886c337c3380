"""Spans into ClickHouse as the Collector's clickhouseexporter writes them.

The tables are the exporter's own (``tests/data/clickhouse``, sources in its
README); each span becomes the row ``pushTraceData`` appends, every attribute
value rendered as pdata's ``Value.AsString`` renders it (lists and maps
through Go's ``encoding/json``).  Filled in embedded ClickHouse (chdb), a
database directory that ``chdb:///DIR?database=otel`` then reads.
"""

from __future__ import annotations

import base64
import decimal
import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Literal

from otel_replay.otlp.records import LogRecord, Record, SpanRecord

DDL = Path(__file__).parent / "data" / "clickhouse"
#: The exporter's tables: as of v0.154.0, before 2024, and with ``json: true``.
Schema = Literal["current", "2023", "json"]
_TABLES = {
    "current": "traces_table.sql",
    "2023": "traces_table_2023.sql",
    "json": "traces_table_json.sql",
}
_KINDS = ["Unspecified", "Internal", "Server", "Client", "Producer", "Consumer"]
_STATUS = ["Unset", "Ok", "Error"]


class _NotFinite(ValueError):
    pass


def go_float(f: float) -> str:
    """A double as Go's ``encoding/json`` (and pdata's ``float64AsString``) writes it."""
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    if 1e-6 <= abs(f) < 1e21:
        text = format(decimal.Decimal(repr(f)), "f")
        return text[:-2] if text.endswith(".0") else text
    mantissa, exponent = repr(f).split("e")
    sign, digits = exponent[0], exponent[1:].lstrip("0")
    return f"{mantissa}e{sign}{digits}"


def _go_string(text: str) -> str:
    out = ['"']
    for ch in text:
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ch < " " or ch in "<>&\u2028\u2029":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(value: Any) -> str:
    """``json.Marshal(value.AsRaw())``: keys sorted, compact, bytes in base64."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise _NotFinite
        return go_float(value)
    if isinstance(value, (bytes, bytearray)):
        return _go_string(base64.b64encode(value).decode())
    if isinstance(value, str):
        return _go_string(value)
    if isinstance(value, list):
        return "[" + ",".join(go_json(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{_go_string(k)}:{go_json(value[k])}" for k in sorted(value)) + "}"
    raise TypeError(type(value))


def as_string(value: Any) -> str:
    """pdata's ``Value.AsString``: a string as it is, bytes in base64, a non-finite double
    as Go's error text, anything else as JSON (an empty string where JSON has no NaN)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        return f"json: unsupported value: {shown}"
    try:
        return go_json(value)
    except _NotFinite:
        return ""  # json.Marshal failed: the exporter keeps the empty string


def _attributes(values: dict[str, Any], schema: Schema) -> Any:
    if schema == "json":
        return json.loads(go_json({k: v for k, v in values.items()}))
    return {k: as_string(v) for k, v in sorted(values.items())}


def _keys(values: dict[str, Any], prefix: str = "") -> list[str]:
    """``UniqueFlattenedAttributes``: the sorted dotted paths of the leaves."""
    out: set[str] = set()
    for k, v in values.items():
        if isinstance(v, dict) and v:
            out.update(_keys(v, f"{prefix}{k}."))
        else:
            out.add(f"{prefix}{k}")
    return sorted(out)


def _time(ns: int) -> str:
    return f"{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}"


def row(span: SpanRecord, schema: Schema = "current") -> dict[str, Any]:
    """The row the exporter appends for ``span``."""
    attributes = dict(span.attributes)
    if schema == "2023":  # the scope went into the span's attributes then
        if span.scope_name:
            attributes["otel.scope.name"] = span.scope_name
        if span.scope_version:
            attributes["otel.scope.version"] = span.scope_version
    service = span.resource.get("service.name")
    out: dict[str, Any] = {
        "Timestamp": _time(span.start_ns),
        "TraceId": span.trace_id,
        "SpanId": span.span_id,
        "ParentSpanId": span.parent_span_id or "",
        "TraceState": "",
        "SpanName": span.name,
        "SpanKind": _KINDS[span.kind],
        "ServiceName": "" if service is None else as_string(service),
        "ResourceAttributes": _attributes(span.resource, schema),
        "SpanAttributes": _attributes(attributes, schema),
        "Duration": span.end_ns - span.start_ns,
        "StatusCode": _STATUS[span.status_code],
        "StatusMessage": span.status_message,
        "Events.Timestamp": [_time(e.time_ns) for e in span.events],
        "Events.Name": [e.name for e in span.events],
        "Events.Attributes": [_attributes(e.attributes, schema) for e in span.events],
        "Links.TraceId": [link.trace_id for link in span.links],
        "Links.SpanId": [link.span_id for link in span.links],
        "Links.TraceState": ["" for _ in span.links],
        "Links.Attributes": [_attributes(link.attributes, schema) for link in span.links],
    }
    if schema == "2023":
        out["SpanKind"] = f"SPAN_KIND_{_KINDS[span.kind].upper()}"
        out["StatusCode"] = f"STATUS_CODE_{_STATUS[span.status_code].upper()}"
    else:
        out["ScopeName"] = span.scope_name
        out["ScopeVersion"] = span.scope_version
    if schema == "json":
        out["ResourceAttributesKeys"] = _keys(span.resource)
        out["SpanAttributesKeys"] = _keys(span.attributes)
    return out


def log_row(record: LogRecord) -> dict[str, Any]:
    """The row the exporter's logs pipeline appends for ``record``."""
    service = record.resource.get("service.name")
    return {
        "Timestamp": _time(record.time_ns),
        "TraceId": record.trace_id,
        "SpanId": record.span_id,
        "TraceFlags": 1,
        "SeverityText": record.severity_text,
        "SeverityNumber": record.severity_number,
        "ServiceName": "" if service is None else as_string(service),
        "Body": as_string(record.body),
        "ResourceSchemaUrl": "",
        "ResourceAttributes": _attributes(record.resource, "current"),
        "ScopeSchemaUrl": "",
        "ScopeName": record.scope_name,
        "ScopeVersion": record.scope_version,
        "ScopeAttributes": {},
        "LogAttributes": _attributes(record.attributes, "current"),
        "EventName": record.event_name,
    }


def create(directory: Path, schema: Schema = "current") -> Any:
    """An embedded ClickHouse in ``directory`` with the exporter's tables (a chdb session)."""
    from chdb import session

    held = session.Session(str(directory))
    held.query('CREATE DATABASE IF NOT EXISTS "otel"')
    held.query((DDL / _TABLES[schema]).read_text())
    if schema != "2023":
        held.query((DDL / "traces_id_ts_table.sql").read_text())
        held.query((DDL / "traces_id_ts_mv.sql").read_text())
    held.query((DDL / "logs_table.sql").read_text())
    return held


def insert(held: Any, records: Iterable[Record], schema: Schema = "current") -> int:
    """Insert ``records`` (spans, and log records) as the exporter does; the spans inserted."""
    spans, logs = [], []
    for r in records:
        if isinstance(r, SpanRecord):
            spans.append(json.dumps(row(r, schema)))
        else:
            logs.append(json.dumps(log_row(r)))
    for table, rows in (("otel_traces", spans), ("otel_logs", logs)):
        for start in range(0, len(rows), 5000):
            held.query(
                f"INSERT INTO otel.{table} FORMAT JSONEachRow\n"
                + "\n".join(rows[start : start + 5000])
            )
    return len(spans)


def fill(directory: Path, records: Iterable[Record], schema: Schema = "current") -> str:
    """A database directory holding ``records`` as the exporter writes them; its chdb name."""
    held = create(directory, schema)
    try:
        insert(held, records, schema)
    finally:
        held.close()
    return f"chdb://{directory}?database=otel"
