"""A call a framework answered from its tool cache: a tool step that did not run the tool.

CrewAI caches what a tool returned by the tool's name and arguments, and answers a
later call of that tool with those arguments from its cache, without running the
tool (its span records the cached result as the call's output).  Its dialect reads
the key of each tool span (:func:`~otel_replay.dialects.crewai.cache_key`) and
whether an agent's cache is on (:func:`~otel_replay.dialects.crewai.tools_cached`).
A tool step whose key an earlier step of its trace, under an agent with the cache on,
returned a result for (no error, and run) is marked not run: its result is what the
model was sent, and a replay, in which the framework answers it from its cache again,
sees no call of the tool for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dialects import crewai
from .model import Step


def mark_cached_tools(steps: Sequence[Step]) -> int:
    """Mark the tool steps of ``steps`` (one trace, tree built) that a cache answered as not
    run; how many."""
    by_id = {s.span_id: s for s in steps}
    cached: set[str] = set()
    marked = 0
    for step in sorted(steps, key=lambda s: (s.start_ns, s.index)):
        t = step.tool
        if step.kind != "tool" or t is None or step.scope != crewai.SCOPE:
            continue
        key = crewai.cache_key(step.attributes)
        if key is None:
            continue
        if not _cache_on(step, by_id) or t.not_run or t.error is not None:
            continue
        if key in cached:
            t.not_run = True
            marked += 1
        else:
            cached.add(key)
    return marked


def _cache_on(step: Step, by_id: dict[str, Step]) -> bool:
    """Whether the nearest agent span above ``step`` that says so has its tool cache on."""
    seen: set[str] = set()
    parent = by_id.get(step.parent_span_id or "")
    while parent is not None and parent.span_id not in seen:
        seen.add(parent.span_id)
        on = crewai.tools_cached(parent.attributes) if parent.scope == crewai.SCOPE else None
        if on is not None:
            return on
        parent = by_id.get(parent.parent_span_id or "")
    return False
