"""``otel-replay ls`` of a ClickHouse table: run summaries computed by ClickHouse.

One query groups the spans by trace and computes, for each trace, what an
``ls`` line shows: start and end, the agent, the user, session and tenant
ids, the models, the step, model and tool call counts, the tools, errors,
tokens, and the inputs of the verdict (model steps without output, tool
steps without result, payloads kept elsewhere or whose digest does not
match, tool calls no tool step answers) and the anomaly candidates
(a tool called again with the same arguments, failed tools, HTTP 429/5xx
answers, calls past the tool budget).  The filters of ``ls`` (``--since``,
``--agent``, ``--error``, ``--tool``, ``--replayable``) are conditions of
the same query: only the lines to print leave ClickHouse.

The query reads spans written with the GenAI semantic conventions
(otel-replay's capture, OpenTelemetry's GenAI instrumentations) from the
exporter's ``Map`` columns; a table of ``json: true`` is summarized by the
reader, a window of traces at a time.  Traces
that other instrumentations wrote (OpenInference, OpenLLMetry, LiteLLM,
the Vercel AI SDK...: their spans need otel-replay's dialect readers),
client-only traces that otel-replay stitches into one run, runs whose
tool steps would be taken from the messages, runs where a model input
may be the call before it without its tool calls (a history the kit check
looks at closely), runs that do not replay (why is said in the kit check's
words) and runs an agent or other span of which failed (the error is said
as it was recorded) are summarized the way a file's are: those traces alone
are read and built.  Which traces those are is
decided once per shape of span (scope and attribute names), in Python,
from the same dialect detection the reader uses.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, TypeVar

from .. import attributes as A
from ..dialects.registry import detect
from ..dialects.span import SpanView
from ..otlp.errors import FormatError
from ..runs.anomalies import DEFAULT_MAX_TOOL_CALLS
from ..runs.model import no_cycle_collection
from ..runs.stream import map_table_runs
from ..runs.summary import Filter, RunSummary, summarize, summary_of
from ..sources.clickhouse.database import Database, Param, connect, table_types
from ..sources.clickhouse.spans import table_columns
from .clickhouse_sql import (
    ALL,
    BY_DIGEST,
    BY_START,
    DAMAGED,
    DRAWN,
    KEY,
    LINE,
    NATIVE,
    PATTERNS,
    RESULT_WARNS,
    SHAPE,
    SPAN_KEYS,
    SUMMARY,
    WORDING,
)
from .draw import Draw

__all__ = ["drawn_summaries", "summaries"]

#: Scopes whose spans another dialect reads, whatever their attribute names.
_FOREIGN_SCOPES: Final = ("gen_ai",)


def summaries(name: str, flt: Filter) -> tuple[list[RunSummary], list[FormatError]]:
    """The summaries of the runs of the table ``name`` that ``flt`` may keep: computed by
    ClickHouse, and for the traces it leaves to the reader, by reading those alone."""
    found, left, problems = sql_summaries(name, flt)
    return _with_left(name, found, left, problems)


def drawn_summaries(
    name: str, flt: Filter, draw: Draw
) -> tuple[list[RunSummary], int, list[FormatError]]:
    """The summaries of the runs of the table ``name`` that ``flt`` keeps and ``draw`` may
    take, and how many runs ``flt`` keeps that ``draw`` does not take and are left out.

    ClickHouse draws among the runs it summarizes (by the digest of the seed and the
    trace id, or by start), and sends back only the runs drawn and those it leaves to
    the reader (drawn among the others once read): of a table of thousands of runs,
    about ``draw.sample`` lines leave it."""
    if draw.sample is None and draw.limit is None:
        found, problems = summaries(name, flt)
        return found, 0, problems
    # Runs joined by log records' time alone are read whole: drawn once read.
    from ..sources.clickhouse.spans import spanless_logs

    try:
        whole = spanless_logs(name)
    except FormatError as exc:
        return [], 0, [exc]
    if whole:
        found, problems = summaries(name, flt)
        return found, 0, problems
    drawn, left, problems, plain = sorted_out(name, flt, "plain", _summary, draw=draw)
    left_out = plain - len(drawn)
    found, problems = _with_left(name, drawn, left, problems)
    return found, left_out, problems


def _with_left(
    name: str, found: list[RunSummary], left: list[tuple[str, int]], problems: list[FormatError]
) -> tuple[list[RunSummary], list[FormatError]]:
    """``found``, and the summaries of the traces ``left`` to the reader, read alone."""
    if left:
        # Those traces a window at a time, client-only ones stitched as a dump's are.
        mapped = map_table_runs(name, left, summarize, done={s.run_id for s in found})
        found += mapped.values
        problems += mapped.problems
    return found, problems


def sql_summaries(
    name: str, flt: Filter
) -> tuple[list[RunSummary], list[tuple[str, int]], list[FormatError]]:
    """The summaries of the runs of the table ``name`` that ``flt`` keeps (all their
    fields computed by ClickHouse), the traces ClickHouse leaves to the reader (other
    dialects, stitched traces: their ids and span counts, in start order), and the
    problems met."""
    return sorted_out(name, flt, "plain", _summary)[:3]


T = TypeVar("T")


def sorted_out(
    name: str,
    flt: Filter,
    column: str,
    make: Callable[[list[Any]], T],
    also: str = "0",
    params: dict[str, Param] | None = None,
    draw: Draw | None = None,
    output: Sequence[str] = LINE,
) -> tuple[list[T], list[tuple[str, int]], list[FormatError], int]:
    """``make`` of the summary rows (see :func:`_summary_rows`: the values of the columns
    ``output`` names, the trace id first) whose ``column`` holds (of those, with a
    ``draw``, only the rows it takes); the other traces, left to the reader (their ids and
    span counts, in start order); the problems met; and how many rows ``column`` holds
    for in all."""
    rows = _summary_rows(name, flt, also, params, column if draw else None, draw, output)
    try:
        # A line per run, all kept: the collector, run again and again over them, would
        # find nothing to free.
        with no_cycle_collection():
            taken, left, held = _taken(
                rows, output.index(column), output.index("steps"), make, draw is not None
            )
    except _Unsummarized as whole:
        return [], whole.traces, [], 0
    except FormatError as exc:
        return [], [], [exc], 0
    return taken, left, [], max(held, len(taken))


def _taken(
    rows: Iterable[list[Any]],
    column: int,
    steps: int,
    make: Callable[[list[Any]], T],
    drawn: bool,
) -> tuple[list[T], list[tuple[str, int]], int]:
    """``make`` of the ``rows`` whose value ``column`` holds, the ids and span counts (value
    ``steps``) of the others, and, ``drawn``, the ``class_runs`` of the first (their last
    value; see :func:`sorted_out`)."""
    taken: list[T] = []
    left: list[tuple[str, int]] = []
    held = 0
    for row in rows:
        if row[column]:
            taken.append(make(row))
            if drawn:
                held = int(row[-1])
        else:
            left.append((str(row[0]), int(row[steps])))
    return taken, left, held


class _Unsummarized(Exception):
    """The table is one the query does not read (JSON columns): every trace is the
    reader's."""

    def __init__(self, traces: list[tuple[str, int]]) -> None:
        self.traces = traces


