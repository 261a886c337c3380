"""Compare two runs step by step: a recording and its replay, or two recordings.

Steps are aligned as sequences, not by position: each step has a signature
(its depth in the tree below the shallowest model or tool step, its kind, and
the tool name or the agent's span name; a model step is just "model"), and
the two sequences of signatures are aligned by their longest matching blocks
(:class:`difflib.SequenceMatcher`).  An inserted tool call therefore shows
as one added step, and every later step still meets its counterpart.  Steps
paired this way are then compared field by field: messages, arguments,
results, errors, parameters, model ids, call ids, and the duration when it
differs by more than a threshold.

By default the ``other`` steps (HTTP spans, a call's second trace) are left
out: they are plumbing, not the agent's behaviour.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Sequence
from typing import Any

from .. import messages as M
from .. import text_diff
from ..payload import codec as payload
from .model import Run, Step
from .summary import answer_of
from .verdict import outcome

#: Steps whose durations differ by less than this many milliseconds count as equally timed.
DEFAULT_TIME_THRESHOLD_MS = 1000.0


@dataclasses.dataclass(frozen=True)
class Change:
    """One field that differs between the paired steps."""

    field: str
    a: Any
    b: Any

    def to_json(self) -> dict[str, Any]:
        return {"field": self.field, "a": self.a, "b": self.b}


@dataclasses.dataclass(frozen=True)
class Pair:
    """A step of run A and its counterpart in run B (either may be None)."""

    a: Step | None
    b: Step | None
    changes: tuple[Change, ...] = ()

    @property
    def status(self) -> str:
        if self.a is None:
            return "added"
        if self.b is None:
            return "removed"
        return "changed" if self.changes else "equal"

    def label(self) -> str:
        parts = []
        if self.a is not None:
            parts.append("A " + self.a.label())
        if self.b is not None:
            parts.append("B " + self.b.label())
        return " / ".join(parts)

    def to_json(self) -> dict[str, Any]:
        def ref(s: Step | None) -> dict[str, Any] | None:
            if s is None:
                return None
            name = s.tool.tool_name if s.tool is not None else s.name
            return {"index": s.index, "span_id": s.span_id, "kind": s.kind, "name": name}

        return {
            "status": self.status,
            "a": ref(self.a),
            "b": ref(self.b),
            "changes": [c.to_json() for c in self.changes],
        }


@dataclasses.dataclass(frozen=True)
class RunDiff:
    a: Run
    b: Run
    pairs: tuple[Pair, ...]
    #: Run-level differences: the final answer (None for a run that raised), the error
    #: the run raised (``TYPE: MESSAGE``, None when it did not).
    run_changes: tuple[Change, ...]

    @property
    def equal(self) -> bool:
        return not self.run_changes and all(p.status == "equal" for p in self.pairs)

    @property
    def first_divergence(self) -> Pair | None:
        """The first model or tool step that differs (an agent step only when none does).

        An agent step differs when its answer does, which is the consequence of
        a step inside it: the cause is the step worth naming.
        """
        differ = [p for p in self.pairs if p.status != "equal"]

        def leaf(p: Pair) -> bool:
            return any(s is not None and s.kind in ("model", "tool") for s in (p.a, p.b))

        return next((p for p in differ if leaf(p)), differ[0] if differ else None)

    def to_json(self) -> dict[str, Any]:
        first = self.first_divergence
        return {
            "a": self.a.run_id,
            "b": self.b.run_id,
            "equal": self.equal,
            "first_divergence": first.to_json() if first is not None else None,
            "run_changes": [c.to_json() for c in self.run_changes],
            "steps": [p.to_json() for p in self.pairs],
        }


def signature(step: Step, base: int = 0) -> tuple[int, str, str]:
    """What must agree for two steps to be counterparts.

    Depth counts from ``base``, the depth of the run's shallowest model or
    tool step: an agent span wrapping the calls in one run and not in the
    other (client-only tracing) does not set every call apart.
    """
    depth = step.depth - base
    if step.tool is not None:
        return (depth, "tool", step.tool.tool_name)
    if step.kind == "model":
        return (depth, "model", "")
    return (depth, step.kind, step.name)


def _base(steps: Sequence[Step]) -> int:
    return min((s.depth for s in steps if s.kind in ("model", "tool")), default=0)


def _steps(run: Run, include_other: bool) -> list[Step]:
    return [s for s in run.steps if include_other or s.kind != "other"]


def diff_runs(
    a: Run,
    b: Run,
    *,
    time_threshold_ms: float | None = DEFAULT_TIME_THRESHOLD_MS,
    include_other: bool = False,
) -> RunDiff:
    """Align ``a`` and ``b`` and say, per step, what changed.

    ``time_threshold_ms=None`` leaves durations out of the comparison.
    """
    sa, sb = _steps(a, include_other), _steps(b, include_other)
    ba, bb = _base(sa), _base(sb)
    matcher = difflib.SequenceMatcher(
        None, [signature(s, ba) for s in sa], [signature(s, bb) for s in sb], autojunk=False
    )
    pairs: list[Pair] = []
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            for x, y in zip(sa[i1:i2], sb[j1:j2], strict=True):
                pairs.append(Pair(x, y, tuple(compare_steps(x, y, time_threshold_ms))))
            continue
        # A replaced block: what run A did there, then what run B did instead.
        pairs.extend(Pair(x, None) for x in sa[i1:i2])
        pairs.extend(Pair(None, y) for y in sb[j1:j2])
    run_changes: list[Change] = []
    ea, eb = outcome(a), outcome(b)
    fa, fb = answer_of(a), answer_of(b)  # None for a run that raised
    if fa != fb:
        run_changes.append(Change("final_output", fa, fb))
    if not ea.same_error(eb):
        run_changes.append(Change("raised", ea.error, eb.error))
    return RunDiff(a, b, tuple(pairs), tuple(run_changes))


def _same(x: Any, y: Any) -> bool:
    return payload.canonical(payload.plain(x)) == payload.canonical(payload.plain(y))


def _messages(value: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    return None if value is None else M.normalize(value)


def compare_steps(a: Step, b: Step, time_threshold_ms: float | None) -> list[Change]:
    """The fields that differ between two counterpart steps."""
    fields: list[tuple[str, Any, Any]] = []
    if a.kind == "agent" and a.name != b.name:
        fields.append(("name", a.name, b.name))
    ma, mb = a.model, b.model
    if a.kind == "model" and ma is not None and mb is not None:
        fields += [
            ("provider", ma.provider, mb.provider),
            ("request_model", ma.request_model, mb.request_model),
            ("response_model", ma.response_model, mb.response_model),
            ("params", ma.params, mb.params),
            ("system_instructions", ma.system_instructions, mb.system_instructions),
            ("tool_definitions", ma.tool_definitions, mb.tool_definitions),
            ("input_messages", _messages(ma.input_messages), _messages(mb.input_messages)),
            ("output_messages", _messages(ma.output_messages), _messages(mb.output_messages)),
        ]
    elif a.kind == "agent" and ma is not None and mb is not None:
        fields += [
            ("input_messages", _messages(ma.input_messages), _messages(mb.input_messages)),
            ("output_messages", _messages(ma.output_messages), _messages(mb.output_messages)),
        ]
    ta, tb = a.tool, b.tool
    if ta is not None and tb is not None:
        ea = {"type": ta.error.type, "message": ta.error.message} if ta.error else None
        eb = {"type": tb.error.type, "message": tb.error.message} if tb.error else None
        fields += [
            ("call_id", ta.call_id, tb.call_id),
            ("arguments", ta.arguments, tb.arguments),
            ("result", ta.result, tb.result),
            ("error", ea, eb),
        ]
    if a.status != b.status and "ERROR" in (a.status, b.status):
        fields.append(("status", a.status, b.status))
    changes = [Change(f, x, y) for f, x, y in fields if not _same(x, y)]
    if time_threshold_ms is not None and a.timed and b.timed:
        da, db = a.duration_ms, b.duration_ms
        if abs(da - db) > time_threshold_ms:
            changes.append(Change("duration_ms", round(da, 3), round(db, 3)))
    return changes


def describe(change: Change) -> str:
    """A readable account of one change: a dict's added/removed/changed keys, the first
    message that differs, or how one value became the other (see :func:`show_change`)."""
    a, b = payload.plain(change.a), payload.plain(change.b)
    if isinstance(a, dict) and isinstance(b, dict):
        added = sorted(set(b) - set(a))
        removed = sorted(set(a) - set(b))
        changed = sorted(k for k in set(a) & set(b) if not _same(a[k], b[k]))
        bits = []
        if added:
            bits.append("added " + ", ".join(map(str, added)))
        if removed:
            bits.append("removed " + ", ".join(map(str, removed)))
        bits += [f"{k}: {show_change(a[k], b[k])}" for k in changed[:5]]
        return "; ".join(bits)
    if isinstance(a, list) and isinstance(b, list) and change.field.endswith("messages"):
        return _message_delta(a, b)
    return show_change(a, b)


def _message_delta(a: Sequence[Any], b: Sequence[Any]) -> str:
    n = next(
        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if not _same(x, y)),
        min(len(a), len(b)),
    )
    if n == len(a) == len(b):
        return "same messages"
    bits = [f"{len(a)} -> {len(b)} messages" if len(a) != len(b) else f"{len(a)} messages"]
    bits.append(f"first difference at message {n}")
    if n < len(a) and n < len(b):
        bits += [f"{where}: {shown}" for where, shown in _leaf_changes(a[n], b[n], "")[:3]]
    elif n < len(b):
        bits.append(f"added {text_diff.inline('', _text(b[n]))}")
    else:
        bits.append(f"removed {text_diff.inline(_text(a[n]), '')}")
    return ": ".join(bits[:1]) + "; " + "; ".join(bits[1:])


def _leaf_changes(a: Any, b: Any, where: str) -> list[tuple[str, str]]:
    """Where two values differ, as (path, change shown) pairs: dicts by key, lists of one
    length by position, anything else as a whole (``parts[0].content: …``)."""
    if isinstance(a, dict) and isinstance(b, dict):
        found: list[tuple[str, str]] = []
        for key in sorted(set(a) | set(b), key=str):
            path = f"{where}.{key}" if where else str(key)
            if key not in a:
                found.append((path, "added " + text_diff.inline("", _text(b[key]))))
            elif key not in b:
                found.append((path, "removed " + text_diff.inline(_text(a[key]), "")))
            elif not _same(a[key], b[key]):
                found += _leaf_changes(a[key], b[key], path)
        return found
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        found = []
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if not _same(x, y):
                found += _leaf_changes(x, y, f"{where}[{i}]")
        return found
    return [(where or "value", show_change(a, b))]


def show_change(a: Any, b: Any) -> str:
    """How ``a`` became ``b``, on one line however long they are: the changed spans as
    ``[-old-]{+new+}`` with a little unchanged text either side, ``…`` for the rest.

    Two strings are compared as they are (whitespace and all); other values as
    key-sorted JSON (a string among them quoted, so ``"5"`` and ``5`` differ).
    """
    if isinstance(a, str) and isinstance(b, str):
        return text_diff.inline(a, b)
    return text_diff.inline(_text(a, quoted=True), _text(b, quoted=True))


def _text(value: Any, *, quoted: bool = False) -> str:
    """A value as the text a change is shown in: a string as it is (JSON when ``quoted``),
    the rest as key-sorted JSON, characters as they are."""
    value = payload.plain(value)
    if isinstance(value, str) and not quoted:
        return value
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)
