"""Model calls that failed and that a replay fails again, rather than serve what they hold.

A replay serves each recorded answer; a call whose client raised (an answer cut partway
through, a failure it did not retry) has no answer to serve, or only the first deltas of
one.  Where the trace shows the run went the way that failure made it go (it ended there,
or the agent caught the error and went on), a replay fails the call again so that the
agent goes the same way: :func:`fails_again`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .model import Run, Step


def failed_end(run: Run, step: Step) -> bool:
    """Whether ``step`` is a model call that failed and so ended ``run``: no retry of it
    (``retried_as``), no model call after it, and the error went up (a span around it ended
    in error: the agent's, though a workflow span above it may not; or, for a call marked
    failed, nothing traced around it, the call a root of its own).  Its client raised (an
    answer cut partway through, a failure it did not retry) and the run with it: what a
    replay does again, not an answer the trace lacks.  What it holds of the answer is what
    came before the failure (none, or a stream's first deltas, which some instrumentations
    keep).  The call is marked failed, or, where an instrumentation ends a stream cut
    partway unfailed (pydantic-ai 2, OpenLLMetry's OpenAI), it has no finish reason where
    every call before it has one and a span around it failed.  A run that went on to end
    well after a failed last call is not one."""
    m = step.model
    if step.kind != "model" or m is None or step.retried_as is not None:
        return False
    models = [s for s in run.steps if s.kind == "model" and s.model is not None]
    if models[-1] is not step:
        return False
    if step.status == "ERROR":
        return _went_up(run, step)
    earlier = models[:-1]
    cut_short = (
        not m.finish_reasons
        and bool(earlier)
        and all(s.model is not None and s.model.finish_reasons for s in earlier)
    )
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
