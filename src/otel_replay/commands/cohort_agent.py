"""The user's agent as a candidate: :class:`AgentCandidate`, the user's agent code
(``MODULE:FUNC``, called as ``otel-replay replay --agent`` calls it) against the pinned
model: a code change checked on a recorded run; or, given a candidate model, against that
model (every request the agent makes answered by the candidate, its tool calls by the
recording where they match, as for a model driving the loop).
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan

from .. import messages as M
from ..payload import codec as payload
from ..replay.candidate_model import Asked, CandidateFailed, CandidateModel, CandidateRefused
from ..replay.divergence import ReplayDivergence, ReplayError
from ..replay.options import ReplayOptions
from ..replay.recorder import ModelEntry
from ..runs.model import Run
from ..runs.verdict import outcome as recorded_outcome
from .cohort_outcomes import (
    Comparator,
    FirstDivergence,
    Outcome,
    Replayed,
    first_turn_apart,
    one_line,
    short_diff,
)
from .cohort_recorded import (
    MAX_TURNS,
    STDOUT,
    WRITING,
    Pace,
    model_steps,
    paced,
    recorded_turns,
    written,
)
from .regress import RegressError
from .rerun import raised_as_recorded, rerun


class _Counted:
    """A candidate model as a session's live model, its answers' tokens counted."""

    def __init__(self, model: CandidateModel, max_turns: int, pace: Pace | None = None) -> None:
        self.model = model
        self.max_turns = max_turns
        self.pace = pace
        #: True once the agent asked for more than ``max_turns`` answers: refused, so that
        #: an agent's loop the candidate never ends costs no more than that.
        self.stopped = False
        self.asked: list[Asked] = []
        #: The candidate's first failure: an agent reaching it over HTTP sees only the
        #: replay server's error, and its SDK's words for it.
        self.failed: CandidateFailed | CandidateRefused | None = None

    def __call__(self, messages: Sequence[Mapping[str, Any]], **given: Any) -> dict[str, Any]:
        if len(self.asked) >= self.max_turns:
            self.stopped = True
            self.failed = CandidateFailed(f"no answer within {self.max_turns} model calls")
            raise self.failed
        paced(self.pace)
        try:
            asked = self.model.ask(messages, **given)
        except (CandidateFailed, CandidateRefused) as exc:
            self.failed = self.failed or exc
            raise
        self.asked.append(asked)
        return asked.message

    def put(self, out: Outcome) -> Outcome:
        out.model_calls = len(self.asked)
        ins = [a.input_tokens for a in self.asked if a.input_tokens is not None]
        outs = [a.output_tokens for a in self.asked if a.output_tokens is not None]
        out.input_tokens = sum(ins) if ins else None
        out.output_tokens = sum(outs) if outs else None
        return out


@dataclasses.dataclass
class AgentCandidate:
    """The user's agent, ``MODULE:FUNC``, against the pinned model (as ``replay --agent``),
    or against ``model`` when given; ``live_tools`` run live where the recording cannot
    answer their calls."""

    ref: str
    kwargs: Sequence[str] = ()
    record_to: str | None = None
    cohort_id: str | None = None
    model: CandidateModel | None = None
    live_tools: tuple[str, ...] = ()
    #: Model calls the agent may make of ``model`` in one run before it is stopped.
    max_turns: int = MAX_TURNS
    pace: Pace | None = None
    needs_replayable: bool = dataclasses.field(default=True, init=False)
    exclusive: bool = dataclasses.field(default=True, init=False)

    @property
    def label(self) -> str:
        return f"agent {self.ref}" + (f" on {self.model.label}" if self.model else "")

    def replay(self, run: Run, comparator: Comparator) -> Outcome:
        counted = (
            _Counted(self.model, self.max_turns, self.pace) if self.model is not None else None
        )
        options = ReplayOptions(
            model="candidate" if counted is not None else "pinned",
            live=counted,
            live_tools=self.live_tools,
            require_complete=counted is None,
        )
        began = time.perf_counter()
        try:
            # What the agent prints goes to stderr: stdout is the cohort's (its --json).
            with STDOUT, contextlib.redirect_stdout(sys.stderr):
                done = rerun(run, self.ref, kwargs=self.kwargs, options=options)
        except (RegressError, ReplayError, ValueError) as exc:
            return Outcome("refused", one_line(str(exc)))
        took = (time.perf_counter() - began) * 1000
        refusal = done.report.refusal
        if refusal is not None:  # the trace lacks what the replay needs: every item named
            said = one_line("; ".join(item.what for item in refusal.items))
            return Outcome("refused", said, latency_ms=round(took, 3))
        if counted is not None:
            if counted.failed is not None:
                done.error = counted.failed
            out = counted.put(self._against_model(run, done, comparator))
            if counted.stopped:
                out.kind, out.detail, out.answer = "other_path", "", None
                out.divergence = FirstDivergence(None, "model", str(counted.failed))
            out.latency_ms = round(took, 3)
            return out
        report = done.report
        calls = done.session.tool_calls
        answer = done.answer if isinstance(done.answer, str) else None
        base = Outcome("same", answer=answer, tool_calls=calls, latency_ms=round(took, 3))
        base._write = self._writer(done.session)
        base.model_calls = sum(1 for _, kind, _ in report.replayed if kind == "model")
        div = report.divergence
        recorded = recorded_outcome(run)
        if div is not None and div.kind != "output":
            base.kind = "other_path"
            base.divergence = FirstDivergence(
                div.index, div.kind or "step", div.what, short_diff(div.expected, div.actual)
            )
            return base
        if done.error is not None and not raised_as_recorded(recorded, done.error):
            base.kind, base.detail = "error", one_line(f"{type(done.error).__name__}: {done.error}")
            return base
        if done.error is not None:
            return base  # raised as the recorded run did: the recording followed
        replayed = Replayed(self.label, answer, calls)
        if not comparator.same_answer(run, replayed, run.final_output()):
            base.kind = "other_answer"
            if div is not None:
                base.detail = one_line(div.diff.replace("\n", " ")) if div.diff else div.what
        return base

    def _writer(self, session: Any) -> Callable[[Mapping[str, Any]], list[ReadableSpan]] | None:
        """Writes the session's replay to ``record_to`` (None when there is none)."""
        path = self.record_to
        if path is None:
            return None

        def write(more: Mapping[str, Any]) -> list[ReadableSpan]:
            session.log.root_attributes.update({**written(self), **more})
            with WRITING:
                spans: list[ReadableSpan] = session.log.export(path)
                return spans

        return write

    def _against_model(self, run: Run, done: Any, comparator: Comparator) -> Outcome:
        """The outcome of the agent's run against the candidate model (``done``: its
        :class:`~otel_replay.commands.rerun.Rerun`), judged as a model driving the loop
        is: a call the recording cannot answer is a new path, else the turns' tool calls
        and the answer against the recorded ones."""
        session = done.session
        answer = done.answer if isinstance(done.answer, str) else None
        out = Outcome("same", answer=answer, tool_calls=session.tool_calls)
        out._write = self._writer(session)
        div = done.report.divergence
        if div is not None and div.kind == "tool":
            shown = one_line(f"{div.name}({payload.canonical(payload.plain(_args_of(div)))})")
            out.kind, out.detail = "new_path", f"{shown} is not recorded"
            diff = short_diff(div.expected, div.actual) if div.expected is not None else ""
            out.divergence = FirstDivergence(div.index, "tool", out.detail, diff)
            return out
        error = done.error
        if isinstance(error, CandidateRefused):
            out.kind, out.detail = "refused", one_line(str(error))
            return out
        if error is not None and not raised_as_recorded(recorded_outcome(run), error):
            out.kind, out.detail = "error", one_line(f"{type(error).__name__}: {error}")
            return out
        steps = model_steps(run)
        turns = [
            M.tool_calls(e.output or [])
            for e in session.log.entries
            if isinstance(e, ModelEntry) and e.output is not None
        ]
        apart = first_turn_apart(recorded_turns(steps), turns, steps, run)
        if apart is not None:
            out.kind, out.divergence = "other_path", apart
        elif error is None:
            replayed = Replayed(self.label, answer, out.tool_calls)
            if not comparator.same_answer(run, replayed, run.final_output()):
                out.kind = "other_answer"
        return out


def _args_of(div: ReplayDivergence) -> Any:
    actual = div.actual
    return actual.get("arguments") if isinstance(actual, Mapping) else None
