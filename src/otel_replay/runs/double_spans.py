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

import bisect
import dataclasses
import hashlib
import re
from collections.abc import Sequence
from typing import Any, Protocol

from .model import ModelCall, Run, Step
from .stitch import ConversationKeys, conversation, process_key


def merge_double_spans(steps: Sequence[Step]) -> int:
    """Merge the model steps of ``steps`` (one trace, tree built) that record one call."""
    by_id = {s.span_id: s for s in steps}
    siblings = _Overlapping()
    merged = 0
    for step in steps:
        if step.kind != "model" or step.model is None:
            continue
        parent = by_id.get(step.parent_span_id or "")
        twins = [parent] if parent is not None else []
        if parent is not None:
            twins += siblings.of(parent, step)
        twins += step.children
        twin = next(
            (
                t
                for t in twins
                if t is not step and t.kind == "model" and _same_call(step, t, _only_child(step, t))
            ),
            None,
        )
        if twin is None:
            continue
        # On a tie, the outer span: it timed the whole call.
        keep, drop = sorted((step, twin), key=lambda s: (_richness(s), s is parent), reverse=True)
        _merge(keep, drop)
        merged += 1
    return merged


class _Overlapping:
    """A parent's model children that overlap a step in time, in their order among the children.

    Only those can record the same call (:func:`_same_call` asks for most of
    the shorter span in common): a run of thousands of sequential turns
    compares each with its few neighbours, not with every sibling.
    """

    def __init__(self) -> None:
        self._by_parent: dict[
            int, tuple[list[int], list[tuple[int, int, Step]], int, set[int] | None]
        ] = {}

    def of(self, parent: Step, step: Step) -> list[Step]:
        """The model children of ``parent`` that overlap ``step`` (itself, maybe, among them)."""
        index = self._by_parent.get(id(parent))
        if index is None:
            models = sorted(
                (c.start_ns, i, c) for i, c in enumerate(parent.children) if c.kind == "model"
            )
            longest = max((c.end_ns - c.start_ns for _, _, c in models), default=0)
            starts = [m[0] for m in models]
            index = self._by_parent[id(parent)] = (starts, models, longest, _apart(models))
        starts, models, longest, apart = index
        if apart is not None and id(step) in apart:
            return []  # the children ran one after another: none overlaps it
        lo = bisect.bisect_left(starts, step.start_ns - longest)
        hi = bisect.bisect_left(starts, step.end_ns)
        near = [(i, c) for _, i, c in models[lo:hi] if c.end_ns > step.start_ns]
        return [c for _, c in sorted(near, key=lambda x: x[0])]


def _apart(models: list[tuple[int, int, Step]]) -> set[int] | None:
    """The ids of ``models`` (in start order) when they ran one after another
    (:func:`sequential`); else None."""
    if not sequential([c for _, _, c in models]):
        return None
    return {id(c) for _, _, c in models}


class Timed(Protocol):
    """A span or step: when it started and ended."""

    @property
    def start_ns(self) -> int: ...
    @property
    def end_ns(self) -> int: ...


def sequential(spans: Sequence[Timed]) -> bool:
    """Whether ``spans`` (in start order) each start once every one before it ended, as
    sequential calls do."""
    ended: int | None = None
    for c in spans:
        if ended is not None and c.start_ns < ended:
            return False
        ended = c.end_ns if ended is None else max(ended, c.end_ns)
    return True


def merge_twin_traces(
    traces: Sequence[Run], keys: ConversationKeys | None = None
) -> dict[int, Run]:
    """Traces of one model call each that record the same call: ``id(twin) -> trace it joins``.

    Only within one process, and only calls that can be told apart: by their
    recorded input, or by the response id both recorded (the Anthropic SDK's
    own tracing records metadata alone, the response id among it).
    """
    keys = keys or ConversationKeys()
    ordered = sorted(traces, key=lambda t: (t.start_ns, t.run_id))
    joins: dict[int, Run] = {}
    for keep, drop in pair_twins([twin_facts(t, keys) for t in ordered]):
        _merge(_one_call(ordered[keep]), _one_call(ordered[drop]))
        joins[id(ordered[drop])] = ordered[keep]
    return joins


