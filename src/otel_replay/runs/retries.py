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

Other frameworks run a tool again *after* it raised, each attempt a span of its own beside
the one before (LangChain 1.x's ``ToolRetryMiddleware``): the same tool, the same
arguments and the same call (an attempt that failed may lack the id, an instrumentation
taking it from the tool's answer), under the same parent, each started after the one
before ended, no model call in between.  The model asked once and was sent the last
attempt's result (or its error, when every attempt failed): the last attempt is the tool
step; the failed ones before it stay in the tree, in order, as ``other`` steps
(``retried_as`` names the tool step; their error stays on them), and take the call's id
and arguments the tool step is given once joined to the model's call
(:func:`align_tool_attempts`).  A replay raises each one's error in turn, then answers the
last, so that the framework retries as it did.

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

import bisect
import collections
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


def fold_tool_attempts(steps: Sequence[Step]) -> int:
    """Make the failed attempts of the tools a framework ran again at once after they
    raised (``steps``: one trace, tree built) ``other`` steps; how many."""
    by_id = {s.span_id: s for s in steps}
    models = sorted(s.start_ns for s in steps if s.kind == "model")
    siblings: dict[str | None, list[Step]] = collections.defaultdict(list)
    for step in steps:
        if step.kind == "tool" and step.tool is not None and not step.tool.derived:
            parent = step.parent_span_id if step.parent_span_id in by_id else None
            siblings[parent].append(step)
    folded = 0
    for tools in siblings.values():
        tools.sort(key=lambda s: (s.start_ns, s.index))
        # Per tool: the calls whose last attempt so far raised, each its attempts in order.
        open_calls: dict[str, list[list[Step]]] = collections.defaultdict(list)
        for step in tools:
            assert step.tool is not None
            calls = open_calls[step.tool.tool_name]
            # (A call whose last attempt ended before a model call began is not retried.)
            calls[:] = [c for c in calls if not _model_between(models, c[-1], step)]
            attempts = next((c for c in calls if _again(c[-1], step)), None)
            if attempts is None:
                attempts = [step]
                calls.append(attempts)
            else:
                attempts.append(step)
            if not _raised(step):
                calls.remove(attempts)
                folded += _fold(attempts)
        folded += sum(_fold(c) for calls in open_calls.values() for c in calls)
    return folded


def _raised(step: Step) -> bool:
    t = step.tool
    return t is not None and t.raised


def _model_between(models: Sequence[int], before: Step, after: Step) -> bool:
    """Whether a model call (``models``: their starts, sorted) began between two steps."""
    i = bisect.bisect_right(models, before.end_ns)
    return i < len(models) and models[i] <= after.start_ns


def _again(failed: Step, step: Step) -> bool:
    """Whether ``step`` runs again the call whose attempt ``failed`` raised."""
    a, b = failed.tool, step.tool
    assert a is not None and b is not None
    return (
        step.start_ns >= failed.end_ns
        and a.arguments == b.arguments
        and (not a.call_id or not b.call_id or a.call_id == b.call_id)
    )


def _fold(attempts: list[Step]) -> int:
    """The last of one call's ``attempts`` is its tool step; the others are retried as it."""
    last = attempts[-1]
    for attempt in attempts[:-1]:
        attempt.kind = "other"
        attempt.retried_as = last.span_id
    return len(attempts) - 1


def align_tool_attempts(steps: Sequence[Step]) -> int:
    """Give the failed attempts of a tool run again the call id and arguments their tool
    step took when joined to the model's call (an instrumentation that records the tool's
    whole input, or the id from the tool's answer, leaves a failed attempt without them:
    they were the same, as :func:`fold_tool_attempts` checked); how many changed."""
    by_id = {s.span_id: s for s in steps}
    changed = 0
    for step in steps:
        target = by_id.get(step.retried_as or "")
        a, t = step.tool, target.tool if target is not None else None
        if a is None or t is None:
            continue
        before = (a.call_id, a.arguments)
        a.call_id = a.call_id or t.call_id
        if a.arguments_payload is None or a.arguments_payload.status != "exact":
            a.arguments, a.arguments_payload = t.arguments, t.arguments_payload
        changed += (a.call_id, a.arguments) != before
    return changed


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
