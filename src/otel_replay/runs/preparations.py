"""Framework spans that look like model calls but only prepare one: not model steps.

A framework traces its own methods around a model call, and an
instrumentation may give such a method the model-call kind: LlamaIndex's
``_prepare_chat_with_tools`` is an OpenInference ``LLM`` span that builds
the request the next span sends.  It records no request messages and nothing
a model answers (no output, no usage, no finish reason, no response id), and
a model step of the same parent that made the call follows it: one that
answered, or recorded its request, or failed (a stream cut partway, which
records neither).  Such a step is an ``other`` step: one model step per
request.
"""

from __future__ import annotations

from collections.abc import Sequence

from .model import Step


def demote_preparations(steps: Sequence[Step]) -> int:
    """Make the preparing model steps of ``steps`` (one trace, tree built) ``other``."""
    by_id = {s.span_id: s for s in steps}
    demoted = 0
    for step in steps:
        if step.kind != "model" or not _records_no_call(step):
            continue
        parent = by_id.get(step.parent_span_id or "")
        siblings = parent.children if parent is not None else []
        if any(s.kind == "model" and s.start_ns >= step.end_ns and _called(s) for s in siblings):
            step.kind = "other"
            step.model = None
            demoted += 1
    return demoted


def _records_no_call(step: Step) -> bool:
    m = step.model
    return (
        m is not None
        and step.status != "ERROR"
        and m.input_messages is None
        and not _answered(step)
    )


def _called(step: Step) -> bool:
    """Whether a model step records a call made: what it sent, what came back, or its failure."""
    m = step.model
    return m is not None and (
        m.input_messages is not None or step.status == "ERROR" or _answered(step)
    )


def _answered(step: Step) -> bool:
    m = step.model
    return m is not None and bool(m.output_messages or m.usage or m.finish_reasons or m.response_id)
