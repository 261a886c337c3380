"""Spans kept in ClickHouse by the Collector's ``clickhouseexporter``: where they are, and
how to ask.

Two kinds of name reach a ClickHouse:

- ``clickhouse://[USER@]HOST[:PORT][/DATABASE][?table=otel_traces]`` is a
  server, asked over its HTTP interface through ``clickhouse-connect``
  (extra ``clickhouse``); ``clickhouses://`` or ``?secure=1`` uses TLS.  The
  password comes from :data:`OTEL_REPLAY_CLICKHOUSE_PASSWORD` (a password in
  the URL is taken too, and hidden wherever the URL is shown);
- ``chdb:///PATH/TO/DIR[?database=otel&table=otel_traces]`` is a database
  directory read by embedded ClickHouse (``chdb``, extra ``chdb``), with the
  same SQL.

The database defaults to the exporter's (``default``), the table to its
``otel_traces``; the GenAI events are read from its logs table beside it
(``?logs=otel_logs``, the default; ``?logs=`` for none).

Every value a query needs is bound by ClickHouse's own query parameters
(``{name:Type}``), never written into the SQL; names of a database or table
must be plain identifiers.  Answers are read as ``JSONEachRow``, one bounded
line a row.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final, Protocol

from ... import limits, settings
from ...extras import install_hint
from ...otlp.errors import FormatError
from ...settings import OTEL_REPLAY_CLICKHOUSE_PASSWORD, TRUE

__all__ = [
    "HELD",
    "IDS_TABLE",
    "OTEL_REPLAY_CLICKHOUSE_PASSWORD",
    "SEND_IDS",
    "Database",
    "Held",
    "Location",
    "connect",
    "hex_id",
    "send_ids",
    "table_types",
    "trace_filter",
]

#: The clickhouseexporter's own defaults (its ``database`` and ``traces_table_name``).
DEFAULT_DATABASE: Final = "default"
DEFAULT_TABLE: Final = "otel_traces"
DEFAULT_LOGS_TABLE: Final = "otel_logs"
#: ClickHouse's HTTP ports, plain and TLS.
HTTP_PORT, HTTPS_PORT = 8123, 8443
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")


@dataclasses.dataclass(frozen=True)
class Location:
    """Where a ClickHouse table is, parsed from its name (see the module docstring)."""

    name: str
    embedded: bool
    database: str
    table: str
    host: str = ""
    port: int = 0
    user: str = ""
    password: str = dataclasses.field(default="", repr=False)
    secure: bool = False
    path: str = ""
    #: The logs table read beside the spans (the GenAI events); empty for none.
    logs: str = DEFAULT_LOGS_TABLE

    @classmethod
    def parse(cls, name: str) -> Location:
        """The location ``name`` names; :class:`FormatError` when it names none."""
        parts = urllib.parse.urlsplit(name)
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        database = query.get("database") or DEFAULT_DATABASE
        if parts.scheme == "chdb":
            path = urllib.parse.unquote(parts.netloc + parts.path)
            if not path:
                raise FormatError.whole(name, "chdb:// needs the database directory: chdb:///DIR")
            return cls(
                name,
                True,
                _identifier(name, database),
                _table(name, query),
                path=path,
                logs=_logs(name, query),
            )
        try:
            port = parts.port
        except ValueError:
            raise FormatError.whole(name, "the port is not a number") from None
        if not parts.hostname:
            raise FormatError.whole(name, "no host: clickhouse://HOST:8123/DATABASE")
        secure = parts.scheme == "clickhouses" or query.get("secure", "").lower() in TRUE
        if parts.path.strip("/"):
            database = parts.path.strip("/")
        password = settings.current().clickhouse_password or urllib.parse.unquote(
            parts.password or ""
        )
        return cls(
            name,
            False,
            _identifier(name, database),
            _table(name, query),
            host=parts.hostname,
            port=port or (HTTPS_PORT if secure else HTTP_PORT),
            user=urllib.parse.unquote(parts.username or "") or "default",
            password=password,
            secure=secure,
            logs=_logs(name, query),
        )

    @property
    def lookup_table(self) -> str:
        """The exporter's trace-id table beside the spans (start and end of each trace)."""
        return f"{self.table}_trace_id_ts"


def _table(name: str, query: Mapping[str, str]) -> str:
    return _identifier(name, query.get("table") or DEFAULT_TABLE)


