"""Selective replay: which steps come from the recording, which run live, and forks.

A :class:`LivePlan` is shared by a session's pinned model and tool stubs:

- ``model="live"`` (with ``live=`` the user's own model callable): every
  recorded model request is also sent to the live model, pinned to the
  recorded model id, parameters and seed, and its answer compared with the
  recorded one (:class:`DriftReport`, one entry per model step).  The agent
  is served the recorded answer, so the replay stays on the recording and
  every step is compared.
- ``live_from=N``: steps before ``N`` replay from the recording; from the
  first model or tool call at or after step ``N`` on, the model (``live=``)
  and the tools run live, and the rest of the recording is not required.
- ``model="candidate"`` (with ``live=``): every model request goes to the
  live model alone, the recording answering none: the user's agent against
  another model.  Tool calls are still answered from the recording where
  they match it; no recorded step is required.
- ``live_tools``: tools whose calls the recording cannot answer run live
  instead of diverging.
- ``override={N: value}``: step ``N`` answers ``value`` instead of what was
  recorded (a tool result, an exception instance to raise, or a model's
  output message); after it the run is a fork: a model request that still
  matches the recording is served from it, any other goes to ``live`` (or
  diverges when there is none), a tool call that still matches is stubbed,
  any other runs the real function.

The live callable is called as ``live(messages, *, system=None, tools=None,
model=None, **params)`` and returns an assistant message (GenAI shape, or a
plain string for text).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from .. import messages as M
from ..runs.model import Step
from .divergence import ReplayError, render_diff
from .matchers import messages_key

LiveModel = Callable[..., Any]


@dataclasses.dataclass
class DriftEntry:
    """One model step sent to the live model: same output as recorded or not, and how."""

    index: int
    span_id: str
    request_model: str | None
    same: bool
    what: str
    recorded: list[dict[str, Any]]
    live: list[dict[str, Any]]

    @property
    def diff(self) -> str:
        return "" if self.same else render_diff(self.recorded, self.live)

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "span_id": self.span_id,
            "request_model": self.request_model,
            "same": self.same,
            "what": self.what,
            "recorded": self.recorded,
            "live": self.live,
        }


@dataclasses.dataclass
class DriftReport:
    """Per recorded model step: did the live model answer as the recording says?"""

    run_id: str
    entries: list[DriftEntry]

    @property
    def drifted(self) -> list[DriftEntry]:
        return [e for e in self.entries if not e.same]

    def __str__(self) -> str:
        lines = [
            f"drift of run {self.run_id}: {len(self.drifted)} of {len(self.entries)} "
            "model step(s) answered differently live"
        ]
        for e in self.entries:
            verdict = "same" if e.same else f"DIFFERENT: {e.what}"
            lines.append(
                f"  step {e.index} ({e.request_model or 'model'}, span {e.span_id}): " + verdict
            )
            if not e.same:
                lines.extend("    " + line for line in e.diff.splitlines())
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "entries": [e.to_json() for e in self.entries]}


def as_messages(answer: Any) -> list[dict[str, Any]]:
    """A live model's answer as GenAI output messages."""
    if isinstance(answer, str):
        return [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
    if isinstance(answer, Mapping):
        return [M.normalize_message(answer)]
    if isinstance(answer, list):
        return [M.normalize_message(m) for m in answer]
    raise ReplayError(f"the live model answered {type(answer).__name__}, not a message")


def compare(recorded: list[dict[str, Any]], live: list[dict[str, Any]]) -> tuple[bool, str]:
    """(same, what differs) between a recorded and a live answer, ids and whitespace aside."""
    a, b = M.normalize(recorded), M.normalize(live)
    if messages_key(a) == messages_key(b):
        return True, ""
    calls_a = [(c.get("name"), c.get("arguments")) for c in M.tool_calls(a)]
    calls_b = [(c.get("name"), c.get("arguments")) for c in M.tool_calls(b)]
    if [n for n, _ in calls_a] != [n for n, _ in calls_b]:
        return False, (
            f"tool calls {[n for n, _ in calls_a]} recorded, {[n for n, _ in calls_b]} live"
        )
    if calls_a != calls_b:
        return False, "tool-call arguments differ"
    if M.last_text(a) != M.last_text(b):
        return False, "text differs"
    return False, "message differs"


class LivePlan:
    """What runs live in a session, and the state of a fork."""

    def __init__(
        self,
        *,
        model: str = "pinned",
        live: LiveModel | None = None,
        live_from: int | None = None,
        override: Mapping[int, Any] | None = None,
        live_tools: tuple[str, ...] = (),
    ) -> None:
        if model not in ("pinned", "live", "candidate"):
            raise ValueError(f"model must be 'pinned', 'live' or 'candidate', not {model!r}")
        if model != "pinned" and live is None:
            raise ValueError(f"model={model!r} needs live=: your model callable or client")
        self.model = model
        self.live = live
        self.live_from = live_from
        self.override = dict(override or {})
        self.live_tools = frozenset(live_tools)
        #: Requests the candidate answered (``model="candidate"``): the next one stands
        #: where the recorded model step of that number does.
        self.asked = 0
        self.drift: list[DriftEntry] = []
        #: True once an override was served: the rest of the run is a fork.
        self.forked = False
        #: True once the run reached ``live_from``: everything after runs live.
        self.gone_live = False

    @property
    def active(self) -> bool:
        return self.model != "pinned" or self.live_from is not None or bool(self.override)

    def reached(self, step: Step | None) -> bool:
        """Whether a call at ``step`` (None: past the recording) runs live under ``live_from``."""
        if self.live_from is None:
            return False
        if not self.gone_live and (step is None or step.index >= self.live_from):
            self.gone_live = True
        return self.gone_live

    def required(self, step: Step) -> bool:
        """Whether ``step`` must be replayed for the replay to be complete."""
        if self.model == "candidate":
            return False  # the candidate chooses the path; how it compares is the caller's
        if self.live_from is not None and step.index >= self.live_from:
            return False
        return not (self.forked and step.index > max(self.override, default=-1))

    def call_live(
        self,
        messages: Any,
        *,
        system: Any = None,
        tools: Any = None,
        model: str | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> list[dict[str, Any]]:
        if self.live is None:
            raise ReplayError("no live model to ask: pass live= to replay()")
        kwargs = {k: v for k, v in (params or {}).items() if v is not None}
        if model is not None:
            kwargs["model"] = model
        return as_messages(self.live(messages, system=system, tools=tools, **kwargs))
