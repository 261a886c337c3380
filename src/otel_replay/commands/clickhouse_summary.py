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

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, TypeVar

from .. import attributes as A
from ..dialects.registry import detect
from ..dialects.span import SpanView
from ..limits import MAX_NESTING
from ..otlp.errors import FormatError
from ..runs.anomalies import DEFAULT_MAX_TOOL_CALLS
from ..runs.model import no_cycle_collection
from ..runs.stream import map_table_runs
from ..runs.summary import Filter, RunSummary, summarize
from ..sources.clickhouse.database import Database, Param, connect, table_types
from ..sources.clickhouse.spans import table_columns
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
    make: Callable[[dict[str, Any]], T],
    also: str = "0",
    params: dict[str, Param] | None = None,
    draw: Draw | None = None,
) -> tuple[list[T], list[tuple[str, int]], list[FormatError], int]:
    """``make`` of the summary rows (see :func:`_summary_rows`) whose ``column`` holds (of
    those, with a ``draw``, only the rows it takes); the other traces, left to the reader
    (their ids and span counts, in start order); the problems met; and how many rows
    ``column`` holds for in all."""
    try:
        # A line per run, all kept: the collector, run again and again over them, would
        # find nothing to free.
        with no_cycle_collection():
            taken, left, held = _taken(
                _summary_rows(name, flt, also, params, column if draw else None, draw),
                column,
                make,
            )
    except _Unsummarized as whole:
        return [], whole.traces, [], 0
    except FormatError as exc:
        return [], [], [exc], 0
    return taken, left, [], max(held, len(taken))


