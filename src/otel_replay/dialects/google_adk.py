"""Google ADK's built-in tracing (scope ``gcp.vertex.agent``), its legacy schema.

With ``ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1`` (ADK 1.x's format) each model
call is a ``call_llm`` span whose content is ADK's own JSON, not GenAI
attributes: ``gcp.vertex.agent.llm_request`` (a google-genai request:
``config.system_instruction``, ``config.tools[].function_declarations``,
``contents``, each a ``Content`` of ``role`` and ``parts``) and
``gcp.vertex.agent.llm_response`` (``content``, ``finish_reason``).  A
``generate_content`` span inside it records the same call again (its content
in log events), and is paired with it as its twin.  Tool spans keep the call
in ``gcp.vertex.agent.tool_call_args`` / ``gcp.vertex.agent.tool_response``.

With span content off, ADK writes ``{}`` in all of them: an empty request,
or empty arguments with an empty response, is no record.  The current
schema writes GenAI attributes and log records, read as every stack's are.

In both, a tool call the model sent without an id has an id ADK made
(:data:`~otel_replay.attributes.CALL_IDS_MADE_AS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, in_scope, loads, put

SCOPE = "gcp.vertex.agent"
REQUEST = "gcp.vertex.agent.llm_request"
RESPONSE = "gcp.vertex.agent.llm_response"
TOOL_ARGS = "gcp.vertex.agent.tool_call_args"
TOOL_RESPONSE = "gcp.vertex.agent.tool_response"
#: ADK's name for the span that merges a turn's parallel calls (no model API allows it as a
#: tool's name): it runs no tool.
MERGED_TOOLS = "(merged tools)"


def _fill(span: SpanView) -> GenAI:
    if span.get(A.OPERATION_NAME) == A.OP_EXECUTE_TOOL:
        return _tool(span)
    # ADK gives a call the model sent without an id one of its own (``adk-<uuid4>``),
    # in every schema: a model span's output then shows it as the model's.
    made: GenAI = {A.CALL_IDS_MADE_AS: "adk"}
    request = loads(span.get(REQUEST))
    if not isinstance(request, Mapping) or not request:
        return made
    out: GenAI = {A.OPERATION_NAME: A.OP_CHAT, **made}
    config = request.get("config")
    if not isinstance(config, Mapping):
        config = {}
    put(out, A.SYSTEM_INSTRUCTIONS, _system(config.get("system_instruction")))
    put(out, A.TOOL_DEFINITIONS, _tools(config.get("tools")))
    contents = request.get("contents")
    if isinstance(contents, list):
        put(out, A.INPUT_MESSAGES, M.normalize(c for c in contents if isinstance(c, Mapping)))
    response = loads(span.get(RESPONSE))
    content = response.get("content") if isinstance(response, Mapping) else None
    if isinstance(content, Mapping):
        message = M.normalize_message({"role": "model", **content})
        if isinstance(response.get("finish_reason"), str):
            message["finish_reason"] = response["finish_reason"].lower()
        out[A.OUTPUT_MESSAGES] = [message]
    return out


def _tool(span: SpanView) -> GenAI:
    out: GenAI = {}
    if _returned_an_error(span):
        out[A.TOOL_ERROR_RETURNED] = True
    args, result = loads(span.get(TOOL_ARGS)), loads(span.get(TOOL_RESPONSE))
    if args == {} and result == {}:
        return out  # content off
    if isinstance(args, Mapping):  # a merged span writes "N/A"
        out[A.TOOL_CALL_ARGUMENTS] = dict(args)
    if result is not None and span.get(A.TOOL_NAME) != MERGED_TOOLS:
        out[A.TOOL_CALL_RESULT] = result
    return out


def _returned_an_error(span: SpanView) -> bool:
    """ADK (2.x) marks a tool span failed, with ``error.type`` and no exception event,
    when the tool returned a dict with a truthy ``error`` member (as an
    ``on_tool_error_callback`` does for a raised error); an error raised out of the
    tool it records as an exception event."""
    return bool(span.get(A.ERROR_TYPE)) and not any(
        e.get("name") == "exception" for e in span.events
    )


def _system(instruction: Any) -> list[dict[str, Any]] | None:
    if isinstance(instruction, Mapping):  # a Content
        parts = instruction.get("parts")
        return M.system_parts(parts) if isinstance(parts, list) else None
    if isinstance(instruction, (str, list)):
        return M.system_parts(instruction)
    return None


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if not isinstance(tools, list):
        return None
    out = []
    for tool in tools:
        for fn in M.listed(tool.get("function_declarations")) if isinstance(tool, Mapping) else []:
            if isinstance(fn, Mapping):
                out.append(M.tool_definition({k: v for k, v in fn.items() if v is not None}))
    return out or None


DIALECT = Dialect("google_adk", matches=in_scope(SCOPE), fill=_fill)
