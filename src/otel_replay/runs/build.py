"""Stored spans and GenAI log events -> runs: a tree per trace, client-only traces stitched."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from .. import attributes as A
from ..otlp.errors import FormatError
from ..otlp.records import LogRecord, SpanRecord
from ..payload import references as content_refs
from ..payload.attributes import BlobReader
from .double_spans import merge_twin_traces
from .log_events import join_events
from .model import Batch, PendingRun, Run, Step
from .repairs import JOINED_REPAIRS, RUN_REPAIRS, TRACE_REPAIRS, Steps, apply_repairs
from .steps import span_kind, to_step
from .stitch import ConversationKeys, stitch

#: Identity attributes copied into :attr:`Run.fingerprint` under their own names.
IDS = (A.USER_ID, A.TENANT_ID, A.SESSION_ID, A.CONVERSATION_ID)

#: Where a span's payload refs resolve: source file -> blob reader, or a function of it.
BlobReaders: TypeAlias = "Mapping[str, BlobReader] | Callable[[str], BlobReader | None]"


def build_runs(
    spans: Iterable[SpanRecord],
    blobs: BlobReaders | None = None,
    logs: Iterable[LogRecord] = (),
) -> list[Run]:
    """Group spans into runs, each a tree in start order.

    A run is one trace, or several client-only traces (one model call each)
    stitched into one conversation (see :mod:`.stitch`); its id is the id of
    its first trace.  Model steps whose content was sent as GenAI events
    (span events, or ``logs`` tied to the span by id) get it from them before
    stitching.  Tool calls no tool span records get derived tool steps (see
    :mod:`.derived_tools`).  A span exported twice counts once (the copy with
    more attributes, then the later end, wins).  Spans may come in any order;
    a span whose parent is absent becomes a root of its run, so nothing is
    dropped.  ``blobs`` gives the blob reader for a span's
    :attr:`~SpanRecord.source` file.  Runs are sorted by start time.
    """
    return assemble(build_traces(spans, blobs, logs))


def build_traces(
    spans: Iterable[SpanRecord],
    blobs: BlobReaders | None = None,
    logs: Iterable[LogRecord] = (),
    *,
    pending: bool = False,
    batched: bool = True,
) -> list[Run]:
    """The first half of :func:`build_runs`: a tree per trace, its events joined.

    Each trace stands alone so far; only traces that :func:`~.stitch.is_piece`
    says are client-only depend on other traces in :func:`assemble`.  With
    ``pending``, a trace that holds an agent's run (that no other trace
    changes) is a :class:`~.model.PendingRun`: its steps are built when first
    asked for (runs that may not all be used); else every trace is built now,
    the cheaper way to build them all.  ``batched``: once a few pending runs
    are built, the rest are built together (see :class:`~.model.Batch`); a
    reader that asks for the steps of a few runs only, and for their spans
    otherwise (a listing), passes False.
    """
    by_trace: dict[str, dict[str, SpanRecord]] = {}
    for span in spans:
        seen = by_trace.setdefault(span.trace_id, {})
        old = seen.get(span.span_id)
        if old is None or _better(span, old):
            seen[span.span_id] = span
    reader = _reader(blobs)
    logs = logs if isinstance(logs, list) else list(logs)
    traces: list[Run] = []
    built: list[Run] = []
    batch = Batch() if batched else None
    stores = content_refs.allowed() if pending else ()  # payloads resolve as now
    for tid, found in by_trace.items():
        records = list(found.values())
        if pending and not logs and _whole_run(records):
            # Nothing outside the trace changes it: its steps can wait until asked for.
            traces.append(_pending(tid, records, reader, batch, stores))
        else:
            built.append(_build(tid, records, reader))
            traces.append(built[-1])
    # Content from events first: stitching follows message continuity.
    join_events(built, logs)
    for trace in built:
        _fix_trace(trace)
    return traces


def _fix_trace(trace: Run) -> None:
    """What a trace's own steps tell of each other (:data:`~.repairs.TRACE_REPAIRS`)."""
    apply_repairs(TRACE_REPAIRS, Steps(trace.roots, trace.steps))


