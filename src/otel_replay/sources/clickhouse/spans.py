"""The clickhouseexporter's traces table -> span records.

The Collector's ``clickhouseexporter`` writes one row per span
(``exporter/clickhouseexporter/exporter_traces.go``, table
``internal/sqltemplates/traces_table.sql``): ``Timestamp`` is the start
(DateTime64(9)), ``Duration`` the nanoseconds to the end, ids are hex (empty
for none), ``SpanKind`` and ``StatusCode`` are pdata's names (``Internal``,
``Error``; before 2024 ``SPAN_KIND_INTERNAL``, ``STATUS_CODE_ERROR``), events
and links are ``Nested`` columns, and every attribute value is a string made
by pdata's ``Value.AsString``: ints in decimal, doubles as JSON numbers,
bools ``true``/``false``, bytes in base64, lists and maps as JSON.  Tables
of exporters before 2024 have no ``ScopeName``/``ScopeVersion`` columns: the
scope is then the ``otel.scope.name``/``otel.scope.version`` attributes.
With ``json: true`` the attribute columns are ClickHouse ``JSON`` and keep
value types (and split dotted keys into objects, joined again here).

Types the string loses are given back where they are known (see
:mod:`.clickhouse_types`); any other attribute reads as the string
ClickHouse holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from ...otlp.errors import FormatError
from ...otlp.records import EventRecord, LinkRecord, Record, SpanRecord
from .column_types import SCOPE_NAME, SCOPE_VERSION, ambiguous, column_attributes
from .database import (
    HELD,
    IDS_TABLE,
    SEND_IDS,
    Database,
    Held,
    Param,
    connect,
    hex_id,
    send_ids,
    table_types,
    trace_filter,
)
from .logs import read_logs

__all__ = [
    "Columns",
    "read_records",
    "scannable",
    "scanned_windows",
    "select_spans",
    "span_record",
    "trace_windows",
    "windows_of",
]

_NAMED_KINDS = ("Unspecified", "Internal", "Server", "Client", "Producer", "Consumer")
_NAMED_STATUS = ("Unset", "Ok", "Error")
#: pdata's names (``Internal``), and those of exporters before 2024 (``SPAN_KIND_INTERNAL``).
_KINDS: Final = {
    **{name: i for i, name in enumerate(_NAMED_KINDS)},
    **{f"SPAN_KIND_{name.upper()}": i for i, name in enumerate(_NAMED_KINDS)},
}
_STATUS: Final = {
    **{name: i for i, name in enumerate(_NAMED_STATUS)},
    **{f"STATUS_CODE_{name.upper()}": i for i, name in enumerate(_NAMED_STATUS)},
}


class Columns:
    """What a traces table holds: its columns and their types (``system.columns``)."""

    def __init__(self, types: Mapping[str, str]) -> None:
        self.types = dict(types)

    @property
    def has_scope(self) -> bool:
        return "ScopeName" in self.types

    @property
    def json_attributes(self) -> bool:
        """Whether attributes are ClickHouse ``JSON`` (the exporter's ``json: true``)."""
        return self.types.get("SpanAttributes", "").startswith("JSON")

    def missing(self) -> list[str]:
        """The columns a traces table must have that this one has not."""
        return [c for c in _REQUIRED if c not in self.types]


_REQUIRED: Final = (
    "Timestamp",
    "TraceId",
    "SpanId",
    "ParentSpanId",
    "SpanName",
    "SpanKind",
    "ResourceAttributes",
    "SpanAttributes",
    "Duration",
    "StatusCode",
    "StatusMessage",
    "Events.Timestamp",
    "Events.Name",
    "Events.Attributes",
    "Links.TraceId",
    "Links.SpanId",
    "Links.Attributes",
)


def read_records(
    name: str, trace_ids: Iterable[str] | None, problems: list[FormatError]
) -> Iterator[Record]:
    """The spans of the table ``name`` names, then the log records of its logs table (only
    those of ``trace_ids``, full ids or prefixes, when given).  A row that is no record
    costs that row: it lands in ``problems`` with its number; a table or a query
    ClickHouse refuses raises."""
    db = connect(name)
    try:
        columns = table_columns(db)
        where, params = _traces(db, trace_ids)
        table = f"{db.location.database}.{db.location.table}"
        for number, row in enumerate(db.rows(select_spans(columns, table, where), params)):
            try:
                yield span_record(row, columns, name)
            except (ValueError, KeyError, TypeError) as exc:
                problems.append(FormatError(name, number, f"not a span ({exc!r})", unit="row"))
        if db.location.logs:
            yield from read_logs(db, db.location.logs, trace_ids, problems)
    finally:
        db.close()


def trace_windows(name: str, spans_per_window: int) -> list[list[str]] | None:
    """The trace ids of the table ``name`` in start order, in windows of about
    ``spans_per_window`` spans; None when its runs cannot be read a window at a time (log
    records that name no span join a run by their time alone)."""
    db = connect(name)
    try:
        where = db.location
        table_columns(db)
        if _spanless_logs(db):
            return None
        rows = db.rows(
            "SELECT TraceId, count() AS spans, min(Timestamp) AS first"
            f" FROM {where.database}.{where.table} WHERE TraceId != ''"
            " GROUP BY TraceId ORDER BY first, TraceId"
        )
        counted = ((hex_id(row["TraceId"], 16), int(row["spans"])) for row in rows)
        return windows_of(counted, spans_per_window)
    finally:
        db.close()


#: The bytes of spans a scan of many windows sorts in memory.
_SORT_BYTES: Final = 256 * 1024 * 1024

#: Which window a row is of: each id's number, beside the ids as the condition holds them.
_WINDOW_OF: Final = (
    "toUInt32(transform(TraceId, {ids:Array(String)}, {scan_windows:Array(String)}, '0'))"
)
#: The same, of the ids :func:`.database.send_ids` sent.  Each list is sorted by trace id:
#: two scans of a table read in parallel need not give its rows in the same order, and
#: unsorted, an id could be paired with another's window.
_HELD_WINDOW: Final = (
    f"transform(TraceId, (SELECT arraySort(groupArray(TraceId)) FROM {IDS_TABLE}),"
    " (SELECT arrayMap(p -> p.2, arraySort(groupArray((TraceId, window))))"
    f" FROM {IDS_TABLE}), toUInt32(0))"
)


def scannable(windows: Sequence[Sequence[str]]) -> bool:
    """Whether :func:`scanned_windows` reads ``windows``: full trace ids, each once."""
    ids = [t.lower() for w in windows for t in w]
    return all(len(t) == 32 for t in ids) and len(set(ids)) == len(ids)


def scanned_windows(
    name: str, windows: Sequence[Sequence[str]]
) -> Iterator[tuple[list[Record], list[FormatError]]]:
    """The records of each of ``windows`` (lists of full trace ids, see :func:`scannable`)
    of the table ``name``, in order, and the problems met reading them: what
    :func:`read_records` gives for each window, read in one query of the table (each
    row tagged with its window, the rows sorted by window), not one per window.  The ids
    are sent to a temporary table first (:func:`.database.send_ids`); where ClickHouse
    makes none (a user without the right), each query names as many windows' ids as
    :data:`.database.SEND_IDS` allows.  The log records of those traces are read first,
    in one query too: while the spans stream, the database is busy.  A table or a query
    ClickHouse refuses is a problem of the window it stops."""
    db = connect(name)
    try:
        with db.session():
            ids = [t.lower() for w in windows for t in w]
            try:
                send_ids(db, ids, [n for n, w in enumerate(windows) for _ in w])
            except FormatError:
                yield from _in_pieces(db, windows)
            else:
                yield from _scanned(db, windows, HELD)
    finally:
        db.close()


def _in_pieces(
    db: Database, windows: Sequence[Sequence[str]]
) -> Iterator[tuple[list[Record], list[FormatError]]]:
    """:func:`scanned_windows` with the ids in the queries: a query for as many windows
    as hold :data:`.database.SEND_IDS` traces."""
    start = 0
    while start < len(windows):
        end, count = start + 1, len(windows[start])
        while end < len(windows) and count + len(windows[end]) <= SEND_IDS:
            count += len(windows[end])
            end += 1
        piece = windows[start:end]
        yield from _scanned(db, piece, [t.lower() for w in piece for t in w])
        start = end


def _scanned(
    db: Database, windows: Sequence[Sequence[str]], ids: list[str] | Held
) -> Iterator[tuple[list[Record], list[FormatError]]]:
    """:func:`scanned_windows` of windows read in one query: of ``ids``, or of those sent."""
    name = db.location.name
    window_of = {t.lower(): n for n, w in enumerate(windows) for t in w}
    logs: dict[int, list[Record]] = {}
    problems: list[FormatError] = []
    done = 0
    try:
        columns = table_columns(db)
        if db.location.logs:
            for log in read_logs(db, db.location.logs, ids, problems):
                logs.setdefault(window_of.get(log.trace_id, 0), []).append(log)
        where, params = _traces(db, ids, len(window_of))
        window = _HELD_WINDOW
        held = params.get("ids")
        if isinstance(held, list):  # each id's window, beside the ids as the condition holds them
            params["scan_windows"] = [str(window_of[t]) for t in held]
            window = _WINDOW_OF
        table = f"{db.location.database}.{db.location.table}"
        records: list[Record] = []
        number = 0
        for row in db.rows(select_spans(columns, table, where, window), params):
            while done < int(row["window"]):
                yield records + logs.pop(done, []), problems
                done, records, problems, number = done + 1, [], [], 0
            try:
                records.append(span_record(row, columns, name))
            except (ValueError, KeyError, TypeError) as exc:
                problems.append(FormatError(name, number, f"not a span ({exc!r})", unit="row"))
            number += 1
        yield records + logs.pop(done, []), problems
        done += 1
    except FormatError as exc:
        yield [], [*problems, exc]
        done += 1
    for rest in range(done, len(windows)):
        yield logs.pop(rest, []), []


def spanless_logs(name: str) -> bool:
    """Whether the logs table beside the table ``name`` holds records that name no span
    (they join a run by their time alone: its runs are not read a window at a time)."""
    db = connect(name)
    try:
        return _spanless_logs(db)
    finally:
        db.close()


def _spanless_logs(db: Database) -> bool:
    where = db.location
    if not (where.logs and table_types(db, where.logs)):
        return False
    rows = db.rows(f"SELECT count() AS n FROM {where.database}.{where.logs} WHERE SpanId = ''")
    return any(int(row["n"]) for row in rows)


def windows_of(traces: Iterable[tuple[str, int]], spans_per_window: int) -> list[list[str]]:
    """Trace ids (with their span counts, in the order to read them) in windows of about
    ``spans_per_window`` spans."""
    windows: list[list[str]] = [[]]
    spans = 0
    for trace_id, count in traces:
        if spans >= spans_per_window:
            windows.append([])
            spans = 0
        windows[-1].append(trace_id)
        spans += count
    return [w for w in windows if w]


def table_columns(db: Database) -> Columns:
    """The columns of ``db``'s traces table; :class:`FormatError` unless it is the exporter's."""
    where = db.location
    found = table_types(db, where.table)
    if not found:
        raise FormatError.whole(where.name, f"no table {where.database}.{where.table}")
    columns = Columns(found)
    missing = columns.missing()
    if missing:
        raise FormatError.whole(
            where.name,
            f"{where.database}.{where.table} is not the clickhouseexporter's traces table"
            f" (no {', '.join(missing[:4])})",
        )
    return columns


def _traces(
    db: Database, trace_ids: Iterable[str] | Held | None, count: int = 0
) -> tuple[str, dict[str, Param]]:
    """The WHERE clause keeping the spans of ``trace_ids`` (``count`` of them when sent,
    see :func:`.database.send_ids`) and its parameters.  Full ids are looked up in the
    exporter's trace-id table first, so that ClickHouse reads only the days they span."""
    where, params = trace_filter(trace_ids)
    ids = params.get("ids")
    bounds = None
    if isinstance(trace_ids, Held):
        bounds = _bounds(db, f"IN (SELECT TraceId FROM {IDS_TABLE})", {}, count)
    elif isinstance(ids, list) and "prefixes" not in params:
        bounds = _bounds(db, "IN {ids:Array(String)}", {"ids": ids}, len(ids))
    if bounds is not None:
        where = (
            f"({where}) AND Timestamp >= toDateTime64({{start:Int64}}, 9)"
            " AND Timestamp < toDateTime64({end:Int64}, 9)"
        )
        params |= {"start": bounds[0], "end": bounds[1]}
    return where, params


def _bounds(
    db: Database, among: str, params: dict[str, Param], count: int
) -> tuple[int, int] | None:
    """The seconds every span of the ``count`` trace ids ``TraceId {among}`` keeps starts
    within, from the exporter's trace-id table (None when the table is not there or does
    not hold every id: then no bound)."""
    where = db.location
    try:
        rows = list(
            db.rows(
                "SELECT uniqExact(TraceId) AS found, toInt64(min(Start)) AS start,"
                f" toInt64(max(End)) AS end FROM {where.database}.{where.lookup_table}"
                f" WHERE TraceId {among}",
                params,
            )
        )
    except FormatError:
        return None  # no lookup table (create_schema off, or another schema): scan
    if not rows or int(rows[0].get("found") or 0) < count:
        return None
    return int(rows[0]["start"]), int(rows[0]["end"]) + 1


def select_spans(columns: Columns, table: str, where: str, window: str = "") -> str:
    """The SELECT of every span ``where`` keeps, its times in integer nanoseconds, in start
    order; with a ``window`` (an expression), each row's window, and the rows in window
    order first."""
    scope = "ScopeName, ScopeVersion," if columns.has_scope else ""
    first = f"{window} AS window," if window else ""
    return (
        f"SELECT {first} toUnixTimestamp64Nano(Timestamp) AS start,"
        " toInt64(Duration) AS duration,"
        " TraceId, SpanId, ParentSpanId, SpanName, SpanKind, ResourceAttributes,"
        f" {scope} SpanAttributes, StatusCode, StatusMessage,"
        " arrayMap(t -> toUnixTimestamp64Nano(t), Events.Timestamp) AS event_times,"
        " Events.Name AS event_names, Events.Attributes AS event_attributes,"
        " Links.TraceId AS link_traces, Links.SpanId AS link_spans,"
        " Links.Attributes AS link_attributes"
        f" FROM {table} WHERE {where}"
        f" ORDER BY {'window, ' if window else ''}start, SpanId"
        " SETTINGS output_format_json_validate_utf8 = 1,"
        " output_format_json_quote_64bit_integers = 0"
        # Many windows' spans are sorted at once: past this, on disk.
        f"{f', max_bytes_before_external_sort = {_SORT_BYTES}' if window else ''}"
    )


def span_record(row: Mapping[str, Any], columns: Columns, source: str) -> SpanRecord:
    """The span of one row of :func:`select_spans` (``ValueError``, ``KeyError`` or
    ``TypeError`` when the row is not one)."""
    flat = columns.json_attributes
    scope = str(row["ScopeName"]) if columns.has_scope else None
    guessed: list[str] = []
    attributes = column_attributes(row["SpanAttributes"], flat, scope, guessed)
    notes = [ambiguous(name) for name in guessed]
    if columns.has_scope:
        scope_name, scope_version = str(row["ScopeName"]), str(row["ScopeVersion"])
    else:
        scope_name = str(attributes.pop(SCOPE_NAME, ""))
        scope_version = str(attributes.pop(SCOPE_VERSION, ""))
    start = int(row["start"])
    events = []
    for when, name, attrs in _zipped(
        row["event_times"], row["event_names"], row["event_attributes"]
    ):
        guessed = []
        events.append(
            EventRecord(str(name), int(when), column_attributes(attrs, flat, scope_name, guessed))
        )
        notes += [ambiguous(key, str(name)) for key in guessed]
    links = [
        LinkRecord(hex_id(trace, 16), hex_id(span, 8), column_attributes(attrs, flat))
        for trace, span, attrs in _zipped(
            row["link_traces"], row["link_spans"], row["link_attributes"]
        )
    ]
    return SpanRecord(
        trace_id=hex_id(row["TraceId"], 16),
        span_id=hex_id(row["SpanId"], 8),
        parent_span_id=hex_id(row["ParentSpanId"], 8) or None,
        name=str(row["SpanName"]),
        kind=_KINDS.get(str(row["SpanKind"]), 0),
        start_ns=start,
        end_ns=start + int(row["duration"]),
        attributes=attributes,
        events=events,
        status_code=_STATUS.get(str(row["StatusCode"]), 0),
        status_message=str(row["StatusMessage"]),
        resource=column_attributes(row["ResourceAttributes"], flat),
        scope_name=scope_name,
        scope_version=scope_version,
        source=source,
        links=links,
        notes=tuple(notes),
    )


def _zipped(*columns: Any) -> Iterable[tuple[Any, ...]]:
    """The items of a ``Nested`` column's arrays, which ClickHouse keeps the same length."""
    if not all(isinstance(c, list) for c in columns) or len({len(c) for c in columns}) > 1:
        raise ValueError("a Nested column's arrays differ in length")
    return zip(*columns, strict=True)
