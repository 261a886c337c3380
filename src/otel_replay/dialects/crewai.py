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

Every third use of a tool (fourth with some models: ``ToolUsage._format_result``)
CrewAI appends to the result's text its reminder of the tools and of the
format, "You ONLY have access to the following tools, ...": the span's output
is that text.  The tool returned what precedes it; a replay's stub gives that
back, and CrewAI appends the reminder again at the same use.

A call made again with the arguments of the one before (a model retrying a
tool that failed, after CrewAI already ran it again itself) is not run:
CrewAI answers it with its ``task_repeated_usage`` words, "I tried reusing
the same input, ...", which its span records as the output.  That step is
marked not run (:data:`~otel_replay.attributes.TOOL_NOT_RUN`): a replay,
in which CrewAI answers it the same way, sees no call of the tool for it.

A call of a tool with the arguments of an earlier call that returned (not the
one just before) is answered from CrewAI's tool cache, on unless the agent
turns it off (``cache=True`` in the agent's repr, which its ``_execute_core``
span records): the tool does not run, and the span records the cached result.
:func:`cache_key` reads the key CrewAI caches a call by (the tool's name and
``json.dumps`` of the arguments), :func:`tools_cached` whether an agent's cache is
on; a repair (:func:`otel_replay.runs.cached_tools.mark_cached_tools`) marks such
a call not run.

CrewAI gives a native tool call the model sent without an id one of its own,
``call_`` and the ``id()`` of the call's object (``extract_tool_call_info``,
for a streamed call, which it keeps as a dict), and sends it back as the
model's.  Its model spans are its client's instrumentation's, which know
nothing of CrewAI: a run holding spans of :data:`SCOPES` reads such ids as
made (:mod:`otel_replay.runs.made_ids`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, in_scope, loads, put

SCOPE = "openinference.instrumentation.crewai"
#: The scopes of CrewAI's own spans: the instrumentation's wrappers and its event listener.
SCOPES = frozenset({SCOPE, SCOPE + "._event_listener"})
#: The model's arguments in a ReAct answer: all that follows ``Action Input:``.
_ACTION_INPUT = re.compile(r"^Action Input:[ \t]*(.*?)\s*\Z", re.MULTILINE | re.DOTALL)
#: CrewAI's words for a tool that raised (its ``tool_usage_exception`` text).
_TOOL_ERROR = re.compile(
    r"\s*I encountered an error while trying to use the tool\. This was the error: "
    r"(.*?)\.\n Tool ",
    re.DOTALL,
)

#: CrewAI's ``tools`` slice (the same text in 0.x and 1.x), appended after ``"\n\n"``;
#: ``{tools}`` and ``{tool_names}`` are the agent's tools, described and named.
_TOOLS_SLICE = (
    "\nYou ONLY have access to the following tools, and should NEVER make up tools that are "
    "not listed here:\n\n{tools}\n\nIMPORTANT: Use the following format in your response:"
    "\n\n```\nThought: you should always think about what to do\nAction: the action to "
    "take, only one name of [{tool_names}], just the name, exactly as it's written.\nAction "
    "Input: the input to the action, just a simple JSON object, enclosed in curly braces, "
    'using " to wrap keys and values.\nObservation: the result of the action\n```\n\nOnce '
    "all necessary information is gathered, return the following format:\n\n```\nThought: "
    "I now know the final answer\nFinal Answer: the final answer to the original input "
    "question\n```"
)
#: CrewAI's answer to a call made again with the same arguments (``task_repeated_usage``, the
#: same in 0.x and 1.x), given without running the tool.
_REPEATED_USAGE = "I tried reusing the same input, I must stop using this action input."
_REMINDED = re.compile(
    r"(.*)\n\n"
    + ".*".join(re.escape(p) for p in re.split(r"\{tools\}|\{tool_names\}", _TOOLS_SLICE))
    + r"\Z",
    re.DOTALL,
)


def tool_result(output: str) -> str:
    """The text of what the tool returned, from the ``output.value`` of its ``ToolUsage._use``
    span: without the reminder of the tools CrewAI appends to every third result."""
    reminded = _REMINDED.match(output)
    return reminded.group(1) if reminded else output


#: How an agent's repr (``input.value`` of its ``_execute_core`` span) says its tool cache is
#: on or off.
_AGENT_CACHE = re.compile(r"\) role=.*? cache=(True|False) ", re.DOTALL)


def cache_key(attributes: Mapping[str, Any]) -> str | None:
    """The key CrewAI's tool cache keeps a ``ToolUsage._use`` span's call by (its
    ``CacheHandler``'s: the tool's name, ``-``, ``json.dumps`` of the arguments the model
    wrote); None for a span without both."""
    used = loads(attributes.get("input.value"))
    name = attributes.get("tool.name")
    if not isinstance(used, Mapping) or not isinstance(used.get("tool_string"), str):
        return None
    found = _ACTION_INPUT.search(used["tool_string"])
    args = M.parse_arguments(found.group(1)) if found else None
    if not isinstance(name, str) or not isinstance(args, Mapping) or not args:
        return None
    return f"{name}-{json.dumps(args)}"


def tools_cached(attributes: Mapping[str, Any]) -> bool | None:
    """Whether the agent whose ``_execute_core`` span has ``attributes`` keeps its tools'
    results in a cache (``cache=True`` in its repr); None for a span that does not say."""
    agent = loads(attributes.get("input.value"))
    text = agent.get("agent") if isinstance(agent, Mapping) else None
    cached = _AGENT_CACHE.search(text) if isinstance(text, str) else None
    return cached.group(1) == "True" if cached else None


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
    if isinstance(result, str) and result.startswith(_REPEATED_USAGE):
        out[A.TOOL_NOT_RUN] = True
    return out


def _repair(span: SpanView) -> GenAI:
    # ``input.value`` is ToolUsage._use's arguments, not the call's: the Action Input replaces it.
    # ``output.value`` holds the reminder CrewAI appended after the result: the result is
    # what precedes it.
    out: GenAI = {}
    args = _fill(span).get(A.TOOL_CALL_ARGUMENTS)
    if args is not None:
        out[A.TOOL_CALL_ARGUMENTS] = args
    output = span.get("output.value")
    if isinstance(output, str) and tool_result(output) != output:
        out[A.TOOL_CALL_RESULT] = tool_result(output)
    return out


DIALECT = Dialect("crewai", matches=in_scope(SCOPE), fill=_fill, repair=_repair)
