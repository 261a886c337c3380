"""One model call traced twice: the two model steps become one.

Two tracers on one client record the same call twice: the Anthropic SDK's
built-in tracing inside an OpenLLMetry or OpenInference wrapper, or two
instrumentations of the OpenAI client.  The spans nest (the wrapper's span is
the parent of the SDK's), are siblings, or each start a trace of its own (a
wrapper that never makes its span current); they overlap in time and carry
the same request.  The step that recorded more becomes the model step and takes
what only the other recorded; the other stays in the tree as an "other" step
(``duplicate_of`` names the model step), so a run has one model step per
request and nothing is dropped.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from typing import Any

from .model import ModelCall, Run, Step
from .stitch import ConversationKeys, conversation, process_key


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
        _merge(keep, drop)
        merged += 1
    return merged


def merge_twin_traces(
    traces: Sequence[Run], keys: ConversationKeys | None = None
) -> dict[int, Run]:
    """Traces of one model call each that record the same call: ``id(twin) -> trace it joins``.

    Only calls with recorded input are paired (without it two calls cannot be
    told apart), and only within one process.
    """
    keys = keys or ConversationKeys()
    singles: dict[bytes, list[tuple[Run, Step]]] = {}
    joins: dict[int, Run] = {}
    for trace in sorted(traces, key=lambda t: (t.start_ns, t.run_id)):
        models = [s for s in trace.steps if s.kind == "model" and s.model is not None]
        if len(models) != 1 or any(s.kind in ("agent", "tool") for s in trace.steps):
            continue
        (step,) = models
        assert step.model is not None
        if step.model.input_messages is None:
            continue
        key = hashlib.blake2b(process_key(trace).encode(), digest_size=16)
        for k in keys(step):
            key.update(k.encode("utf-8", "surrogatepass"))
        seen = singles.setdefault(key.digest(), [])
        found = next((i for i, (_, s) in enumerate(seen) if _same_call(step, s)), None)
        if found is None:
            seen.append((trace, step))
            continue
        other_trace, other = seen.pop(found)
        pair = sorted(
            ((step, trace), (other, other_trace)),
            key=lambda p: (_richness(p[0]), p[0].duration_ms),
            reverse=True,
        )
        (keep, keep_trace), (drop, drop_trace) = pair
        _merge(keep, drop)
        joins[id(drop_trace)] = keep_trace
    return joins


def _merge(keep: Step, drop: Step) -> None:
    assert keep.model is not None and drop.model is not None
    _fill(keep.model, drop.model)
    drop.kind = "other"
    drop.model = None
    drop.duplicate_of = keep.span_id


def _same_call(a: Step, b: Step) -> bool:
    if b.kind != "model" or a.model is None or b.model is None:
        return False
    # One call: the spans overlap for most of the shorter one (not just touch).
    overlap = min(a.end_ns, b.end_ns) - max(a.start_ns, b.start_ns)
    if overlap <= 0 or 2 * overlap < min(a.end_ns - a.start_ns, b.end_ns - b.start_ns):
        return False
    ma, mb = a.model, b.model
    if ma.request_model and mb.request_model and ma.request_model != mb.request_model:
        return False
    if ma.input_messages is None or mb.input_messages is None:
        return ma.input_messages is None and mb.input_messages is None
    outputs = (ma.output_messages, mb.output_messages)
    if None not in outputs and _keys(outputs[0]) != _keys(outputs[1]):
        return False
    return list(conversation(ma.input_messages, ma.system_instructions)) == list(
        conversation(mb.input_messages, mb.system_instructions)
    )


def _keys(messages: list[dict[str, Any]] | None) -> list[str]:
    return list(conversation(messages, None))


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
    if any(m.get("role") == "system" for m in keep.input_messages or []):
        other = dataclasses.replace(other, system_instructions=None)  # not twice
    for f in dataclasses.fields(ModelCall):
        mine, theirs = getattr(keep, f.name), getattr(other, f.name)
        if isinstance(mine, dict) and isinstance(theirs, dict):
            for key, value in theirs.items():
                mine.setdefault(key, value)
        elif mine in (None, [], "") and theirs not in (None, [], ""):
            setattr(keep, f.name, theirs)