def _summary_rows(
    name: str,
    flt: Filter,
    also: str = "0",
    params: dict[str, Param] | None = None,
    column: str | None = None,
    draw: Draw | None = None,
    output: Sequence[str] = LINE,
) -> Iterator[list[Any]]:
    """The summary query's rows for the table ``name``, one per trace ``flt`` keeps: the
    values of the columns ``output`` names, the column ``also`` a condition on the trace's
    summary (bound with ``params``).
    With a ``draw``, of the rows whose ``column`` holds only those it takes, each with
    ``class_runs`` last: how many such rows there are in all.
    Raises :class:`_Unsummarized` for a table the query does not read."""
    since_ns = flt.since_ns
    db = connect(name)
    # One session for the listing's queries: embedded ClickHouse opens the database again
    # for each session (about a tenth of a second of CPU each).
    with contextlib.closing(db), db.session():
        columns = table_columns(db)
        table = f"{db.location.database}.{db.location.table}"
        if columns.json_attributes:  # JSON columns (json: true): the reader summarizes
            raise _Unsummarized(_all_traces(db, table, flt.since_ns))
        foreign = _foreign_shapes(db, table, columns.has_scope)
        where, bound = _since(db, since_ns)
        bound.update({**PATTERNS, **(params or {}), "foreign": foreign})
        scope = "ScopeName" if columns.has_scope else "SpanAttributes['otel.scope.name']"
        summary = SUMMARY.format(
            table=table,
            where=where,
            shape=SHAPE.format(scope=scope, keys=SPAN_KEYS),
            native=NATIVE if foreign else "1",
            key=KEY.format(text="JSONExtractRaw(input, 1)"),
            call_key=KEY.format(text="arguments_text"),
            damaged=DAMAGED,
            dire=WORDING,
            result_warns=RESULT_WARNS,
            model_ops=_list(A.MODEL_OPERATIONS),
            agent_ops=_list(A.AGENT_OPERATIONS),
            having=_having(flt, since_ns, bound),
            budget=DEFAULT_MAX_TOOL_CALLS,
            also=also,
            logs=_logs(db),
        )
        if column is None or draw is None:
            sql = ALL.format(output=", ".join(output), summary=summary)
        else:
            sql = DRAWN.format(
                output=", ".join(output),
                summary=summary,
                column=column,
                order=BY_DIGEST if draw.sample is not None else BY_START,
            )
            bound["draw_seed"] = draw.seed_text
            bound["draw_n"] = draw.sample if draw.sample is not None else draw.limit or 0
        yield from db.lists(sql, bound)


