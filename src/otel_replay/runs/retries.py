"""A tool run again inside its own span: one call, retried, not several calls.

A framework that retries a failing tool may do it from inside the first
attempt: CrewAI's 0.x ``ToolUsage`` calls itself again, up to three times,
and each attempt is a tool span inside the one before.  The model asked
once and got one answer (the outermost span's output), so the outermost
span is the tool step; the attempts inside it, the same tool with the same
arguments, stay in the tree as ``other`` steps (``duplicate_of`` names the
tool step).  So do the spans MCP traces a tool call with, inside the call they
carry: the client's ``tools/call`` message inside the app's tool call, the
server's inside the client's.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dialects.mcp import METHOD as MCP_METHOD
from ..dialects.mcp import TOOLS_CALL as MCP_TOOLS_CALL
from .model import Step


def fold_retried_tools(steps: Sequence[Step]) -> int:
    """Make the retries of ``steps`` (one trace, tree built) ``other`` steps; how many."""
    by_id = {s.span_id: s for s in steps}
    folded = 0
    for step in steps:  # preorder: a parent is seen before its children
        parent = by_id.get(step.parent_span_id or "")
        if step.tool is None or parent is None or parent.tool is None:
            continue
        outer = by_id.get(parent.duplicate_of or "", parent) if parent.kind == "other" else parent
        if outer.tool is None or not _same_call(outer, step):
            continue
        step.kind = "other"
        step.duplicate_of = outer.span_id
        folded += 1
    return folded


def _same_call(outer: Step, inner: Step) -> bool:
    a, b = outer.tool, inner.tool
    assert a is not None and b is not None
    if a.tool_name != b.tool_name:
        return False
    if inner.attributes.get(MCP_METHOD) == MCP_TOOLS_CALL:
        # An MCP ``tools/call`` span inside a call of the same tool carries that call (the
        # client's message inside the app's tool call, the server's inside the client's).
        return b.arguments is None or a.arguments is None or a.arguments == b.arguments
    return a.arguments == b.arguments and a.call_id == b.call_id
