"""Strands Agents' built-in tracing (scope ``strands.telemetry.tracer``): tool I/O in span events.

With the default (legacy) conventions an ``execute_tool`` span keeps the
call's input and output in span events only: ``gen_ai.tool.message``
(``content``: the arguments as JSON text) and ``gen_ai.choice``
(``message``: the result as JSON text of Amazon Bedrock Converse content
blocks, ``[{"text": ...}]``).  They become ``gen_ai.tool.call.arguments``
and ``gen_ai.tool.call.result``; the current conventions write those
attributes themselves, the result as the JSON text of its content blocks,
read as the text (or JSON) the model was given.  Model messages in events are read by the loader's
GenAI event reader (:mod:`otel_replay.runs.log_events`).
"""

from __future__ import annotations

from typing import Any

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, in_scope, put

SCOPE = "strands.telemetry.tracer"


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    if span.get(A.OPERATION_NAME) != A.OP_EXECUTE_TOOL:
        return out
    for event in span.events:
        attributes = event.get("attributes") or {}
        if event.get("name") == "gen_ai.tool.message":
            put(out, A.TOOL_CALL_ARGUMENTS, M.parse_arguments(attributes.get("content")))
        elif event.get("name") == "gen_ai.choice":
            put(out, A.TOOL_CALL_RESULT, _result(attributes.get("message")))
    return out


def _result(message: Any) -> Any:
    """The result the model was given: the text (or JSON) of the result's content blocks."""
    blocks = M.parse_arguments(message)
    if isinstance(blocks, list) and blocks and all(_block(b) for b in blocks):
        if len(blocks) == 1 and set(blocks[0]) == {"json"}:
            return blocks[0]["json"]
        return M.tool_response([{"type": "text", **b} for b in blocks if set(b) == {"text"}])
    return blocks


def _repair(span: SpanView) -> GenAI:
    out: GenAI = {}
    if span.get(A.OPERATION_NAME) == A.OP_EXECUTE_TOOL:
        recorded = span.get(A.TOOL_CALL_RESULT)
        result = _result(recorded)
        if isinstance(recorded, str) and result != M.parse_arguments(recorded):
            out[A.TOOL_CALL_RESULT] = result
    return out


def _block(value: Any) -> bool:
    """A Converse content block: one key, ``text`` or ``json``."""
    return isinstance(value, dict) and len(value) == 1 and set(value) <= {"text", "json"}


DIALECT = Dialect("strands", matches=in_scope(SCOPE), fill=_fill, repair=_repair)