def _logs(db: Database) -> str:
    """The condition "the trace has no log record" when the table has a logs table beside
    it (their records may add to a run what the spans do not say), else true."""
    logs = db.location.logs
    if not (logs and table_types(db, logs)):
        return "1"
    return f"TraceId NOT IN (SELECT TraceId FROM {db.location.database}.{logs})"


def _all_traces(db: Database, table: str, since_ns: int | None) -> list[tuple[str, int]]:
    """Every trace of ``table`` that starts at ``since_ns`` or later, with its span count,
    in start order."""
    params: dict[str, Param] = {"since": since_ns or 0}
    rows = db.rows(
        "SELECT TraceId, count() AS spans, min(toUnixTimestamp64Nano(Timestamp)) AS start"
        f" FROM {table} WHERE TraceId != '' GROUP BY TraceId HAVING start >= {{since:Int64}}"
        " ORDER BY start, TraceId",
        params,
    )
    return [(str(row["TraceId"]), int(row["spans"])) for row in rows]


def _list(values: Sequence[str] | frozenset[str]) -> str:
    """A literal array of plain names (our own constants, never user input)."""
    return "[" + ", ".join(f"'{v}'" for v in sorted(values)) + "]"


def _foreign_shapes(db: Database, table: str, has_scope: bool) -> list[str]:
    """The shapes (scope and attribute names, as ClickHouse hashes them) of spans another
    dialect than the GenAI conventions reads."""
    scope = "ScopeName" if has_scope else "SpanAttributes['otel.scope.name']"
    # Grouped by the names as the spans hold them (the keys alone are read, and no span's
    # are sorted); each group's names are then sorted and hashed as the summary hashes a
    # span's.  Names of one set in two orders are two groups of one shape.  The group key
    # is the names' hash, not the names: a hash table keyed by arrays writes each span's
    # array out to compare it (a third of this query's time at millions of spans).  Two
    # lists of names of one hash would be one group, as two sets of one shape are one
    # shape in the summary.
    sql = (
        "SELECT scope, arraySort(keys) AS names,"
        f" toString({SHAPE.format(scope='scope', keys='keys')}) AS shape FROM"
        f" (SELECT {scope} AS scope, any(SpanAttributes.keys) AS keys FROM {table}"
        " GROUP BY scope, cityHash64(SpanAttributes.keys))"
    )
    foreign: dict[str, None] = {}
    for row in db.rows(sql):
        scope_name, names = str(row["scope"]), row["names"]
        view = SpanView({str(n): "?" for n in names}, scope=scope_name)
        if scope_name in _FOREIGN_SCOPES or [d.name for d in detect(view)] != ["genai"]:
            foreign[str(row["shape"])] = None
    return list(foreign)


