"""``otel-replay check`` of a ClickHouse table: the runs ClickHouse shows clean are not read.

The summary query of ``ls`` (:mod:`.clickhouse_summary`) also tells, per
trace, whether the run is surely *clean*: a run of the GenAI conventions
whose verdict is ``full``, replayable, with no problem to report and no
warning ``check`` could find.  Each condition errs one way only: it holds
only where the built run would say the same, so a run it cannot vouch for is
read and checked as a file's run is.  What it asks of every span and trace:

- no error status, exception, ``error.type``, tool error, content capture
  off, payload kept as ``repr()`` only or elsewhere, digest mismatch
  anywhere, id that is not plain hex, and no log record beside the trace;
- every model output a JSON array of messages that says something; every
  tool call the model made before its last call has an id a tool span
  carries;
- no two tool calls of one tool whose arguments could be the same JSON
  value (equal texts up to key order, spacing and number spelling; any
  escape counts as "could be"), no two text-only model answers (a loop of
  model answers needs them), no tool past the budget;
- no status code attribute that could read as 429 or a 5xx, no tool result
  that opens as JSON and is not valid JSON, nests past the bound, or starts
  as an HTTP status line, no JSON object result with a status key;
- no output of an agent or model span that holds one of the error phrases
  (case-insensitive, as a JSON string may spell it), a JSON escape of a
  printable character, or a character whose case folds to ASCII;
- no model input that could be the previous call's without its tool calls
  (the lost-history condition of the kit check).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..otlp.errors import FormatError
from ..runs.summary import Filter
from ..sources.clickhouse.database import Param
from .clickhouse_sql import BRIEF
from .clickhouse_summary import sorted_out

__all__ = ["triage", "wording_params"]

#: The trace-level condition of a clean run (columns of the summary query).
_CLEAN = """plain AND replayable
    AND countIf(failed OR spoiled OR no_content OR repr_kept OR odd_ids OR raised
        OR http_maybe) = 0
    AND countIf(kind = 'model' AND mute) = 0
    AND countIf(kind = 'tool' AND odd_result) = 0
    AND countIf(kind IN ('agent', 'model') AND dire) = 0
    AND countIf(kind = 'tool') = uniqExactIf((tool, call_key), kind = 'tool')
    AND countIf(kind = 'model' AND calls_made = 0) < 2
    AND tool_calls <= {tool_budget:Int64}
    AND length(arrayFlatten(arrayMap(x -> x.2, arrayFilter(x -> x.1 < last_model,
        groupArrayIf((s, call_ids), kind = 'model'))))) >= arraySum(arrayMap(x -> x.2,
        arrayFilter(x -> x.1 < last_model, groupArrayIf((s, calls_made), kind = 'model'))))
    AND hasAll(groupUniqArrayIf(a['gen_ai.tool.call.id'], kind = 'tool'),
        arrayFlatten(arrayMap(x -> x.2, arrayFilter(x -> x.1 < last_model,
        groupArrayIf((s, call_ids), kind = 'model')))))"""

#: Characters Python's case-insensitive match folds to an ASCII letter (İ ı ſ K), as
#: themselves and as JSON escapes: searched for as they are (ClickHouse's
#: case-insensitive search would find them in every I, S and K).
_FOLDING = [
    *("\u0130", "\u0131", "\u017f", "\u212a"),
    *("\\u0130", "\\u0131", "\\u017f", "\\u017F", "\\u212a", "\\u212A"),
]

#: ClickHouse searches at most this many needles at once.
_MAX_NEEDLES = 255


def triage(
    name: str, budget: int, phrases: Sequence[str]
) -> tuple[list[tuple[str, int]], list[tuple[str, int]], list[FormatError]]:
    """The runs of the table ``name`` ClickHouse shows clean (trace id, start), the traces
    left to read (trace id, span count), both in start order; and the problems met."""
    params: dict[str, Param] = {"every": 1, "tool_budget": budget, **wording_params(phrases)}
    return sorted_out(name, Filter(), "also", _start, _CLEAN, params, output=BRIEF)[:3]


def _start(row: list[Any]) -> tuple[str, int]:
    """The trace id and start of a row of the columns :data:`.clickhouse_sql.BRIEF` names."""
    return str(row[0]), int(row[1])


def wording_params(phrases: Sequence[str]) -> dict[str, Param]:
    """The needles of the error-wording condition: each phrase as text and as a JSON
    string spells it; every answer suspect when a phrase is not ASCII."""
    needles: set[str] = set()
    for phrase in phrases:
        phrase = phrase.replace("\u2019", "'")
        if not phrase.isascii():
            return {"wording_all": 1}
        for escaped in (phrase, json.dumps(phrase)[1:-1]):
            needles.update((escaped, escaped.replace("/", "\\/")))
    if len(needles) > _MAX_NEEDLES:
        return {"wording_all": 1}
    return {"wording_all": 0, "phrases": sorted(needles), "folding": _FOLDING}
