"""CrewAI under OpenInference (scope ``openinference.instrumentation.crewai``), its ReAct tools.

CrewAI's 0.x releases (and 1.x with a model that cannot call tools) work
the ReAct way: the model answers in text, ``Action: name`` then ``Action
Input: {json}``, and the instrumentation traces ``ToolUsage._use``, whose
``input.value`` is its arguments as JSON: ``tool_string`` (the model's
answer), ``tool`` and ``calling`` (Python reprs).  The call's arguments are
the ``Action Input`` the model wrote.

A tool that raises does not fail the span: CrewAI tells the model, in the
span's output, "I encountered an error while trying to use the tool. This
was the error: <message>." followed by the tool's description.  That output
is what the model was sent; the error (its type is not recorded: ``_OTHER``)
and its message are read from it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, in_scope, loads, put

SCOPE = "openinference.instrumentation.crewai"
#: The model's arguments in a ReAct answer: all that follows ``Action Input:``.
_ACTION_INPUT = re.compile(r"^Action Input:[ \t]*(.*?)\s*\Z", re.MULTILINE | re.DOTALL)
#: CrewAI's words for a tool that raised (its ``tool_usage_exception`` text).
_TOOL_ERROR = re.compile(
    r"\s*I encountered an error while trying to use the tool\. This was the error: "
    r"(.*?)\.\n Tool ",
    re.DOTALL,
)


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    if (
        span.get(A.OPERATION_NAME) != A.OP_EXECUTE_TOOL
        and span.get("openinference.span.kind") != "TOOL"
    ):
        return out
    used = loads(span.get("input.value"))
    if isinstance(used, Mapping) and isinstance(used.get("tool_string"), str):
        found = _ACTION_INPUT.search(used["tool_string"])
        if found:
            put(out, A.TOOL_CALL_ARGUMENTS, M.parse_arguments(found.group(1)))
    result = span.get("output.value")
    error = _TOOL_ERROR.match(result) if isinstance(result, str) else None
    if error:
        put(out, A.ERROR_TYPE, "_OTHER")
        put(out, A.EXCEPTION_MESSAGE, error.group(1))
    return out


def _repair(span: SpanView) -> GenAI:
    # ``input.value`` is ToolUsage._use's arguments, not the call's: the Action Input replaces it.
    args = _fill(span).get(A.TOOL_CALL_ARGUMENTS)
    return {A.TOOL_CALL_ARGUMENTS: args} if args is not None else {}


DIALECT = Dialect("crewai", matches=in_scope(SCOPE), fill=_fill, repair=_repair)