def _taken(
    rows: Iterable[dict[str, Any]], column: str, make: Callable[[dict[str, Any]], T]
) -> tuple[list[T], list[tuple[str, int]], int]:
    """``make`` of the ``rows`` whose ``column`` holds, the ids and span counts of the
    others, and the ``class_runs`` of the first (see :func:`sorted_out`)."""
    taken: list[T] = []
    left: list[tuple[str, int]] = []
    held = 0
    for row in rows:
        if int(row[column]):
            taken.append(make(row))
            held = int(row.get("class_runs", 0))
        else:
            left.append((str(row["TraceId"]), int(row["steps"])))
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
) -> Iterator[dict[str, Any]]:
    """The summary query's rows for the table ``name``, one per trace ``flt`` keeps, with
    the column ``also``: a condition on the trace's summary (bound with ``params``).
    With a ``draw``, of the rows whose ``column`` holds only those it takes, each with
    ``class_runs``: how many such rows there are in all.
    Raises :class:`_Unsummarized` for a table the query does not read."""
    since_ns = flt.since_ns
    db = connect(name)
    try:
        columns = table_columns(db)
        table = f"{db.location.database}.{db.location.table}"
        if columns.json_attributes:  # JSON columns (json: true): the reader summarizes
            raise _Unsummarized(_all_traces(db, table, flt.since_ns))
        foreign = _foreign_shapes(db, table, columns.has_scope)
        where, bound = _since(db, since_ns)
        bound.update({**PATTERNS, **(params or {}), "foreign": foreign})
        scope = "ScopeName" if columns.has_scope else "SpanAttributes['otel.scope.name']"
        summary = _SUMMARY.format(
            table=table,
            where=where,
            shape=_SHAPE.format(scope=scope),
            key=KEY.format(text="JSONExtractRaw(input, 1)"),
            call_key=KEY.format(text="arguments_text"),
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
            sql = _ALL.format(output=_OUTPUT, summary=summary)
        else:
            sql = _DRAWN.format(
                output=_OUTPUT,
                summary=summary,
                column=column,
                order=_BY_DIGEST if draw.sample is not None else _BY_START,
            )
            bound["draw_seed"] = draw.seed_text
            bound["draw_n"] = draw.sample if draw.sample is not None else draw.limit or 0
        yield from db.rows(sql, bound)
    finally:
        db.close()


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
    sql = (
        f"SELECT {scope} AS scope, arraySort(mapKeys(SpanAttributes)) AS names,"
        f" toString({_SHAPE.format(scope=scope)}) AS shape"
        f" FROM {table} GROUP BY scope, names, shape"
    )
    foreign = []
    for row in db.rows(sql):
        scope_name, names = str(row["scope"]), row["names"]
        view = SpanView({str(n): "?" for n in names}, scope=scope_name)
        if scope_name in _FOREIGN_SCOPES or [d.name for d in detect(view)] != ["genai"]:
            foreign.append(str(row["shape"]))
    return foreign


#: A key that JSON texts of equal values share (whatever their key order, spacing and
#: number spelling), for ``{text}`` without escapes: its pieces between brackets and
#: commas, sorted, spaces left out and every number value one zero; hashed.
KEY: Final = (
    "cityHash64(arrayStringConcat(arraySort(splitByRegexp({{piece:String}}, replaceRegexpAll("
    "replaceRegexpAll({text}, {{space:String}}, ''), {{number:String}}, '\\\\10'))), char(0)))"
)

#: Whether the text ``said`` (the outputs of a span) may hold an error phrase: as text or
#: JSON spells it (the needles ``check`` binds), a typographic apostrophe read as "'",
#: or with an escape or a letter whose case folds to ASCII that could hide one.
WORDING: Final = (
    "{wording_all:UInt8} OR match(said, {ascii_escape:String})"
    " OR multiSearchAny(said, {folding:Array(String)})"
    " OR multiSearchAnyCaseInsensitiveUTF8(replaceAll(replaceAll(said, {rsquo:String},"
    " char(39)), {rsquo_escaped:String}, char(39)), {phrases:Array(String)})"
)

#: Whether a tool's result text ``result_text`` may warn of something: it opens as JSON
#: (after what Python's strip() takes for space) and is not JSON Python would parse, it
#: starts as an HTTP status line, or it is an object whose status key holds 429 or a 5xx
#: (or that names such a key twice).
RESULT_WARNS: Final = (
    "(match(result_text, {opening:String}) AND NOT (match(result_text, {json_opening:String})"
    " AND isValidJSON(result_text) AND countMatches(result_text, {bracket:String})"
    " <= {nesting:Int64}))"
    " OR match(result_text, {http_text:String})"
    " OR (JSONType(result_text) = 'Object' AND (arrayExists(k -> match("
    "JSONExtractRaw(result_text, k), {status_value:String}), ['status_code', 'status',"
    " 'http_status']) OR countMatches(result_text, {status_key:String}) > 1))"
)

#: The regular expressions the queries use (bound as parameters, not spelled in SQL).
PATTERNS: Final[dict[str, Param]] = {
    "space": r"\s",
    # A number where JSON has values: at the start, after ":", "[" or "," (spaces gone).
    "number": r"(^|[:\[,])[-+0-9.eE]+",
    "piece": r"[,{}\[\]]",
    "call_id": r'"id"\s*:\s*"([^"]*)"',
    # A message part that says something: a value that is not empty, nor null.
    "says": r'"(content|text|arguments|response|result)"\s*:\s*([^"\sn]|"[^"])',
    # What Python's str.strip() takes for white space, then the opening of a JSON text.
    "opening": r"^[\s\v\x{1c}-\x{1f}\x{85}\pZ]*[\[{]",
    "json_opening": r"^[ \t\n\r]*[\[{]",
    "bracket": r"[\[{]",
    "http_text": r"^[\s\v\x{1c}-\x{1f}\x{85}\pZ]*HTTP/",
    # A JSON integer 429 or 5xx; a key that may hold one (twice: the last one counts).
    "status_value": "^(429|5[0-9][0-9])$",
    "status_key": r'"(status_code|status|http_status)"\s*:',
    # What int() may read as 429 or a 5xx: digits, with "_" or digits of other scripts.
    "status_text": r"429|5[0-9][0-9]|_|[^\x{00}-\x{7f}]",
    # A printable ASCII character spelled as a JSON escape.
    "ascii_escape": r"\\u00[2-7][0-9a-fA-F]",
    "rsquo": "\u2019",
    "rsquo_escaped": "\\u2019",
    "nesting": MAX_NESTING,
    # What only ``check`` binds: by default every trace's answer might say anything.
    "every": 0,
    "wording_all": 1,
    "phrases": [],
    "folding": [],
    "tool_budget": 0,
}

#: A span's shape: its scope and attribute names.
_SHAPE = "cityHash64({scope}, arrayStringConcat(arraySort(mapKeys(SpanAttributes)), ','))"


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


def _summary(row: dict[str, Any]) -> RunSummary:
    incomplete = any(int(row[k]) for k in _INCOMPLETE)
    if not int(row["content"]) or int(row["asked_unseen"]):
        verdict = "inspect-only"
    elif incomplete:
        verdict = "model-only"
    else:
        verdict = "full"
    return RunSummary(
        run_id=str(row["TraceId"]),
        trace_ids=[str(row["TraceId"])],
        start_ns=int(row["start"]),
        end_ns=int(row["end"]),
        agent=str(row["agent"]) or None,
        user_id=str(row["user_id"]) or None,
        session_id=str(row["session_id"]) or None,
        tenant_id=str(row["tenant_id"]) or None,
        models=[str(m) for m in row["models"]],
        steps=int(row["steps"]),
        model_calls=int(row["model_calls"]),
        tool_calls=int(row["tool_calls"]),
        tools=[str(t) for t in row["tools"]],
        errors=int(row["errors"]),
        input_tokens=int(row["input_tokens"]),
        output_tokens=int(row["output_tokens"]),
        verdict=verdict,
        replayable=verdict == "full" and not int(row["damaged"]),
        # A plain run replays and no agent or other span of it failed: the runs that do
        # not, or raised, are read (their reasons and error are the reader's words).
        replay_problem=None,
        raised=False,
        error_type=None,
        error_message=None,
        tool_calls_failed=int(row["tool_calls_failed"]),
        model_calls_failed=int(row["model_calls_failed"]),
        anomalies=int(row["anomalies"]),
        candidates=True,
    )


#: What makes a run "model-only".
_INCOMPLETE: Final = ("no_output", "kept_elsewhere", "damaged_output", "unanswered")

#: Per span: its kind and what the summary reads of it; per trace: the summary.
_SUMMARY: Final = """
SELECT TraceId,
    min(s) AS start,
    max(e) AS end,
    if(countIf(kind = 'agent') > 0, argMinIf(agent_label, s, kind = 'agent'),
       argMin(ResourceAttributes['service.name'], s)) AS agent,
    argMinIf(user, s, user != '') AS user_id,
    argMinIf(session, s, session != '') AS session_id,
    argMinIf(tenant, s, tenant != '') AS tenant_id,
    arrayDistinct(arrayMap(x -> x.2, arraySort(groupArrayIf((s, model), kind = 'model'
        AND model != '')))) AS models,
    count() AS steps,
    countIf(kind = 'model') AS model_calls,
    countIf(kind = 'tool') AS tool_calls,
    arrayDistinct(arrayMap(x -> x.2, arraySort(groupArrayIf((s, tool), kind = 'tool'))))
        AS tools,
    countIf(failed OR (kind = 'tool' AND tool_error)) AS errors,
    countIf(kind = 'tool' AND (failed OR typed_error)) AS tool_calls_failed,
    countIf(kind = 'model' AND failed) AS model_calls_failed,
    sumIf(input_tokens, kind = 'model') AS input_tokens,
    sumIf(output_tokens, kind = 'model') AS output_tokens,
    countIf(kind = 'model' AND (has_input OR has_output)) > 0
        OR (model_calls = 0 AND countIf(kind = 'tool' AND (has_args OR has_result)) > 0)
        AS content,
    countIf(kind = 'tool') > 0 AND countIf(kind = 'model') = 0
        AND countIf(kind = 'agent' AND offers_tools) > 0 AS asked_unseen,
    countIf(kind = 'model' AND NOT has_output) AS no_output,
    countIf(kind = 'tool' AND NOT tool_error AND NOT has_result) AS no_result,
    countIf(kept_elsewhere) AS kept_elsewhere,
    countIf(damaged AND kind IN ('model', 'tool')) AS damaged,
    countIf(damaged_output) AS damaged_output,
    greatest(toInt64(arraySum(arrayMap(x -> x.2, arrayFilter(x -> x.1 < last_model,
        groupArrayIf((s, calls_made), kind = 'model'))))) - tool_calls, 0) AS unanswered,
    countIf(calls_made > 0 AND kind = 'model') > 0 AND tool_calls = 0 AS derived,
    (count() - uniqExact(if(kind = 'tool', (tool, arguments), (SpanId, ''))))
        + countIf(kind = 'tool' AND (tool_error OR failed))
        + countIf(http_status = 429 OR http_status >= 500)
        + countIf(kind = 'tool' AND NOT tool_error AND match(result, '^\\s*[\\[{{]')
            AND NOT isValidJSON(result))
        + (tool_calls > {budget}) AS anomalies,
    maxIf(s, kind = 'model') AS last_model,
    arraySort(groupArrayIf((s, calls_made, input_count, first_input), kind = 'model'))
        AS model_seq,
    arrayExists(i -> model_seq[i].1 = model_seq[i + 1].1 OR (model_seq[i].2 > 0
        AND model_seq[i + 1].3 <= model_seq[i].3 + 1 AND (model_seq[i + 1].4 = model_seq[i].4
            OR model_seq[i].4 = 0 OR model_seq[i + 1].4 = 0)),
        arrayEnumerate(arrayPopBack(model_seq))) AS lost_history,
    content AND NOT asked_unseen AND no_output + kept_elsewhere + damaged_output + unanswered = 0
        AND damaged = 0 AS replayable,
    countIf(has({{foreign:Array(String)}}, toString(shape))) = 0
        AND NOT derived
        AND NOT (countIf(kind IN ('agent', 'tool')) = 0 AND model_calls > 0)
        AND content AND no_result = 0
        AND NOT lost_history
        AND replayable
        AND countIf(kind NOT IN ('model', 'tool') AND (failed OR typed_error)) = 0
        AS plain,
    ({also}) AND {logs} AS also
FROM (
    SELECT TraceId, SpanId,
        toUnixTimestamp64Nano(Timestamp) AS s,
        s + toInt64(Duration) AS e,
        SpanAttributes AS a,
        ResourceAttributes,
        StatusCode IN ('Error', 'STATUS_CODE_ERROR') AS failed,
        a['gen_ai.operation.name'] AS op,
        multiIf(
            op IN {model_ops}, 'model',
            op = 'execute_tool', 'tool',
            op IN {agent_ops}, 'agent',
            op = '' AND mapContains(a, 'gen_ai.tool.name'), 'tool',
            op = '' AND (mapContains(a, 'gen_ai.request.model')
                OR mapContains(a, 'gen_ai.provider.name') OR mapContains(a, 'gen_ai.system'))
                AND (mapContains(a, 'gen_ai.input.messages')
                OR mapContains(a, 'gen_ai.output.messages')
                OR mapContains(a, 'gen_ai.usage.input_tokens')), 'model',
            'other') AS kind,
        if(a['gen_ai.agent.name'] != '', a['gen_ai.agent.name'],
            replaceRegexpOne(SpanName, '^(invoke_agent|create_agent|invoke_workflow) ', ''))
            AS agent_label,
        if(mapContains(a, 'otel_replay.fingerprint.user.id'),
            a['otel_replay.fingerprint.user.id'], a['user.id']) AS user,
        multiIf(mapContains(a, 'otel_replay.fingerprint.session.id'),
            a['otel_replay.fingerprint.session.id'], a['session.id'] != '', a['session.id'],
            a['gen_ai.conversation.id']) AS session,
        if(mapContains(a, 'otel_replay.fingerprint.tenant.id'),
            a['otel_replay.fingerprint.tenant.id'], a['tenant.id']) AS tenant,
        if(a['gen_ai.response.model'] != '', a['gen_ai.response.model'],
            a['gen_ai.request.model']) AS model,
        if(a['gen_ai.tool.name'] != '', a['gen_ai.tool.name'],
            trimBoth(replaceRegexpOne(SpanName, '^execute_tool ', ''))) AS tool,
        a['gen_ai.tool.call.arguments'] AS arguments,
        a['gen_ai.tool.call.result'] AS result,
        a['error.type'] != '' AS typed_error,
        typed_error OR arrayExists(x -> x = 'exception', Events.Name) AS tool_error,
        toInt64OrZero(if(mapContains(a, 'gen_ai.usage.input_tokens'),
            a['gen_ai.usage.input_tokens'], a['gen_ai.usage.prompt_tokens'])) AS input_tokens,
        toInt64OrZero(if(mapContains(a, 'gen_ai.usage.output_tokens'),
            a['gen_ai.usage.output_tokens'], a['gen_ai.usage.completion_tokens']))
            AS output_tokens,
        -- The lambdas below are given the names and values as arrays: one that reads
        -- the map copies all of it (payloads too) for each name it is called on.
        mapKeys(a) AS names,
        mapValues(a) AS values,
        arrayExists((k, v) -> k IN ('gen_ai.input.messages',
            'otel_replay.bytes.gen_ai.input.messages', 'otel_replay.ref.gen_ai.input.messages',
            'gen_ai.input.messages_ref') AND v NOT IN ('', '[]'), names, values) AS has_input,
        arrayExists((k, v) -> k IN ('gen_ai.output.messages',
            'otel_replay.bytes.gen_ai.output.messages', 'otel_replay.ref.gen_ai.output.messages',
            'gen_ai.output.messages_ref') AND v NOT IN ('', '[]'), names, values) AS has_output,
        arrayExists(k -> k IN ('gen_ai.tool.call.arguments',
            'otel_replay.bytes.gen_ai.tool.call.arguments',
            'otel_replay.ref.gen_ai.tool.call.arguments'), mapKeys(a)) AS has_args,
        arrayExists(k -> k IN ('gen_ai.tool.call.result',
            'otel_replay.bytes.gen_ai.tool.call.result',
            'otel_replay.ref.gen_ai.tool.call.result',
            'otel_replay.sha256.gen_ai.tool.call.result'), mapKeys(a)) AS has_result,
        a['gen_ai.tool.definitions'] != '' AS offers_tools,
        arrayExists(k -> startsWith(k, 'otel_replay.ref.') OR endsWith(k, '_ref'), mapKeys(a))
            AS kept_elsewhere,
        arrayFilter(k -> startsWith(k, 'otel_replay.sha256.'), names) AS digest_names,
        arrayFilter((v, k) -> startsWith(k, 'otel_replay.sha256.'), values, names) AS digests,
        arrayFilter(k -> startsWith(k, 'otel_replay.bytes.'), names) AS bytes_names,
        arrayFilter((v, k) -> has(digest_names, concat('otel_replay.sha256.', k))
            AND NOT has(bytes_names, concat('otel_replay.bytes.', k)), values, names)
            AS digested,
        arrayMap(k -> digests[indexOf(digest_names, concat('otel_replay.sha256.', k))],
            arrayFilter(k -> has(digest_names, concat('otel_replay.sha256.', k))
            AND NOT has(bytes_names, concat('otel_replay.bytes.', k)), names)) AS expected,
        arrayExists((v, d) -> lower(hex(SHA256(v))) != d, digested, expected) AS damaged,
        damaged AND (mapContains(a, 'otel_replay.sha256.gen_ai.output.messages')
            OR mapContains(a, 'otel_replay.sha256.gen_ai.tool.call.result')) AS damaged_output,
        countMatches(a['gen_ai.output.messages'], '"type"\\s*:\\s*"tool_call"') AS calls_made,
        toInt32OrZero(a['http.response.status_code']) AS http_status,
        if(mapContains(a, 'otel_replay.bytes.gen_ai.input.messages'),
            tryBase64Decode(a['otel_replay.bytes.gen_ai.input.messages']),
            a['gen_ai.input.messages']) AS input,
        JSONLength(input) AS input_count,
        if(position(input, char(92)) > 0, 0, {key}) AS first_input,
        if(mapContains(a, 'otel_replay.bytes.gen_ai.output.messages'),
            tryBase64Decode(a['otel_replay.bytes.gen_ai.output.messages']),
            a['gen_ai.output.messages']) AS output,
        extractAll(output, {{call_id:String}}) AS call_ids,
        NOT (isValidJSON(output) AND JSONType(output) = 'Array' AND match(output, {{says:String}}))
            AS mute,
        damaged AS spoiled,
        a['otel_replay.content'] = 'NO_CONTENT' AS no_content,
        arrayExists((k, v) -> startsWith(k, 'otel_replay.type.') AND v = 'repr', names, values)
            AS repr_kept,
        NOT (match(TraceId, '^[0-9a-f]{{32}}$') AND match(SpanId, '^[0-9a-f]{{16}}$')
            AND match(ParentSpanId, '^([0-9a-f]{{16}})?$')) AS odd_ids,
        tool_error OR mapContains(a, 'otel_replay.exception.args') AS raised,
        match(concat(a['http.response.status_code'], ' ', a['http.status_code']),
            {{status_text:String}}) AS http_maybe,
        if(mapContains(a, 'otel_replay.bytes.gen_ai.tool.call.arguments'),
            tryBase64Decode(a['otel_replay.bytes.gen_ai.tool.call.arguments']), arguments)
            AS arguments_text,
        if(position(arguments_text, char(92)) > 0
            OR a['otel_replay.type.gen_ai.tool.call.arguments'] NOT IN ('', 'json', 'str'),
            0, {call_key}) AS call_key,
        if(mapContains(a, 'otel_replay.bytes.gen_ai.tool.call.result'),
            tryBase64Decode(a['otel_replay.bytes.gen_ai.tool.call.result']), result)
            AS result_text,
        {result_warns} AS odd_result,
        mapFilter((k, v) -> position(k, 'output') > 0, a) AS outputs,
        arrayStringConcat(arrayMap((k, v) -> if(startsWith(k, 'otel_replay.bytes.'),
            tryBase64Decode(v), v), mapKeys(outputs), mapValues(outputs)), char(10)) AS said,
        {dire} AS dire,
        {shape} AS shape
    FROM {table}
    WHERE {where}
)
GROUP BY TraceId
HAVING ({{every:UInt8}} OR countIf(op != 'create_agent') > 0) AND {having}
"""

#: The columns of a summary row that leave ClickHouse: what :func:`_summary` reads, and
#: the two conditions the rows are told apart by.
_OUTPUT: Final = (
    "TraceId, start, end, agent, user_id, session_id, tenant_id, models, steps, model_calls,"
    " tool_calls, tools, errors, tool_calls_failed, model_calls_failed, input_tokens,"
    " output_tokens, content, asked_unseen, no_output, kept_elsewhere, damaged,"
    " damaged_output, unanswered, anomalies, plain, also"
)

#: Every summary row, in start order.
_ALL: Final = """
SELECT {output} FROM ({summary})
ORDER BY start, TraceId
SETTINGS output_format_json_quote_64bit_integers = 0
"""

#: The rows of a draw: of those whose ``{column}`` holds, the first ``draw_n`` in the
#: draw's order (with how many there are in all); every other row.
_DRAWN: Final = """
SELECT {output}, class_runs FROM (
    SELECT *, count() OVER (PARTITION BY {column}) AS class_runs,
        row_number() OVER (PARTITION BY {column} ORDER BY {order}) AS class_place
    FROM ({summary})
)
WHERE NOT {column} OR class_place <= {{draw_n:UInt64}}
ORDER BY start, TraceId
SETTINGS output_format_json_quote_64bit_integers = 0
"""

#: A draw's order: by the digest of the seed and the trace id (as :func:`.draw.draw_key`
#: orders run ids), or, with no sample, by start.
_BY_DIGEST: Final = "SHA256(concat({draw_seed:String}, ':', TraceId)), TraceId"
_BY_START: Final = "start, TraceId"