def _whole_run(spans: list[SpanRecord]) -> bool:
    """The spans of a trace hold a run of their own: an agent's span, beside other spans
    than agents made (see :func:`holds_no_run`).  Such a trace is no piece of another
    run's conversation nor a second trace of one call, so :func:`assemble` needs no step
    of it."""
    agent = beside = False  # beside: a span no agent was made by
    unnamed = []
    # Last first: a run's root ends last, and most often it names the agent's operation.
    for span in reversed(spans):
        op = span.attributes.get(A.OPERATION_NAME)
        op = op if isinstance(op, str) else None  # a list or map names no operation
        beside = beside or op != A.OP_CREATE_AGENT
        if op not in A.AGENT_OPERATIONS:
            unnamed.append(span)
        elif not agent:
            agent = span_kind(span) == "agent"
        if agent and beside:
            return True
    # No span that names an agent's operation is one: a dialect may still make one so.
    return beside and any(span_kind(s) == "agent" for s in unnamed)


def _pending(
    trace_id: str,
    spans: list[SpanRecord],
    blobs: Callable[[str], BlobReader | None],
    batch: Batch | None,
    stores: content_refs.Allowed,
) -> PendingRun:
    """A run of ``spans`` built when first asked for, its payloads resolved under
    ``stores`` (:func:`~otel_replay.payload.references.allowed` at load)."""

    def build() -> tuple[list[Step], list[Step], dict[str, Any]]:
        with content_refs.allowing(stores):
            trace = _build(trace_id, spans, blobs)
            join_events([trace])
            _fix_trace(trace)
        # What _complete does for a trace alone.
        return (*_repaired(trace.roots, trace.steps, joined=False), trace.fingerprint)

    first = min(spans, key=_first)
    return PendingRun.later(
        trace_id,
        build,
        span=(first.start_ns, max(map(_end, spans))),
        resource=dict(first.resource),
        sources=sorted({s.source for s in spans if s.source}),
        batch=batch,
        spans=spans,
    )


def assemble(traces: list[Run]) -> list[Run]:
    """The second half of :func:`build_runs`: traces of one call twice merged,
    client-only traces stitched, every run completed; sorted by start.  A trace
    that records no run (:func:`holds_no_run`) is no run."""
    keys = ConversationKeys()  # shared: both passes compare the calls' messages
    pending = [t for t in traces if isinstance(t, PendingRun)]
    traces = [t for t in traces if not isinstance(t, PendingRun) and not holds_no_run(t)]
    twins = merge_twin_traces(traces, keys)
    joining: dict[int, list[Run]] = {}
    for trace in traces:
        if id(trace) in twins:
            joining.setdefault(id(twins[id(trace)]), []).append(trace)
    groups = stitch([t for t in traces if id(t) not in twins], keys)
    runs = [_complete(_with_twins(group, joining)) for group in groups]
    for trace in pending:  # completed when built (see _pending)
        trace.read_faults = _distinct(trace.read_faults)
        runs.append(trace)
    runs.sort(key=lambda r: (r.start_ns, r.run_id))
    return runs


def holds_no_run(trace: Run) -> bool:
    """A trace that records no agent run, though it looks like one's start:

    - ``create_agent`` spans alone: an agent made, no run of it (AutoGen traces
      each agent's construction in a trace of its own);
    - one span, no error, that only returned an object (its recorded output is
      the object's default ``<... object at 0x...>`` text): the call handed its
      work on and the run is traced elsewhere (CrewAI's streaming ``kickoff``
      returns a stream and runs the crew again, in a trace of its own).
    """
    steps = trace.steps
    if all(s.attributes.get(A.OPERATION_NAME) == A.OP_CREATE_AGENT for s in steps):
        return True
    if len(steps) != 1:
        return False
    (only,) = steps
    output = only.attributes.get("output.value")
    return (
        only.kind == "other"
        and only.status != "ERROR"
        and isinstance(output, str)
        and _OBJECT_REPR.fullmatch(output) is not None
    )


#: Python's default text of an object: ``<package.Class object at 0x7f...>``.
_OBJECT_REPR = re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>")


def _reader(blobs: BlobReaders | None) -> Callable[[str], BlobReader | None]:
    if blobs is None:
        return lambda source: None
    if isinstance(blobs, Mapping):
        return blobs.get
    return blobs


def _better(new: SpanRecord, old: SpanRecord) -> bool:
    return (len(new.attributes), new.end_ns) > (len(old.attributes), old.end_ns)


#: The first span of a trace (by start, then id), the end of a span.
_first, _end = operator.attrgetter("start_ns", "span_id"), operator.attrgetter("end_ns")


def _key(step: Step) -> tuple[int, str]:
    return (step.start_ns, step.span_id)


