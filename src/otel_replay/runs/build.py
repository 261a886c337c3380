"""Stored spans -> runs: dedupe, one tree per trace, steps in start order."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .. import attributes as A
from ..payload_attributes import BlobReader
from ..store.records import SpanRecord
from .model import Run, Step
from .steps import to_step

IDS = (A.USER_ID, A.TENANT_ID, A.SESSION_ID, A.CONVERSATION_ID)


def build_runs(
    spans: Iterable[SpanRecord],
    blobs: Callable[[SpanRecord], BlobReader | None] | None = None,
) -> list[Run]:
    """Group spans by trace and build each run's tree (a span exported twice counts once)."""
    by_trace: dict[str, dict[str, SpanRecord]] = {}
    for span in spans:
        seen = by_trace.setdefault(span.trace_id, {})
        old = seen.get(span.span_id)
        if old is None or _better(span, old):
            seen[span.span_id] = span
    runs = [_build(trace_id, list(found.values()), blobs) for trace_id, found in by_trace.items()]
    runs.sort(key=lambda r: (r.start_ns, r.run_id))
    return runs


def _better(new: SpanRecord, old: SpanRecord) -> bool:
    return (len(new.attributes), new.end_ns) > (len(old.attributes), old.end_ns)


def _build(
    trace_id: str,
    spans: list[SpanRecord],
    blobs: Callable[[SpanRecord], BlobReader | None] | None,
) -> Run:
    steps = {s.span_id: to_step(s, blobs(s) if blobs else None) for s in spans}
    roots: list[Step] = []
    for step in steps.values():
        parent = steps.get(step.parent_span_id) if step.parent_span_id else None
        (parent.children if parent is not None else roots).append(step)
    order: list[Step] = []

    def key(s: Step) -> tuple[int, str]:
        return (s.start_ns, s.span_id)

    stack = [(r, 0) for r in sorted(roots, key=key, reverse=True)]
    while stack:  # iterative pre-order: deep trees must not hit the recursion limit
        step, depth = stack.pop()
        step.depth, step.index = depth, len(order)
        order.append(step)
        step.children.sort(key=key)
        stack.extend((c, depth + 1) for c in reversed(step.children))
    roots.sort(key=key)
    first = min(spans, key=lambda s: (s.start_ns, s.span_id))
    return Run(
        run_id=trace_id,
        trace_ids=[trace_id],
        roots=roots,
        steps=order,
        fingerprint=_fingerprint(order),
        resource=dict(first.resource),
        sources=sorted({s.source for s in spans if s.source}),
    )


def _fingerprint(steps: list[Step]) -> dict[str, Any]:
    fp: dict[str, Any] = {}
    for step in steps:  # pre-order: the root's values win
        for key, value in step.attributes.items():
            if key.startswith(A.FP):
                fp.setdefault(key[len(A.FP) :], value)
            elif key in IDS:
                fp.setdefault(key, value)
    return fp