@dataclasses.dataclass(frozen=True)
class TwinFacts:
    """What pairing needs of a trace of one model call: small and picklable (see :mod:`.stream`)."""

    #: The process and the call's conversation, hashed: twins share it.
    bucket: bytes
    start_ns: int
    end_ns: int
    request_model: str | None
    #: Keys of the output messages; None when the output was not recorded.
    outputs: tuple[str, ...] | None
    #: Whether the output holds any message (the twin that lacks one takes the other's).
    answered: bool
    rank: tuple[tuple[int, int], float]
    #: The process and the response id, hashed (None without a response id): twins share it.
    answer_key: bytes | None = None
    #: The process and the token usage, hashed (None without usage): twins share it too.
    usage_key: bytes | None = None
    #: Whether the call's input was recorded.
    has_input: bool = True


def twin_facts(trace: Run, keys: ConversationKeys) -> TwinFacts | None:
    """The :class:`TwinFacts` of a trace of one model call with recorded input or a response
    id, else None."""
    models = [s for s in trace.steps if s.kind == "model" and s.model is not None]
    if len(models) != 1 or any(s.kind in ("agent", "tool") for s in trace.steps):
        return None
    (step,) = models
    m = step.model
    assert m is not None
    process = process_key(trace)
    tokens = (m.usage.get("input_tokens"), m.usage.get("output_tokens"))
    answer_key = _hashed(process, m.response_id) if m.response_id else None
    usage_key = _hashed(process, str(tokens)) if None not in tokens else None
    if m.input_messages is None and answer_key is None and usage_key is None:
        return None
    bucket = hashlib.blake2b(process.encode(), digest_size=16)
    for k in keys(step) if m.input_messages is not None else ():
        bucket.update(k.encode("utf-8", "surrogatepass"))
    return TwinFacts(
        answer_key=answer_key,
        usage_key=usage_key,
        has_input=m.input_messages is not None,
        bucket=bucket.digest(),
        start_ns=step.start_ns,
        end_ns=step.end_ns,
        request_model=m.request_model,
        outputs=None if m.output_messages is None else tuple(_keys(m.output_messages)),
        answered=bool(m.output_messages),
        rank=(_richness(step), step.duration_ms),
    )


def _hashed(process: str, value: str) -> bytes:
    return hashlib.blake2b(
        f"{process}\0{value}".encode("utf-8", "surrogatepass"), digest_size=16
    ).digest()


def pair_twins(facts: Sequence[TwinFacts | None]) -> list[tuple[int, int]]:
    """(kept, merged into it) index pairs of traces (in start order) recording one call."""
    singles: dict[bytes, list[int]] = {}
    pairs: list[tuple[int, int]] = []
    by_answer: dict[bytes, int] = {}
    paired: set[int] = set()
    for i, fact in enumerate(facts):
        if fact is None or fact.answer_key is None:
            continue
        other = by_answer.pop(fact.answer_key, None)
        theirs = facts[other] if other is not None else None
        if (
            other is None
            or theirs is None
            or not _overlap(fact.start_ns, fact.end_ns, theirs.start_ns, theirs.end_ns)
        ):
            by_answer[fact.answer_key] = i  # one call per id at a time (a replay may repeat ids)
            continue
        keep, drop = sorted((i, other), key=lambda j: _rank(facts[j]), reverse=True)
        pairs.append((keep, drop))
        paired.update((i, other))
    # A call whose input was not recorded (metadata-only tracing) and a call that recorded
    # its input, with the same token usage over the same time: one call, when only one fits.
    for i, fact in enumerate(facts):
        if fact is None or i in paired or fact.has_input or fact.usage_key is None:
            continue
        fits = [
            j
            for j, other in enumerate(facts)
            if other is not None
            and j not in paired
            and other.has_input
            and other.usage_key == fact.usage_key
            and same_model(fact.request_model, other.request_model)
            and _overlap(fact.start_ns, fact.end_ns, other.start_ns, other.end_ns)
        ]
        if len(fits) == 1:
            keep, drop = sorted((i, fits[0]), key=lambda j: _rank(facts[j]), reverse=True)
            pairs.append((keep, drop))
            paired.update((i, fits[0]))
    for i, fact in enumerate(facts):
        if fact is None or i in paired or not fact.has_input:
            continue  # without its input a call pairs by its answer or usage only
        seen = singles.setdefault(fact.bucket, [])
        found = next((k for k, j in enumerate(seen) if _same_facts(fact, facts[j])), None)
        if found is None:
            seen.append(i)
            continue
        other = seen.pop(found)
        keep, drop = sorted((i, other), key=lambda j: _rank(facts[j]), reverse=True)
        pairs.append((keep, drop))
    return pairs


