"""Replay errors, and the readable "expected vs actual" they carry."""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Sequence
from typing import Any

from .. import text_diff
from ..runs.model import Run, Step
from .servable import Unservable, UnservableKind, step_reason


class ReplayError(Exception):
    """A recording cannot be replayed as asked (nothing to serve, value not restorable)."""


class ReplayRefused(ReplayError):
    """The replay cannot be exact: the trace lacks what it needs, every item named.

    ``items``: each step and what of it is missing (:class:`~.servable.Unservable`:
    its ``index``, ``kind`` and ``what``).  ``before``: refused before the agent ran
    (every item a replay with its options will certainly ask for, at once); else
    refused at the step the agent reached (one item), where the agent went where the
    recording lacks data.  Not a divergence: the agent did nothing wrong.
    """

    def __init__(self, run_id: str, items: Sequence[Unservable], *, before: bool) -> None:
        self.run_id = run_id
        self.items = list(items)
        self.before = before
        if before:
            said = (
                f"replay of run {run_id} refused before the agent ran: the trace lacks "
                f"{len(self.items)} item(s) the replay needs\n"
            ) + "\n".join(f"  {i.what}" for i in self.items)
        else:
            said = "\n".join(i.what for i in self.items)
        super().__init__(said)

    @classmethod
    def at_step(
        cls, run: Run, step: Step, kind: UnservableKind, said: str, kept: dict[int, Unservable]
    ) -> ReplayRefused:
        """The refusal of ``step`` the agent reached, whose ``kind`` of data the trace lacks
        (``said``: :mod:`.servable`'s words), kept in ``kept`` by step index: a framework
        that catches it and goes on must not make the replay end some other way."""
        item = kept.setdefault(step.index, step_reason(run, step, kind, said))
        return cls(run.run_id, [item], before=False)

    def to_json(self) -> list[dict[str, Any]]:
        """Each item: the step's index (None: the whole run), the kind, what is missing."""
        return [{"index": i.index, "kind": i.kind, "what": i.what} for i in self.items]


class RecordedFailure(ReplayError):
    """The request matched a recorded model call that failed and ended the run (the client
    raised, an answer cut partway through, and the agent with it): the replay fails it
    again.  The wire adapters close the connection after the answer's headers, so that the
    client raises as it did; a model object called directly raises this."""

    def __init__(self, step: Step) -> None:
        self.step = step
        why = step.status_message or "ERROR"
        super().__init__(f"{step.label()}: the recorded call failed here ({why}); failed again")


@dataclasses.dataclass(frozen=True)
class Candidate:
    """A recorded step that came close, and why it did not match."""

    step: Step
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.step.label()}: " + "; ".join(self.reasons)


class ReplayDivergence(ReplayError):
    """The replayed run stopped following the recording.

    Names the recorded step where it happened (``index``, ``span_id``,
    ``kind``, ``name``), what was expected and what came, and the closest
    recorded candidates with the reason each one failed.
    """

    def __init__(
        self,
        what: str,
        step: Step | None,
        *,
        expected: Any = None,
        actual: Any = None,
        candidates: Sequence[Candidate] = (),
        kind: str | None = None,
        name: str | None = None,
    ) -> None:
        self.what = what
        self.step = step
        self.expected = expected
        self.actual = actual
        self.candidates = list(candidates)
        self.index = step.index if step is not None else None
        self.span_id = step.span_id if step is not None else None
        self.kind = kind or (step.kind if step is not None else None)
        if name is None and step is not None:
            name = step.tool.tool_name if step.tool is not None else step.name
        self.name = name
        self.diff = (
            render_diff(expected, actual) if expected is not None or actual is not None else ""
        )
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.step.label() if self.step is not None else f"{self.kind} {self.name}"
        lines = [f"replay diverged at {where}: {self.what}"]
        if self.diff:
            lines.append("  expected (recorded) vs actual (replay):")
            lines.extend("    " + line for line in self.diff.splitlines())
        if self.candidates:
            lines.append("  closest recorded candidates:")
            lines.extend(f"    {c}" for c in self.candidates)
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "what": self.what,
            "index": self.index,
            "span_id": self.span_id,
            "kind": self.kind,
            "name": self.name,
            "expected": _jsonable(self.expected),
            "actual": _jsonable(self.actual),
            "diff": self.diff,
            "candidates": [
                {"index": c.step.index, "span_id": c.step.span_id, "reasons": list(c.reasons)}
                for c in self.candidates
            ],
        }


def _jsonable(value: Any) -> Any:
    try:
        json.dumps(value)
        return value
    except (TypeError, ValueError):
        return repr(value)


def _pretty(value: Any) -> list[str]:
    if isinstance(value, str):
        return value.splitlines() or [""]
    try:
        return json.dumps(
            value, indent=2, sort_keys=True, ensure_ascii=False, default=repr
        ).splitlines()
    except (TypeError, ValueError):
        return [repr(value)]


#: A pretty-printed line's indent and key: kept when its value is cut.
_HEAD = re.compile(r'\s*(?:"(?:[^"\\]|\\.)*": )?"?')
#: A changed line longer than this is shown windowed around its changes.
WIDE = 100


def render_diff(expected: Any, actual: Any, context: int = 3) -> str:
    """A unified diff of two values, pretty-printed as JSON (or text for strings).

    A long line that changed is shown by its changed spans with a little text
    either side (``…`` for the rest), in both its ``-`` and its ``+`` line: the
    difference is seen however deep in the line it lies.
    """
    lines = list(
        difflib.unified_diff(
            _pretty(expected), _pretty(actual), "recorded", "replay", n=context, lineterm=""
        )
    )
    return "\n".join(_windowed(lines))


def _windowed(lines: list[str]) -> list[str]:
    """The diff's lines, each run of ``-`` lines and the ``+`` lines after it paired in
    order, a long pair cut to the windows around its changes."""
    out: list[str] = []
    i = 2 if len(lines) >= 2 else 0  # the ---/+++ header holds no value
    out += lines[:i]
    while i < len(lines):
        j = i
        while j < len(lines) and lines[j].startswith("-"):
            j += 1
        k = j
        while k < len(lines) and lines[k].startswith("+"):
            k += 1
        if j == i:  # not a removal: a kept line, a hunk header, or an addition
            out.append(lines[i])
            i += 1
            continue
        removed, added = lines[i:j], lines[j:k]
        for n, (old, new) in enumerate(zip(removed, added, strict=False)):
            if max(len(old), len(new)) > WIDE:
                head = _HEAD.match(old[1:])
                keep = min(head.end() if head else 0, WIDE // 2)
                old, new = text_diff.sides(old[1:], new[1:], keep=keep)
                removed[n], added[n] = "-" + old, "+" + new
        out += removed + added
        i = k
    return out
