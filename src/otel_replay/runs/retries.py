"""A call retried: one call, not several, whose failed attempts stay in the tree.

Tools: a framework that retries a failing tool may do it from inside the first
attempt: CrewAI's 0.x ``ToolUsage`` calls itself again, up to three times,
and each attempt is a tool span inside the one before.  The model asked
once and got one answer (the outermost span's output), so the outermost
span is the tool step; the attempts inside it, the same tool with the same
arguments, stay in the tree as ``other`` steps (``duplicate_of`` names the
tool step).  So do the spans MCP traces a tool call with, inside the call they
carry: the client's ``tools/call`` message inside the app's tool call, the
server's inside the client's.

Model calls.  A framework that retries a failed model call itself (Strands'
retry strategy on a throttled or overloaded call) traces each attempt: a
model step ended in error, with the request and no answer, then, under the
same parent, another attempt with the same request, until one answers (an
answer cut partway through, retried, is such an attempt too: CrewAI runs its task
again, which sends the first request again).  The
model answered once: the attempt that answered is the model step; the failed
attempts before it stay in the tree as ``other`` steps (``retried_as``
names the model step; their error stays on them).  A replay serves the
answer to the request the agent sends and does not fail it first: the trace
holds the client's exception, not the response that failed.  A failed call
that nothing retries (the last one, or one followed by another request)
stays a failed model step.  The last one, with no model call after it, is
how the run ended (:func:`~.failed_calls.failed_end`: its client raised, an answer cut
partway through, and the agent with it): a replay fails that call again.
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


def fold_failed_attempts(steps: Sequence[Step]) -> int:
    """Make the failed attempts of the retried model calls of ``steps`` (one trace, tree
    built) ``other`` steps; how many."""
    by_id = {s.span_id: s for s in steps}
    siblings: dict[str | None, list[Step]] = {}
    for step in steps:
        if step.kind == "model" and step.model is not None:
            parent = step.parent_span_id if step.parent_span_id in by_id else None
            siblings.setdefault(parent, []).append(step)
    folded = 0
    for models in siblings.values():
        models.sort(key=lambda s: s.start_ns)
        pending: list[Step] = []  # failed attempts of one request, so far
        for step in models:
            if pending and (
                step.start_ns < pending[-1].end_ns or not _same_request(pending[0], step)
            ):
                pending = []  # sent alongside, or another request: not a retry of them
            if _failed_attempt(step):
                pending.append(step)
                continue
            if pending and _answered(step):
                for attempt in pending:
                    attempt.kind = "other"
                    attempt.model = None
                    attempt.retried_as = step.span_id
                folded += len(pending)
            pending = []
    return folded


def _failed_attempt(step: Step) -> bool:
    """A model step that ended in error with its request and no answer: none, or the first
    deltas of a stream cut partway through, which some instrumentations keep (no finish
    reason)."""
    m = step.model
    return (
        m is not None
        and step.status == "ERROR"
        and m.input_messages is not None
        and (m.output_messages is None or not m.finish_reasons)
    )


def _answered(step: Step) -> bool:
    m = step.model
    return m is not None and step.status != "ERROR" and m.output_messages is not None


def _same_request(a: Step, b: Step) -> bool:
    """The same request sent again: the same model, system instructions and messages."""
    ma, mb = a.model, b.model
    if ma is None or mb is None or ma.input_messages is None:
        return False
    return (
        ma.request_model == mb.request_model
        and ma.system_instructions == mb.system_instructions
        and ma.input_messages == mb.input_messages
    )