def _rank(fact: TwinFacts | None) -> tuple[tuple[int, int], float]:
    assert fact is not None
    return fact.rank


def _same_facts(a: TwinFacts, b: TwinFacts | None) -> bool:
    """One call: same bucket (process and conversation), overlapping, same model and answer."""
    if b is None or not _overlap(a.start_ns, a.end_ns, b.start_ns, b.end_ns):
        return False
    if not same_model(a.request_model, b.request_model):
        return False
    return a.outputs is None or b.outputs is None or a.outputs == b.outputs


def _one_call(trace: Run) -> Step:
    return next(s for s in trace.steps if s.kind == "model" and s.model is not None)


def _overlap(a_start: int, a_end: int, b_start: int, b_end: int) -> bool:
    """The spans overlap for most of the shorter one (not just touch)."""
    overlap = min(a_end, b_end) - max(a_start, b_start)
    return overlap > 0 and 2 * overlap >= min(a_end - a_start, b_end - b_start)


def _merge(keep: Step, drop: Step) -> None:
    assert keep.model is not None and drop.model is not None
    _fill(keep.model, drop.model)
    drop.kind = "other"
    drop.model = None
    drop.duplicate_of = keep.span_id


def _only_child(a: Step, b: Step) -> bool:
    """One of the two is the other's only model child (a call traced around and within)."""
    for outer, inner in ((a, b), (b, a)):
        if inner.parent_span_id == outer.span_id:
            return [c for c in outer.children if c.kind == "model"] == [inner]
    return False


def _same_call(a: Step, b: Step, nested: bool = False) -> bool:
    if b.kind != "model" or a.model is None or b.model is None:
        return False
    if not _overlap(a.start_ns, a.end_ns, b.start_ns, b.end_ns):
        return False
    ma, mb = a.model, b.model
    if not same_model(ma.request_model, mb.request_model):
        return False
    if ma.input_messages is None or mb.input_messages is None:
        # A span with no input recorded is the call of the model span it is the only
        # model step in (or that is the only one in it); elsewhere it could be any call.
        return nested or (ma.input_messages is None and mb.input_messages is None)
    outputs = (ma.output_messages, mb.output_messages)
    if None not in outputs and _keys(outputs[0]) != _keys(outputs[1]):
        return False
    return list(conversation(ma.input_messages, ma.system_instructions)) == list(
        conversation(mb.input_messages, mb.system_instructions)
    )


#: A model release suffix: ``-2024-07-18``, ``-20250929``, ``-latest``.
_RELEASE = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{8}|latest)")


def same_model(a: str | None, b: str | None) -> bool:
    """Whether two spans name one model (unknown names agree with anything).

    A router names it with its route (LiteLLM: ``openai/responses/gpt-4o-mini``)
    and an instrumentation inside it with the dated release the answer named
    (``gpt-4o-mini-2024-07-18``, ``claude-sonnet-4-5-20250929``): the last path
    segments agree, or one is the other with a release date.
    """
    if not a or not b or a == b:
        return True
    a, b = a.rsplit("/", 1)[-1], b.rsplit("/", 1)[-1]
    short, long = sorted((a, b), key=len)
    return a == b or (long.startswith(short) and _RELEASE.fullmatch(long[len(short) :]) is not None)


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