def _logs(name: str, query: Mapping[str, str]) -> str:
    logs = query.get("logs", DEFAULT_LOGS_TABLE)
    return logs and _identifier(name, logs)


def _identifier(name: str, text: str) -> str:
    if not _IDENTIFIER.fullmatch(text):
        raise FormatError.whole(name, f"{text[:40]!r} is not a plain database or table name")
    return text


#: A query parameter's value: text, a number, or a list of texts (``Array(String)``).
Param = str | int | list[str]


class Database(Protocol):
    """A ClickHouse that answers queries, row by row."""

    location: Location

    def rows(self, sql: str, params: Mapping[str, Param] | None = None) -> Iterator[dict[str, Any]]:
        """The rows ``sql`` selects (bound with ``params``), parsed; :class:`FormatError` when
        ClickHouse refuses the query or answers rows past the bounds."""
        ...

    def lists(self, sql: str, params: Mapping[str, Param] | None = None) -> Iterator[list[Any]]:
        """:meth:`rows`, each row the list of its values in the order ``sql`` selects them
        (no column names: a row of many short values is read in a third of the time)."""
        ...

    def command(self, sql: str, params: Mapping[str, Param] | None = None) -> None:
        """Runs ``sql``, a statement that answers no rows; :class:`FormatError` when
        ClickHouse refuses it."""
        ...

    def session(self) -> contextlib.AbstractContextManager[None]:
        """Within it, the queries share one session: a temporary table lives to its end."""
        ...

    def close(self) -> None:
        """Let go of the connection."""
        ...


def connect(name: str) -> Database:
    """The ClickHouse ``name`` names (see the module docstring)."""
    where = Location.parse(name)
    return _Embedded(where) if where.embedded else _Server(where)


def table_types(db: Database, table: str) -> dict[str, str]:
    """The columns of ``table`` in ``db``'s database and their types (none: no table)."""
    return {
        str(row.get("name")): str(row.get("type"))
        for row in db.rows(
            "SELECT name, type FROM system.columns"
            " WHERE database = {db:String} AND table = {table:String}",
            {"db": db.location.database, "table": table},
        )
    }


#: The temporary table :func:`send_ids` fills: trace ids, each with a window number.
IDS_TABLE: Final = "otel_replay_ids"
#: Trace ids sent in one statement: a parameter of a megabyte or more is more than
#: ClickHouse takes (embedded, it stops answering; a server refuses a URL past 1 MiB).
SEND_IDS: Final = 16_000


class Held:
    """The trace ids :func:`send_ids` sent to the session's :data:`IDS_TABLE`, as a filter."""


HELD: Final = Held()


def send_ids(db: Database, ids: Sequence[str], windows: Sequence[int]) -> None:
    """``ids`` (full trace ids, each with its number in ``windows``) into the temporary
    table :data:`IDS_TABLE` of ``db``'s session (see :meth:`Database.session`), in
    statements of :data:`SEND_IDS` ids: then one query reads the spans of any number of
    them.  :class:`FormatError` when ClickHouse refuses (a user without the right to make
    temporary tables)."""
    db.command(f"DROP TEMPORARY TABLE IF EXISTS {IDS_TABLE}")  # a session's earlier read
    db.command(
        f"CREATE TEMPORARY TABLE {IDS_TABLE} (TraceId String, window UInt32) ENGINE = Memory"
    )
    for start in range(0, len(ids), SEND_IDS):
        db.command(
            f"INSERT INTO {IDS_TABLE} SELECT pair.1, toUInt32(pair.2) FROM (SELECT"
            " arrayJoin(arrayZip({ids:Array(String)}, {windows:Array(String)})) AS pair)",
            {
                "ids": list(ids[start : start + SEND_IDS]),
                "windows": [str(w) for w in windows[start : start + SEND_IDS]],
            },
        )


