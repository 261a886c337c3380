"""The pinned model: a plain object that answers with the recorded responses.

Hand it to the agent in place of the real model.  Each call takes the GenAI
input messages (plus system instructions and tool definitions, optional) and
returns the recorded output message of the next model step.  The request is
checked against the recorded one on a ladder of rungs (``exact``,
``messages``: same messages but ids and edge whitespace, ``last_message``,
``any``); a request below the accepted rung raises :class:`ReplayDivergence`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .. import messages as M
from ..runs.failed_calls import cut_unrecorded, fails_again, held_before_cut
from ..runs.model import Run, Step
from ..same_message import without_repeated_system
from .divergence import RecordedFailure, ReplayDivergence, ReplayError, ReplayRefused
from .matchers import (
    RUNGS,
    accepts,
    first_difference,
    model_rung,
    same_json,
    same_tools,
    split_system,
)
from .observer import NO_OBSERVER, Observed, ReplayObserver
from .recorder import ModelEntry, now_ns
from .selective import DriftEntry, LivePlan, as_messages, compare
from .servable import Unservable, no_input, unanswered


class PinnedModel(Observed):
    """Serves a run's recorded model responses in order."""

    def __init__(
        self,
        run: Run,
        *,
        match: str = "messages",
        observer: ReplayObserver = NO_OBSERVER,
    ) -> None:
        if match not in RUNGS:
            raise ValueError(f"match must be one of {RUNGS}, not {match!r}")
        self.run = run
        self.match = match
        self.steps = [s for s in run.steps if s.kind == "model" and s.model is not None]
        self.cursor = 0
        #: (step, rung matched) per call served.
        self.served: list[tuple[Step, str]] = []
        #: Step index -> why the replay refused to answer it (the trace lacks what it needs).
        self.refused: dict[int, Unservable] = {}
        #: Request parameters that differ from the recording, per step index.
        self.param_drift: dict[int, dict[str, tuple[Any, Any]]] = {}
        #: Steps whose request carried other tool definitions than the recording.
        self.tools_drift: list[int] = []
        #: Steps served with tool-call arguments re-spelled (not recorded as text), by
        #: index: the note saying so (set by the wire engine that rendered them).
        self.respelled: dict[int, str] = {}
        #: Calls failed again over a stream, by step index: how far the cut stream went
        #: (the first deltas the trace holds, or none).
        self.cuts: dict[int, str] = {}
        #: Told of each step served and each divergence (a session).
        self.observer = observer
        #: Messages found to be, as recorded, the request of the step given (see
        #: :meth:`sent_as_recorded`), for the next request only.
        self._as_recorded: tuple[Sequence[Mapping[str, Any]], Step] | None = None

    def sent_as_recorded(self, messages: Sequence[Mapping[str, Any]], step: Step) -> None:
        """Say that ``messages`` (this very list) are the recorded input messages of
        ``step``, the same JSON value (see :func:`.matchers.same_json`): matched against
        that step next, they are not compared again."""
        self._as_recorded = (messages, step)

    def respond(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """The recorded answer to this request (a GenAI ``assistant`` message)."""
        if self.plan is not None and self.plan.active:
            return self._planned(self.plan, messages, system, tools, params)
        step, _ = self._served(messages, system=system, tools=tools, params=params)
        assert step.model is not None and step.model.output_messages
        reply: dict[str, Any] = _copy(step.model.output_messages[0])
        return reply

    __call__ = respond

    def _planned(
        self,
        plan: LivePlan,
        messages: Sequence[Mapping[str, Any]],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        if plan.model == "candidate":
            turn, plan.asked = plan.asked, plan.asked + 1
            near = self.steps[turn] if turn < len(self.steps) else None
            return self._live(plan, near, messages, system, tools, params)
        expected = self.expected()
        if plan.reached(expected):
            return self._live(plan, expected, messages, system, tools, params)
        if plan.forked and plan.live is not None:
            m = expected.model if expected is not None else None
            rung = (
                model_rung(m.input_messages, m.system_instructions, messages, system)
                if m is not None
                else None
            )
            if rung is None or not accepts(self.match, rung):
                return self._live(plan, expected, messages, system, tools, params)
        step, _ = self._served(messages, system=system, tools=tools, params=params)
        m = step.model
        assert m is not None
        if step.index in plan.override:  # its answer (the trace may lack the recorded one)
            plan.forked = True
            answer = as_messages(plan.override[step.index])
            if self._log is not None and self._log.entries:
                entry = self._log.entries[-1]
                if isinstance(entry, ModelEntry) and entry.step is step:
                    entry.output = answer
            return _copy(answer[0])  # type: ignore[no-any-return]
        assert m.output_messages
        if plan.model == "live":
            live = plan.call_live(
                list(without_repeated_system(m.input_messages or [], m.system_instructions)),
                system=m.system_instructions,
                tools=m.tool_definitions,
                model=m.request_model,
                params=m.params,
            )
            same, what = compare(m.output_messages, live)
            plan.drift.append(
                DriftEntry(
                    step.index, step.span_id, m.request_model, same, what, m.output_messages, live
                )
            )
        reply: dict[str, Any] = _copy(m.output_messages[0])
        return reply

    def _live(
        self,
        plan: LivePlan,
        near: Step | None,
        messages: Sequence[Mapping[str, Any]],
        system: Any,
        tools: Sequence[Mapping[str, Any]] | None,
        params: Mapping[str, Any],
    ) -> dict[str, Any]:
        """Ask the live model (pinned to the recorded model id) and log what it said."""
        recorded = near or (self.steps[-1] if self.steps else None)
        model_id = recorded.model.request_model if recorded and recorded.model else None
        answer = plan.call_live(messages, system=system, tools=tools, model=model_id, params=params)
        if self._log is not None:
            self._log.model(
                ModelEntry(
                    step=None,
                    near=recorded,
                    messages=M.normalize(messages),
                    system=system,
                    tools=tools,
                    params=dict(params),
                    at_ns=now_ns(),
                    output=answer,
                )
            )
        return _copy(answer[0])  # type: ignore[no-any-return]

    def serve(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> tuple[Step, str]:
        """The step whose output answers the request, and how it was chosen (the rung).

        What the wire adapters (HTTP server, httpx transports) ask: an agent given
        ``base_url``, a ``client`` or the provider variables reaches the model
        here, so the live plan (overrides, ``live_from``, ``model="live"``)
        applies here as in :meth:`respond`.  An answer the plan gave stands in a
        copy of its step holding that answer and no recorded bytes.
        """
        plan = self.plan
        if plan is None or not plan.active:
            return self._served(messages, system=system, tools=tools, params=params)
        before = self.cursor
        reply = self._planned(plan, messages, system, tools, dict(params or {}))
        step: Step | None
        if self.cursor > before:
            step, how = self.served[-1]
            if step.index not in plan.override:
                return step, how  # the recorded answer: its recorded bytes may be sent
            how = "override"
        else:
            step, how = self.expected() or (self.steps[-1] if self.steps else None), "live"
        if step is None or step.model is None:
            raise ReplayError(f"run {self.run.run_id} has no model step to answer for")
        answered = dataclasses.replace(
            step.model, output_messages=[reply], finish_reasons=None, output_payload=None, raw=None
        )
        return dataclasses.replace(step, model=answered), how

    def _served(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> tuple[Step, str]:
        """Check the request against the recording, advance, and give the recorded step
        whose output answers it, and the rung (the step has output messages)."""
        step = self.next_step(messages, system=system, tools=tools, params=params)
        overridden = self.plan is not None and step.index in self.plan.override
        cut = None if overridden else cut_unrecorded(self.run, step)
        if cut is not None:
            # Not replayed: the report names it as not reached, and why.
            self.cursor -= 1
            self.served.pop()
            raise ReplayRefused.at_step(self.run, step, "unanswered", cut, self.refused)
        if fails_again(self.run, step):
            self.observer.step_done(step, f"pinned:{self.served[-1][1]}")
            raise RecordedFailure(step)
        reason = None if overridden else unanswered(step, went_on=self.cursor < len(self.steps))
        if reason is not None:
            raise ReplayRefused.at_step(self.run, step, "unanswered", reason, self.refused)
        rung = self.served[-1][1]
        self.observer.step_done(step, f"pinned:{rung}")
        return step, rung

    def note_cut(self, step: Step, *, streamed: bool) -> str:
        """Note (for the report) how the stream of ``step``, a call failed again, was cut:
        after the first deltas the trace holds, sent again, or with no text, the trace
        holding none; ``""`` when the request asked for no stream."""
        if not streamed:
            return ""
        if held_before_cut(step):
            said = "its first deltas, as the trace holds them, streamed again before the cut"
        else:
            said = "cut with no text: the trace holds none (none streamed, or none was kept)"
        self.cuts.setdefault(step.index, f"{step.label()}: failed again as recorded; {said}")
        return said

    def note_respelled(
        self,
        step: Step,
        calls: Sequence[str],
        doubtful: Sequence[str] = (),
        made_up: Sequence[str] = (),
        items: Sequence[str] = (),
    ) -> str:
        """Note (once per step, for the report) that ``step``'s answer was served with the
        arguments of ``calls`` re-spelled (the trace holds no text of them), those of
        ``doubtful`` with a text that may be an instrumentation's dump of their value, the
        calls of ``made_up`` with call ids made up (the trace holds none), and those of
        ``items`` with the Responses item id the trace holds in their call id's place."""
        said = []
        if made_up:
            said.append(
                f"call ids of {', '.join(made_up)} made up: the trace holds none (the model "
                "may have sent none, or an empty one, which tracers do not keep)"
            )
        if items:
            said.append(
                f"call ids of {', '.join(items)} re-spelled: served as the Responses item id "
                "the trace records in the call id's place, and no later request of the run "
                "shows the call id the model sent"
            )
        if calls:
            said.append(
                f"tool-call arguments of {', '.join(calls)} served as compact JSON: the trace "
                "holds them as parsed values, not as the text the model sent (spacing, "
                "escapes and key order may differ from it)"
            )
        if doubtful:
            said.append(
                f"tool-call arguments of {', '.join(doubtful)} served as the trace spells "
                "them, as Python's json.dumps writes their value: the instrumentation may "
                "have re-spelled the model's text (its spacing and escapes may differ)"
            )
        note = f"{step.label()}: " + "; ".join(said)
        self.respelled.setdefault(step.index, note)
        return note

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
            self._logged(None, err.step, messages, system, tools, params, err)
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
        divergence: ReplayDivergence | None,
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
                divergence=str(divergence.what) if divergence is not None else None,
                diff=divergence.diff if divergence is not None else "",
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
            again = self._failed_again(last, messages, system)
            if again is not None:
                return again
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
        self.observer.step_started(step)
        payload = m.output_payload
        overridden = self.plan is not None and step.index in self.plan.override
        if payload is not None and not payload.usable and not overridden:
            said = f"{step.label()}: recorded output cannot be replayed: {payload.reason}"
            raise ReplayRefused.at_step(self.run, step, "unusable_output", said, self.refused)
        lost = no_input(self.run, step)
        if lost is not None:
            # Nothing to check the request against (a call whose span recorded only that
            # it failed, say): answering it, or failing it again, would pass any request.
            raise ReplayRefused.at_step(self.run, step, "no_input", lost, self.refused)
        told, self._as_recorded = self._as_recorded, None
        if (
            told is not None
            and told[0] is messages
            and told[1] is step
            and same_json(m.system_instructions, system)
        ):
            rung = "exact"  # as model_rung finds the recorded request sent as it is
        else:
            rung = model_rung(m.input_messages, m.system_instructions, messages, system)
        if not accepts(self.match, rung):
            # A call failed again and sent once more (the client retries it) before the
            # agent goes on to the step recorded next.
            again = self._failed_again(
                self.served[-1][0] if self.served else None, messages, system
            )
            if again is not None:
                return again
            err = ReplayDivergence(
                f"model request does not match the recording "
                f"({first_difference(m.input_messages or [], messages)})",
                step,
                expected=_shown(m.input_messages or [], m.system_instructions),
                actual=_shown(messages, system),
            )
            self._diverged(err)
            raise err
        self.cursor += 1
        self.served.append((step, rung))
        return step

    def _failed_again(
        self, last: Step | None, messages: Sequence[Mapping[str, Any]], system: Any
    ) -> Step | None:
        """The call just failed again (:func:`~otel_replay.runs.failed_calls.fails_again`), asked
        again: a client that retries a failure sent the recorded call more than once (the
        trace holds one call, each try inside it), so it fails as often as the client
        asks.  None: not that."""
        if last is None or not self.served or self.served[-1][0] is not last:
            return None
        if not fails_again(self.run, last):
            return None
        m = last.model
        assert m is not None
        rung = model_rung(m.input_messages, m.system_instructions, messages, system)
        if not accepts(self.match, rung):
            return None
        self.served.append((last, rung))
        return last

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
        self.observer.diverged(err)

    def unreplayed(self) -> list[Step]:
        return self.steps[self.cursor :]


def _shown(messages: Sequence[Mapping[str, Any]], system: Any) -> list[dict[str, Any]]:
    """A request's conversation as a divergence shows it: the system prompt once, first.

    However each side gave the prompt (as leading messages, beside them, or both), the
    same prompt reads the same, so a diff shows what changed and not how it was sent.
    """
    parts, rest = split_system(M.normalize(messages), system)
    return [{"role": "system", "parts": parts}, *rest] if parts else rest


def _copy(value: Any) -> Any:
    """A copy of a JSON tree (the agent may mutate what it gets; the recording must not change)."""
    if type(value) is dict:
        return {k: _copy(v) for k, v in value.items()}
    if type(value) is list:
        return [_copy(v) for v in value]
    return value