def _build(
    trace_id: str, spans: list[SpanRecord], blobs: Callable[[str], BlobReader | None]
) -> Run:
    steps = {s.span_id: to_step(s, blobs(s.source)) for s in spans}
    roots: list[Step] = []
    for step in steps.values():
        parent = steps.get(step.parent_span_id) if step.parent_span_id else None
        if parent is None or parent is step:
            roots.append(step)
        else:
            parent.children.append(step)
    order = _preorder(roots)
    if len(order) < len(steps):
        # Corrupt parent links can form a cycle with no root: break it at its
        # earliest span rather than drop the spans.
        placed = {s.span_id for s in order}
        for step in sorted(steps.values(), key=_key):
            if step.span_id in placed:
                continue
            parent = steps[step.parent_span_id or ""]
            # By identity: Step equality compares children, endless in a cycle.
            parent.children = [c for c in parent.children if c is not step]
            roots.append(step)
            order = _preorder(roots)
            placed = {s.span_id for s in order}
    roots.sort(key=_key)
    first = min(spans, key=_first)
    return Run(
        run_id=trace_id,
        trace_ids=[trace_id],
        roots=roots,
        steps=order,
        fingerprint=_fingerprint(order),
        resource=dict(first.resource),
        sources=sorted({s.source for s in spans if s.source}),
    )


def _with_twins(group: list[Run], joining: Mapping[int, list[Run]]) -> list[Run]:
    """``group`` with the traces that record its calls a second time, in start order."""
    extra = [t for piece in group for t in joining.get(id(piece), ())]
    if not extra:
        return group
    return sorted(group + extra, key=lambda t: (t.start_ns, t.run_id))


def _distinct(faults: Iterable[FormatError]) -> list[FormatError]:
    return list({str(f): f for f in faults}.values())


def _complete(traces: list[Run]) -> Run:
    """One run from its traces (in start order): lost parts of turns recovered, call ids set right,
    tool spans joined to their calls, derived tool steps added."""
    first = traces[0]
    if len(traces) == 1:
        roots, steps = first.roots, first.steps
    else:
        roots = sorted((r for t in traces for r in t.roots), key=_key)
        steps = [s for t in traces for s in t.steps]
    roots, steps = _repaired(roots, steps, joined=len(traces) > 1)
    fingerprint: dict[str, Any] = {}
    for trace in traces:
        for key, value in trace.fingerprint.items():
            fingerprint.setdefault(key, value)
    return Run(
        run_id=first.run_id,
        trace_ids=[t.run_id for t in traces],
        roots=roots,
        steps=steps,
        fingerprint=fingerprint,
        resource=first.resource,
        sources=sorted({src for t in traces for src in t.sources}),
        read_faults=_distinct(f for t in traces for f in t.read_faults),
    )


def _repaired(
    roots: list[Step], steps: list[Step], *, joined: bool
) -> tuple[list[Step], list[Step]]:
    """A run's roots and steps once its model calls and tool steps are set right
    (:data:`~.repairs.RUN_REPAIRS`; ``joined``: the steps of several traces, to be put in
    one order, :data:`~.repairs.JOINED_REPAIRS` first)."""
    given = Steps(roots, steps)
    if joined:
        apply_repairs(JOINED_REPAIRS, given)  # none adds steps; joined steps are ordered anew
    if apply_repairs(RUN_REPAIRS, given) or joined:
        roots.sort(key=_key)
        steps = _preorder(roots)
    return roots, steps


def _preorder(roots: list[Step]) -> list[Step]:
    """Steps in pre-order with ``index`` and ``depth`` set; children sorted by start."""
    order: list[Step] = []
    stack = [(r, 0) for r in sorted(roots, key=_key, reverse=True)]
    while stack:  # iterative: deep trees must not hit the recursion limit
        step, depth = stack.pop()
        step.depth, step.index = depth, len(order)
        order.append(step)
        step.children.sort(key=_key)
        stack.extend((c, depth + 1) for c in reversed(step.children))
    return order


def _fingerprint(steps: list[Step]) -> dict[str, Any]:
    fp: dict[str, Any] = {}
    for step in steps:  # pre-order: the root's values win
        for key, value in step.attributes.items():
            if key.startswith(A.FP):
                fp.setdefault(key[len(A.FP) :], value)
            elif key in IDS:
                fp.setdefault(key, value)
    return fp