def trace_filter(trace_ids: Iterable[str] | Held | None) -> tuple[str, dict[str, Param]]:
    """The condition keeping rows of ``trace_ids`` (full ids or prefixes, or those
    :func:`send_ids` sent), and its parameters; every row with a trace id when None."""
    if trace_ids is None:
        return "TraceId != ''", {}
    if isinstance(trace_ids, Held):
        return f"TraceId IN (SELECT TraceId FROM {IDS_TABLE})", {}
    wanted = sorted({t.lower() for t in trace_ids})
    full = [t for t in wanted if len(t) == 32]
    prefixes = [t for t in wanted if len(t) != 32]
    clauses = []
    params: dict[str, Param] = {}
    if full:
        clauses.append("TraceId IN {ids:Array(String)}")
        params["ids"] = full
    if prefixes:
        clauses.append("arrayExists(p -> startsWith(TraceId, p), {prefixes:Array(String)})")
        params["prefixes"] = prefixes
    return " OR ".join(clauses) or "0", params


def hex_id(value: Any, size: int) -> str:
    """A hex id of ``size`` bytes, or "" (the exporter's "no id"); ``ValueError`` else."""
    text = str(value).lower()
    if text and (len(text) != 2 * size or text.strip("0123456789abcdef")):
        raise ValueError(f"{text[:40]!r} is not an id of {size} bytes in hex")
    return text


#: The formats of :meth:`Database.rows` and :meth:`Database.lists`, and the type of their rows.
_OBJECTS: Final = ("JSONEachRow", dict)
_LISTS: Final = ("JSONCompactEachRow", list)


def _lines(chunks: Iterable[bytes], name: str, kind: type = dict) -> Iterator[Any]:
    """``JSONEachRow`` rows (``JSONCompactEachRow``'s with ``kind`` list) from an answer in
    pieces; each line at most one record's size."""
    cap = limits.MAX_RECORD_BYTES.bytes()
    rest = bytearray()
    offset = 0
    for chunk in chunks:
        if b"\n" not in chunk:
            rest += chunk
        else:
            first, *lines, last = chunk.split(b"\n")
            rest += first
            yield from _rows([bytes(rest), *lines], name, offset, kind)
            offset += sum(map(len, lines)) + len(rest) + len(lines) + 1
            rest = bytearray(last)
        if len(rest) > cap:
            raise FormatError(name, offset, f"a row past {limits.MAX_RECORD_BYTES.text()}")
    if rest.strip():
        yield _row(bytes(rest), name, offset, kind)


def _rows(lines: list[bytes], name: str, offset: int, kind: type) -> list[Any]:
    """The rows of whole ``lines`` (the first at ``offset``), each a ``kind``.

    Parsed as one JSON array, in a third less time than line by line; lines that do not
    make one row each of the array (a line that is not JSON, or not one value) are then
    read line by line, to say which one is wrong.  (Lines that are halves of values and
    make whole ones joined are read as those: the server says what its rows are, and could
    as well send them whole.)"""
    said = [line for line in lines if line.strip()]
    try:
        rows = json.loads(f"[{b','.join(said).decode()}]")
    except (ValueError, RecursionError):
        rows = None
    if type(rows) is list and len(rows) == len(said) and all(type(r) is kind for r in rows):
        return rows
    out = []
    for line in lines:
        if line.strip():
            out.append(_row(line, name, offset, kind))
        offset += len(line) + 1
    return out


def _row(line: bytes, name: str, offset: int, kind: type) -> Any:
    try:
        # Text, not bytes: json.loads would look for the encoding of every line.
        row = json.loads(line.decode())
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError among them
        raise FormatError(
            name, offset, f"ClickHouse answered a row that is not JSON ({exc})"
        ) from None
    if type(row) is not kind:
        what = "an object" if kind is dict else "a list"
        raise FormatError(name, offset, f"ClickHouse answered a row that is not {what}")
    return row


#: chdb runs one ClickHouse per process: its sessions are taken one at a time.
_chdb_lock = threading.Lock()


class _Answering:
    """A :class:`Database`'s two shapes of row, from its answers in a format."""

    def rows(self, sql: str, params: Mapping[str, Param] | None = None) -> Iterator[dict[str, Any]]:
        return self._answer(sql, params, *_OBJECTS)

    def lists(self, sql: str, params: Mapping[str, Param] | None = None) -> Iterator[list[Any]]:
        return self._answer(sql, params, *_LISTS)

    def _answer(
        self, sql: str, params: Mapping[str, Param] | None, fmt: str, kind: type
    ) -> Iterator[Any]:
        """The rows of ``sql``'s answer in the format ``fmt``, each a ``kind``."""
        raise NotImplementedError