def _since(db: Database, since_ns: int | None) -> tuple[str, dict[str, Param]]:
    """Spans of traces that start at ``since_ns`` or later: through the exporter's trace-id
    table, so that ClickHouse reads only the days since."""
    if since_ns is None:
        return "TraceId != ''", {}
    lookup = f"{db.location.database}.{db.location.lookup_table}"
    try:
        list(db.rows(f"SELECT 1 FROM {lookup} LIMIT 1"))
    except FormatError:
        # No trace-id table: every span is read, so that a trace started before ``since``
        # shows its true start (the summary's condition then leaves it out).
        return "TraceId != ''", {}
    # Spans of traces that started in ``since``'s second or later (the table keeps whole
    # seconds): all of their spans start after it.
    return (
        "TraceId != '' AND Timestamp >= toDateTime64({since_s:Int64}, 9)"
        f" AND TraceId IN (SELECT TraceId FROM {lookup}"
        " WHERE Start >= toDateTime({since_s:Int64}))",
        {"since_s": since_ns // 1_000_000_000},
    )


def _having(flt: Filter, since_ns: int | None, params: dict[str, Param]) -> str:
    """The conditions of ``flt`` on a trace's summary (other dialects' traces are kept
    whatever they say: the reader filters those)."""
    conditions = []
    if since_ns is not None:
        conditions.append("start >= {since:Int64}")
        params["since"] = since_ns
    exact = []
    if flt.agent is not None:
        exact.append("positionCaseInsensitiveUTF8(agent, {agent:String}) > 0")
        params["agent"] = flt.agent
    if flt.errors_only:
        exact.append("errors > 0")
    if flt.tools:
        exact.append("hasAll(tools, {tools:Array(String)})")
        params["tools"] = list(flt.tools)
    if flt.replayable_only:
        exact.append("replayable")
    if exact:
        conditions.append(f"(NOT plain OR ({' AND '.join(exact)}))")
    return " AND ".join(conditions) or "1"


def _summary(row: list[Any]) -> RunSummary:
    """The summary of a row of the columns :data:`.clickhouse_sql.LINE` names."""
    (trace_id, start, end, agent, user_id, session_id, tenant_id, models, steps) = row[:9]
    (model_calls, tool_calls, tools, errors, tool_failed, model_failed) = row[9:15]
    (input_tokens, output_tokens, verdict, replayable, anomalies) = row[15:20]
    return summary_of(
        run_id=str(trace_id),
        trace_ids=[str(trace_id)],
        start_ns=int(start),
        end_ns=int(end),
        agent=str(agent) or None,
        user_id=str(user_id) or None,
        session_id=str(session_id) or None,
        tenant_id=str(tenant_id) or None,
        models=[str(m) for m in models],
        steps=int(steps),
        model_calls=int(model_calls),
        tool_calls=int(tool_calls),
        tools=[str(t) for t in tools],
        errors=int(errors),
        input_tokens=int(input_tokens),
        output_tokens=int(output_tokens),
        verdict=str(verdict),
        replayable=bool(replayable),
        # A plain run replays and no agent or other span of it failed: the runs that do
        # not, or raised, are read (their reasons and error are the reader's words).
        replay_problem=None,
        raised=False,
        error_type=None,
        error_message=None,
        tool_calls_failed=int(tool_failed),
        model_calls_failed=int(model_failed),
        anomalies=int(anomalies),
        candidates=True,
    )
