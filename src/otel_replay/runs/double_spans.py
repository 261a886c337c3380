"""One model call traced twice: the two model steps become one.

Two tracers on one client record the same call twice: the Anthropic SDK's
built-in tracing inside an OpenLLMetry or OpenInference wrapper, or two
instrumentations of the OpenAI client.  The spans nest (the wrapper's span is
the parent of the SDK's) or are siblings; they overlap in time and carry the
same request.  The step that recorded more becomes the model step and takes
what only the other recorded; the other stays in the tree as an "other" step
(``duplicate_of`` names the model step), so a run has one model step per
request and nothing is dropped.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .model import ModelCall, Step
from .stitch import conversation


def merge_double_spans(steps: Sequence[Step]) -> int:
    """Merge the model steps of ``steps`` (one trace, tree built) that record one call."""
    by_id = {s.span_id: s for s in steps}
    merged = 0
    for step in steps:
        if step.kind != "model" or step.model is None:
            continue
        parent = by_id.get(step.parent_span_id or "")
        twins = [parent] if parent is not None else []
        twins += parent.children if parent is not None else []
        twins += step.children
        twin = next((t for t in twins if t is not step and _same_call(step, t)), None)
        if twin is None:
            continue
        # On a tie, the outer span: it timed the whole call.
        keep, drop = sorted((step, twin), key=lambda s: (_richness(s), s is parent), reverse=True)
        assert keep.model is not None and drop.model is not None
        _fill(keep.model, drop.model)
        drop.kind = "other"
        drop.model = None
        drop.duplicate_of = keep.span_id
        merged += 1
    return merged


def _same_call(a: Step, b: Step) -> bool:
    if b.kind != "model" or a.model is None or b.model is None:
        return False
    if a.start_ns > b.end_ns or b.start_ns > a.end_ns:
        return False
    ma, mb = a.model, b.model
    if ma.request_model and mb.request_model and ma.request_model != mb.request_model:
        return False
    if ma.input_messages is None or mb.input_messages is None:
        return ma.input_messages is None and mb.input_messages is None
    return list(conversation(ma.input_messages, ma.system_instructions)) == list(
        conversation(mb.input_messages, mb.system_instructions)
    )


def _richness(step: Step) -> tuple[int, int]:
    """(how many model fields are recorded, how many payloads carry a digest)."""
    m = step.model
    if m is None:
        return (0, 0)
    values = [getattr(m, f.name) for f in dataclasses.fields(m)]
    fields = sum(1 for v in values if v not in (None, {}, [], ""))
    exact = sum(1 for p in (m.input_payload, m.output_payload) if p is not None and p.sha256)
    return (fields, exact)


def _fill(keep: ModelCall, other: ModelCall) -> None:
    """Fields only ``other`` recorded go to ``keep``; params and usage key by key."""
    for f in dataclasses.fields(ModelCall):
        mine, theirs = getattr(keep, f.name), getattr(other, f.name)
        if isinstance(mine, dict) and isinstance(theirs, dict):
            for key, value in theirs.items():
                mine.setdefault(key, value)
        elif mine in (None, [], "") and theirs not in (None, [], ""):
            setattr(keep, f.name, theirs)