class _Embedded(_Answering):
    """A database directory read by embedded ClickHouse (chdb)."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self._held: Any = None

    @contextlib.contextmanager
    def session(self) -> Iterator[None]:
        if self._held is not None:
            yield  # within the session already
            return
        name = self.location.name
        try:
            # optional: the chdb extra
            from chdb import session
        except ImportError:
            raise FormatError.whole(name, _missing("chdb", "chdb")) from None
        if not os.path.isdir(self.location.path):
            raise FormatError.whole(name, "no such database directory")
        with _chdb_lock:
            self._held = session.Session(self.location.path)
            try:
                yield
            finally:
                self._held.close()
                self._held = None

    def _answer(
        self, sql: str, params: Mapping[str, Param] | None, fmt: str, kind: type
    ) -> Iterator[Any]:
        with self.session():
            try:
                answer = self._held.send_query(sql, fmt, params=_bound(params))
                chunks = (chunk.bytes() for chunk in answer)
                yield from _lines(chunks, self.location.name, kind)
            except RuntimeError as exc:  # chdb's errors, ChdbError among them
                raise FormatError.whole(self.location.name, _refused(exc)) from None

    def command(self, sql: str, params: Mapping[str, Param] | None = None) -> None:
        with self.session():
            try:
                self._held.query(sql, params=_bound(params))
            except RuntimeError as exc:  # (as _answer)
                raise FormatError.whole(self.location.name, _refused(exc)) from None

    def close(self) -> None:
        pass  # each query holds its session only while it runs, or the session() around it


class _Server(_Answering):
    """A ClickHouse server, over its HTTP interface (clickhouse-connect); one client for
    every query of a read."""

    def __init__(self, location: Location) -> None:
        self.location = location
        self._client: Any = None

    def _answer(
        self, sql: str, params: Mapping[str, Param] | None, fmt: str, kind: type
    ) -> Iterator[Any]:
        where = self.location
        try:
            # optional: the clickhouse extra
            from clickhouse_connect.driver.exceptions import ClickHouseError
        except ImportError:
            missing = _missing("clickhouse-connect", "clickhouse")
            raise FormatError.whole(where.name, missing) from None
        try:
            client = self._connected()
            answer = client.raw_stream(sql, parameters=dict(params or {}), fmt=fmt)
            yield from _lines(iter(lambda: answer.read(1 << 16), b""), where.name, kind)
        except ClickHouseError as exc:
            raise FormatError.whole(where.name, _refused(exc)) from None

    def command(self, sql: str, params: Mapping[str, Param] | None = None) -> None:
        try:
            # optional: the clickhouse extra
            from clickhouse_connect.driver.exceptions import ClickHouseError
        except ImportError:
            missing = _missing("clickhouse-connect", "clickhouse")
            raise FormatError.whole(self.location.name, missing) from None
        try:
            self._connected().command(sql, parameters=dict(params or {}))
        except ClickHouseError as exc:
            raise FormatError.whole(self.location.name, _refused(exc)) from None

    def session(self) -> contextlib.AbstractContextManager[None]:
        # The client's own session (clickhouse-connect names one per client) holds
        # temporary tables until it is closed.
        return contextlib.nullcontext()

    def _connected(self) -> Any:
        if self._client is None:
            # optional: the clickhouse extra
            import clickhouse_connect

            where = self.location
            self._client = clickhouse_connect.get_client(
                host=where.host,
                port=where.port,
                username=where.user,
                password=where.password,
                database=where.database,
                secure=where.secure,
                connect_timeout=int(limits.URL_TIMEOUT.get()),
                send_receive_timeout=int(limits.URL_TIMEOUT.get()),
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def _bound(params: Mapping[str, Param] | None) -> dict[str, str]:
    return {k: _text_param(v) for k, v in (params or {}).items()}


def _text_param(value: Param) -> str:
    """A parameter as ClickHouse parses it from text: a top-level string escaped as in
    TabSeparated, a list as an array literal of quoted strings."""
    if isinstance(value, list):
        return "[" + ", ".join(_quoted(v) for v in value) + "]"
    if isinstance(value, int):
        return str(value)
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def _quoted(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _refused(exc: BaseException) -> str:
    """ClickHouse's own words, first line, shortened: what the user needs to fix the query."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"ClickHouse refused the query: {text[:300]}"


def _missing(package: str, extra: str) -> str:
    return f"reading it needs {package}: {install_hint(extra)}"
