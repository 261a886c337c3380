"""The MCP semantic conventions: a ``tools/call`` span is a tool call.

MCP clients and servers traced by the conventions (the ``mcp`` package does
both) open one span per JSON-RPC message, ``mcp.method.name`` naming it.  A
``tools/call`` span is the call of the tool its name ends with (``tools/call
lookup_order``, a client's ``MCP send tools/call lookup_order``); the
server's span says so with ``gen_ai.tool.name``, the client's does not.  The
conventions record no arguments or results unless an instrumentation opts
in: the tool step then says they are missing (or takes them from the
messages the model was sent, as for any tool span without content).  A
client's span and the server's inside it are one call: see
:mod:`otel_replay.runs.retries`.
"""

from __future__ import annotations

from .. import attributes as A
from .span import Dialect, GenAI, SpanView, put

METHOD = "mcp.method.name"
TOOLS_CALL = "tools/call"


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    if span.get(METHOD) != TOOLS_CALL:
        return out
    put(out, A.OPERATION_NAME, A.OP_EXECUTE_TOOL)
    name = span.name.rsplit(TOOLS_CALL, 1)[-1].strip() if TOOLS_CALL in span.name else ""
    put(out, A.TOOL_NAME, name)
    put(out, A.TOOL_TYPE, "extension")
    return out


DIALECT = Dialect("mcp", matches=lambda span: METHOD in span.attributes, fill=_fill)
