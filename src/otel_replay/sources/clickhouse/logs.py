"""The clickhouseexporter's logs table -> log records (the GenAI events of a run).

The exporter writes one row per log record (``exporter/clickhouseexporter/
exporter_logs.go``): ``Timestamp`` the record's time (its observed time
when it has none), ids in hex, ``Body`` and every attribute value as text
(pdata's ``Value.AsString``: a map body becomes JSON with its keys sorted),
``EventName`` where the table has the column (before, the ``event.name``
attribute named an event).  An event's body, a map by the GenAI
conventions, is read back from that JSON; attributes get their types back
as the spans' do (:mod:`.clickhouse_types`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from ...json_text import loads
from ...otlp.errors import FormatError
from ...otlp.records import LogRecord
from .column_types import column_attributes
from .database import Database, Held, hex_id, table_types, trace_filter

__all__ = ["read_logs"]

#: The columns a logs table must have.
_REQUIRED = ("Timestamp", "TraceId", "SpanId", "Body", "LogAttributes", "ResourceAttributes")


def read_logs(
    db: Database,
    table: str,
    trace_ids: Iterable[str] | Held | None,
    problems: list[FormatError],
) -> Iterator[LogRecord]:
    """The log records of ``table`` (of ``trace_ids`` only, when given, or of the ids
    :func:`.database.send_ids` sent); nothing when
    ``db`` has no such table.  A row that is no record lands in ``problems``."""
    where = db.location
    types = table_types(db, table)
    if not types:
        return
    missing = [c for c in _REQUIRED if c not in types]
    if missing:
        problems.append(
            FormatError.whole(where.name, f"{table} is not the clickhouseexporter's logs table")
        )
        return
    flat = types["LogAttributes"].startswith("JSON")  # the exporter's json: true
    event_name = "EventName" if "EventName" in types else "''"
    severity = "SeverityText, toInt32(SeverityNumber) AS severity,"
    if "SeverityNumber" not in types:
        severity = "'' AS SeverityText, 0 AS severity,"
    scope = (
        "ScopeName, ScopeVersion,"
        if "ScopeName" in types
        else "'' AS ScopeName, '' AS ScopeVersion,"
    )
    # Every record when nothing is asked for: GenAI events emitted outside a span's
    # context (OpenLLMetry's) carry no ids, and are placed by their time.
    filtered, params = trace_filter(trace_ids) if trace_ids is not None else ("1", {})
    sql = (
        f"SELECT toUnixTimestamp64Nano(Timestamp) AS time, TraceId, SpanId, {severity}"
        f" Body, ResourceAttributes, {scope} LogAttributes, {event_name} AS event"
        f" FROM {where.database}.{table} WHERE {filtered}"
        " ORDER BY time SETTINGS output_format_json_validate_utf8 = 1,"
        " output_format_json_quote_64bit_integers = 0"
    )
    for number, row in enumerate(db.rows(sql, params)):
        try:
            yield _record(row, where.name, flat)
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(FormatError(where.name, number, f"not a log record ({exc!r})", "row"))


def _record(row: Mapping[str, Any], source: str, flat: bool) -> LogRecord:
    attributes = column_attributes(row["LogAttributes"], flat)
    name = str(row["event"]) or str(attributes.get("event.name") or "")
    return LogRecord(
        trace_id=hex_id(row["TraceId"], 16),
        span_id=hex_id(row["SpanId"], 8),
        time_ns=int(row["time"]),
        event_name=name,
        body=_body(row["Body"], name),
        attributes=attributes,
        severity_number=int(row["severity"]),
        severity_text=str(row["SeverityText"]),
        resource=column_attributes(row["ResourceAttributes"], flat),
        scope_name=str(row["ScopeName"]),
        scope_version=str(row["ScopeVersion"]),
        source=source,
    )


def _body(text: Any, event_name: str) -> Any:
    """An event's body: a map by the GenAI conventions, kept as JSON text by the exporter."""
    if not isinstance(text, str):
        return text
    if event_name.startswith("gen_ai.") and text.startswith("{"):
        try:
            value = loads(text)
        except ValueError:
            return text
        return value if isinstance(value, dict) else text
    return text
