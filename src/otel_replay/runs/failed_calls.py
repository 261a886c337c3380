"""Model calls that failed and that a replay fails again, rather than serve what they hold.

A replay serves each recorded answer; a call whose client raised (an answer cut partway
through, a failure it did not retry) has no answer to serve, or only the first deltas of
one.  Where the trace shows the run went the way that failure made it go (it ended there,
or the agent caught the error and went on), a replay fails the call again so that the
agent goes the same way: :func:`fails_again`.  The call is marked failed; or an
instrumentation ended it unfailed (pydantic-ai 2, OpenLLMetry's OpenAI on a stream cut
partway), and what says it failed is an answer without its end: no finish reason where
every call before it has one, or a streamed answer without one (:func:`cut_stream`: every
API sends the reason in a stream's last event, and the instrumentations that say a call
streamed record it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Run, Step


#: The attributes by which an instrumentation says a call's answer was streamed
#: (OpenLLMetry's, and the older name LiteLLM and AutoGen set).
STREAMED = ("gen_ai.is_streaming", "llm.is_streaming")


def streamed(step: Step) -> bool:
    """Whether ``step``'s span says its answer was streamed."""
    attrs = step.attributes or {}
    return any(attrs.get(key) in (True, "true", "True") for key in STREAMED)


def cut_stream(step: Step) -> bool:
    """Whether ``step`` is a model call whose answer streamed and did not reach its end: the
    span says it streamed and records no finish reason (the stream's last event carries it).
    Its client saw the stream cut partway (or stopped reading it): what the trace holds of
    the answer, if anything, is its first deltas."""
    m = step.model
    return step.kind == "model" and m is not None and not m.finish_reasons and streamed(step)


def failed_end(run: Run, step: Step) -> bool:
    """Whether ``step`` is a model call that failed and so ended ``run``: no retry of it
    (``retried_as``), no model call after it, and the error went up (a span around it ended
    in error: the agent's, though a workflow span above it may not; or nothing traced
    around it, the call a root of its own, as a client instrumentation traces an app's own
    loop).  Its client raised (an answer cut partway through, a failure it did not retry)
    and the run with it: what a replay does again, not an answer the trace lacks.  What it
    holds of the answer is what came before the failure (none, or a stream's first deltas,
    which some instrumentations keep).  The call is marked failed; or, unfailed, it has no
    finish reason where every call before it has one, or is a stream cut short
    (:func:`cut_stream`).  A run that went on to end well after a failed last call is not
    one."""
    m = step.model
    if step.kind != "model" or m is None or step.retried_as is not None:
        return False
    if step.status != "ERROR" and m.finish_reasons:
        return False  # answered to its end (most calls): told without the run's other steps
    models = [s for s in run.steps if s.kind == "model" and s.model is not None]
    if models[-1] is not step:
        return False
    if step.status == "ERROR":
        return _went_up(run, step)
    if cut_stream(step):
        return _went_up(run, step)
    earlier = models[:-1]
    cut_short = (
        not m.finish_reasons
        and bool(earlier)
        and all(s.model is not None and s.model.finish_reasons for s in earlier)
    )
    # A call with nothing around it that records no finish reason and says nothing of a
    # stream: an instrumentation may not record the reason at all.
    return cut_short and step.parent_span_id is not None and _went_up(run, step)


def fails_again(run: Run, step: Step) -> bool:
    """Whether a replay fails ``step`` again rather than serve what it holds: a model call
    that failed and so ended the run (:func:`failed_end`), or one whose answer was cut
    partway through, after which the agent went on (it caught the error: CrewAI runs the
    task again from its first request).  The latter ended in error with a stream's first
    deltas as its output (some instrumentations keep them) and no finish reason, no retry
    of it traced, a model call after it: served, those deltas would be taken for the
    answer, and the agent would not go the way it went."""
    if failed_end(run, step):
        return True
    m = step.model
    if step.kind != "model" or m is None or step.retried_as is not None:
        return False
    if step.status != "ERROR" or m.finish_reasons or not m.output_messages:
        return False
    models = [s for s in run.steps if s.kind == "model" and s.model is not None]
    return models[-1] is not step


def _went_up(run: Run, step: Step) -> bool:
    """Whether ``step``'s error reached a span around it (or it has none around it)."""
    by_id = {s.span_id: s for s in run.steps}
    parent = by_id.get(step.parent_span_id or "")
    if parent is None:
        return True
    while parent is not None:
        if parent.status == "ERROR":
            return True
        parent = by_id.get(parent.parent_span_id or "")
    return False
