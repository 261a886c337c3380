"""The pinned model: a plain object that answers with the recorded responses.

Hand it to the agent in place of the real model.  Each call takes the GenAI
input messages (plus system instructions and tool definitions, optional) and
returns the recorded output message of the next model step.  The request is
checked against the recorded one on a ladder of rungs (``exact``,
``messages``: same messages but ids and edge whitespace, ``last_message``,
``any``); a request below the accepted rung raises :class:`ReplayDivergence`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import messages as M
from ..runs.model import Run, Step
from .divergence import ReplayDivergence, ReplayError
from .matchers import RUNGS, accepts, first_difference, model_rung, same_tools
from .recorder import ModelEntry, ReplayLog, now_ns


class PinnedModel:
    """Serves a run's recorded model responses in order."""

    def __init__(
        self,
        run: Run,
        *,
        match: str = "messages",
        on_step: Callable[[Step], None] | None = None,
        on_done: Callable[[Step], None] | None = None,
        on_divergence: Callable[[ReplayDivergence], None] | None = None,
        log: ReplayLog | None = None,
    ) -> None:
        if match not in RUNGS:
            raise ValueError(f"match must be one of {RUNGS}, not {match!r}")
        self.run = run
        self.match = match
        self.steps = [s for s in run.steps if s.kind == "model" and s.model is not None]
        self.cursor = 0
        #: (step, rung matched) per call served.
        self.served: list[tuple[Step, str]] = []
        #: Request parameters that differ from the recording, per step index.
        self.param_drift: dict[int, dict[str, tuple[Any, Any]]] = {}
        #: Steps whose request carried other tool definitions than the recording.
        self.tools_drift: list[int] = []
        self._on_step = on_step
        self._on_done = on_done
        self._on_divergence = on_divergence
        self._log = log

    def respond(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """The recorded answer to this request (a GenAI ``assistant`` message)."""
        step, _ = self.serve(messages, system=system, tools=tools, params=params)
        assert step.model is not None and step.model.output_messages
        reply: dict[str, Any] = _copy(step.model.output_messages[0])
        return reply

    __call__ = respond

    def serve(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> tuple[Step, str]:
        """Check the request, advance, and give the step whose output answers it, and the rung.

        What :meth:`respond` and the wire adapters (HTTP server, httpx
        transports) share; the step is known to have output messages.
        """
        step = self.next_step(messages, system=system, tools=tools, params=params)
        assert step.model is not None
        if not step.model.output_messages:
            raise ReplayError(f"{step.label()}: no output messages were recorded")
        if self._on_done is not None:
            self._on_done(step)
        return step, self.served[-1][1]

    def expected(self) -> Step | None:
        """The recorded model step the next request must match (None past the end)."""
        return self.steps[self.cursor] if self.cursor < len(self.steps) else None

    def next_step(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> Step:
        """Advance to the next recorded model step, checking the request against it."""
        try:
            step = self._next_step(messages, system, tools)
        except ReplayDivergence as err:
            self._logged(None, err.step, messages, system, tools, params, str(err.what))
            raise
        self._logged(step, step, messages, system, tools, params, None)
        self._drift(step, tools, params)
        return step

    def _logged(
        self,
        step: Step | None,
        near: Step | None,
        messages: Sequence[Mapping[str, Any]],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        params: Mapping[str, Any] | None,
        divergence: str | None,
    ) -> None:
        if self._log is None:
            return
        self._log.model(
            ModelEntry(
                step=step,
                near=near,
                messages=M.normalize(messages),
                system=system,
                tools=tools,
                params=dict(params or {}),
                at_ns=now_ns(),
                divergence=divergence,
            )
        )

    def _next_step(
        self,
        messages: Sequence[Mapping[str, Any]],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
    ) -> Step:
        if self.cursor >= len(self.steps):
            last = self.steps[-1] if self.steps else None
            err = ReplayDivergence(
                f"model call {self.cursor + 1} was not recorded "
                f"(the run has {len(self.steps)} model calls)",
                last,
                actual={"input_messages": M.normalize(messages)},
                kind="model",
                name="chat",
            )
            self._diverged(err)
            raise err
        step = self.steps[self.cursor]
        m = step.model
        assert m is not None
        if self._on_step is not None:
            self._on_step(step)
        payload = m.output_payload
        if payload is not None and not payload.usable:
            raise ReplayError(
                f"{step.label()}: recorded output cannot be replayed: {payload.reason}"
            )
        rung = model_rung(m.input_messages, m.system_instructions, messages, system)
        if not accepts(self.match, rung):
            err = ReplayDivergence(
                f"model request does not match the recording "
                f"({first_difference(m.input_messages or [], messages)})",
                step,
                expected=M.normalize(m.input_messages or []),
                actual=M.normalize(messages),
            )
            self._diverged(err)
            raise err
        self.cursor += 1
        self.served.append((step, rung))
        return step

    def _drift(
        self,
        step: Step,
        tools: Sequence[Mapping[str, Any]] | None,
        params: Mapping[str, Any] | None,
    ) -> None:
        m = step.model
        assert m is not None
        drift = {
            k: (m.params.get(k), v)
            for k, v in (params or {}).items()
            if k in m.params and m.params[k] != v
        }
        if drift:
            self.param_drift[step.index] = drift
        if (
            tools is not None
            and m.tool_definitions is not None
            and not same_tools(m.tool_definitions, tools)
        ):
            self.tools_drift.append(step.index)

    def _diverged(self, err: ReplayDivergence) -> None:
        if self._on_divergence is not None:
            self._on_divergence(err)

    def unreplayed(self) -> list[Step]:
        return self.steps[self.cursor :]


def _copy(value: Any) -> Any:
    """A copy of a JSON tree (the agent may mutate what it gets; the recording must not change)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value
