"""The SQL of ``ls`` of a ClickHouse table: the summary query, its fragments and the
regular expressions it binds (see :mod:`.clickhouse_summary`, which runs it and reads
its rows).

Nothing a user or a trace gives is spelled into these texts: values are bound as
query parameters, and the ``{...}`` holes are filled with the fragments here.
"""

from __future__ import annotations

from typing import Final

from .. import attributes as A
from ..limits import MAX_NESTING
from ..sources.clickhouse.database import Param

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

#: The payloads whose digests are checked by name: those a span of the GenAI
#: conventions carries.
_DIGESTED: Final = (
    A.INPUT_MESSAGES,
    A.OUTPUT_MESSAGES,
    A.TOOL_CALL_ARGUMENTS,
    A.TOOL_CALL_RESULT,
    A.SYSTEM_INSTRUCTIONS,
)


def _damaged() -> str:
    """Whether a span's payload does not match its digest (a value whose
    ``otel_replay.sha256.`` companion is there and whose ``otel_replay.bytes.`` one is
    not), given its attribute names ``names`` and the names of its digests
    ``digest_names``.

    A span whose digests are all of :data:`_DIGESTED` looks each payload up by name;
    another pairs every attribute with its digest, which costs twice the time (the arrays
    of its lambdas are copied for every attribute)."""
    named = " OR ".join(
        f"(mapContains(a, '{A.SHA256}{key}') AND mapContains(a, '{key}')"
        f" AND NOT mapContains(a, '{A.BYTES}{key}')"
        f" AND lower(hex(SHA256(a['{key}']))) != a['{A.SHA256}{key}'])"
        for key in _DIGESTED
    )
    known = ", ".join(f"'{A.SHA256}{key}'" for key in _DIGESTED)
    return f"""if(arrayAll(k -> k IN ({known}), digest_names), {named},
            arrayExists((v, d) -> lower(hex(SHA256(v))) != d,
                arrayFilter((v, k) -> has(digest_names, concat('{A.SHA256}', k))
                    AND NOT has(bytes_names, concat('{A.BYTES}', k)), values, names),
                arrayMap(k -> digests[indexOf(digest_names, concat('{A.SHA256}', k))],
                    arrayFilter(k -> has(digest_names, concat('{A.SHA256}', k))
                    AND NOT has(bytes_names, concat('{A.BYTES}', k)), names))))"""


#: Whether a span's payload does not match its digest (see :func:`_damaged`), for a
#: span of attributes ``a``, their names ``names`` and values ``values``.
DAMAGED: Final = f"""
        arrayFilter(k -> startsWith(k, '{A.SHA256}'), names) AS digest_names,
        arrayFilter((v, k) -> startsWith(k, '{A.SHA256}'), values, names) AS digests,
        arrayFilter(k -> startsWith(k, '{A.BYTES}'), names) AS bytes_names,
        {_damaged()}"""

#: A span's shape: its scope and attribute names (``{keys}``, in any order).
SHAPE = "cityHash64({scope}, arrayStringConcat(arraySort({keys}), ','))"
#: A span's attribute names, in the summary query.
SPAN_KEYS: Final = "mapKeys(SpanAttributes)"
#: That no span of a trace is of a shape another dialect reads (the ``foreign`` shapes);
#: when there are none, "1": no span's shape is computed.
NATIVE: Final = "countIf(has({foreign:Array(String)}, toString(shape))) = 0"

#: Per span: its kind and what the summary reads of it; per trace: the summary.
SUMMARY: Final = """
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
    multiIf(NOT content OR asked_unseen, 'inspect-only',
        no_output + kept_elsewhere + damaged_output + unanswered > 0, 'model-only',
        'full') AS verdict,
    verdict = 'full' AND damaged = 0 AS replayable,
    {native}
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
        {damaged} AS damaged,
        damaged AND (mapContains(a, 'otel_replay.sha256.gen_ai.output.messages')
            OR mapContains(a, 'otel_replay.sha256.gen_ai.tool.call.result')) AS damaged_output,
        -- The pattern runs only on outputs that name a tool call.
        if(position(a['gen_ai.output.messages'], '"tool_call"') > 0,
            countMatches(a['gen_ai.output.messages'], '"type"\\s*:\\s*"tool_call"'), 0)
            AS calls_made,
        toInt32OrZero(a['http.response.status_code']) AS http_status,
        if(mapContains(a, 'otel_replay.bytes.gen_ai.input.messages'),
            tryBase64Decode(a['otel_replay.bytes.gen_ai.input.messages']),
            a['gen_ai.input.messages']) AS input,
        -- Read of model spans alone (the others' inputs are not compared): JSON parsed
        -- for those only.
        if(kind = 'model', JSONLength(input), 0) AS input_count,
        if(kind != 'model' OR position(input, char(92)) > 0, 0, {key}) AS first_input,
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

#: The columns of a summary row that leave ClickHouse for a line of ``ls``: what
#: :func:`.clickhouse_summary._summary` reads, in this order, and the two conditions the
#: rows are told apart by.
LINE: Final = (
    "TraceId",
    "start",
    "end",
    "agent",
    "user_id",
    "session_id",
    "tenant_id",
    "models",
    "steps",
    "model_calls",
    "tool_calls",
    "tools",
    "errors",
    "tool_calls_failed",
    "model_calls_failed",
    "input_tokens",
    "output_tokens",
    "verdict",
    "replayable",
    "anomalies",
    "plain",
    "also",
)
#: What leaves ClickHouse of a row that is not made a line (``check``'s triage): the
#: trace, its start and span count, and the two conditions.
BRIEF: Final = ("TraceId", "start", "steps", "plain", "also")

#: Every summary row, in start order.
ALL: Final = """
SELECT {output} FROM ({summary})
ORDER BY start, TraceId
SETTINGS output_format_json_quote_64bit_integers = 0
"""

#: The rows of a draw: of those whose ``{column}`` holds, the first ``draw_n`` in the
#: draw's order (with how many there are in all); every other row.
DRAWN: Final = """
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
BY_DIGEST: Final = "SHA256(concat({draw_seed:String}, ':', TraceId)), TraceId"
BY_START: Final = "start, TraceId"
