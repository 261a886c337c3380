"""What the candidates read of a recorded run (its model steps, the requests they
sent, the tool results their model was sent, its turns and answer), and what they share
while replaying: the locks on the process's stdout and on the trace files, the
:class:`Pace` of requests to a candidate model, what a written replay's root says of the
cohort.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .. import messages as M
from ..payload import codec as payload
from ..replay.candidate_model import CandidateRefused
from ..replay.divergence import ReplayDivergence
from ..replay.matchers import split_system
from ..runs.model import Run, Step
from ..runs.tool_spans import sent_to_tools
from .cohort_outcomes import COHORT_CANDIDATE, COHORT_ID, Candidate, Outcome

#: Model turns a candidate driving a run's loop may take before it is stopped.
MAX_TURNS = 20


class Pace:
    """At most ``rate`` requests a second, from any number of threads: each request waits
    for its turn, the turns ``1 / rate`` seconds apart."""

    def __init__(self, rate: float) -> None:
        self.interval = 1.0 / rate
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        with self._lock:
            now = time.monotonic()
            at = max(now, self._next)
            self._next = at + self.interval
        if at > now:
            time.sleep(at - now)


def paced(pace: Pace | None) -> None:
    """Wait for the next turn of ``pace`` (None: no wait)."""
    if pace is not None:
        pace.wait()


#: Held while a replay is appended to its file: replays run at once write one at a time.
WRITING = threading.Lock()
#: Held while stdout is sent to stderr (the process's one stdout, which replays run at
#: once would otherwise put back out of turn, leaving it on stderr).
STDOUT = threading.Lock()


def written(candidate: Candidate) -> dict[str, Any]:
    """What the root of a replay written for ``candidate`` says of the cohort."""
    out = {COHORT_CANDIDATE: candidate.label}
    if candidate.cohort_id is not None:
        out[COHORT_ID] = candidate.cohort_id
    return out


def model_steps(run: Run) -> list[Step]:
    """The run's model steps, in order."""
    return [s for s in run.steps if s.kind == "model" and s.model is not None]


def results_sent(run: Run) -> dict[int, Any]:
    """Tool step index -> the tool result as the recorded model was sent it."""
    return sent_to_tools(run.steps)


def recorded_answer_of(taken: Step | ReplayDivergence, sent: Mapping[int, Any]) -> Any:
    """What the recorded model was sent for the call ``taken`` answers, or the refusal
    saying what the recording lacks (None for a call it does not hold)."""
    if not isinstance(taken, Step):
        return None
    tool = taken.tool
    assert tool is not None
    if taken.index in sent:
        return sent[taken.index]
    if tool.raised:
        return Outcome(
            "refused",
            f"{taken.label()}: the tool failed and no recorded request tells the model so",
        )
    if tool.result_payload is None or not tool.result_payload.usable:
        return Outcome("refused", f"{taken.label()}: its result was not recorded")
    return payload.plain(tool.result)


def recorded_turns(steps: Sequence[Step]) -> list[list[dict[str, Any]]]:
    """The tool calls each of the model ``steps`` made, one list a turn."""
    return [M.tool_calls(s.model.output_messages or []) for s in steps if s.model is not None]


def recorded_answer(steps: Sequence[Step]) -> str | None:
    """The text of the last of the model ``steps``' output (None: no model step)."""
    last = steps[-1].model if steps else None
    return M.last_text(last.output_messages or []) if last is not None else None


def request_of(step: Step, system_prompt: str | None) -> tuple[Any, list[dict[str, Any]]]:
    """The system instructions and messages ``step`` sent, with ``system_prompt`` in place
    of the recorded instructions when given."""
    assert step.model is not None
    m = step.model
    if m.input_messages is None:
        raise CandidateRefused(f"{step.label()}: its input messages were not recorded")
    if system_prompt is None:
        return m.system_instructions, list(m.input_messages)
    _, rest = split_system(M.normalize(m.input_messages), m.system_instructions)
    return system_prompt, rest


def tools_not_recorded(steps: Sequence[Step], at: int = 0) -> str | None:
    """Why the model step ``steps[at]``, recorded without its tool definitions, cannot be
    sent as it was asked when it or a later model step (``steps``: the run's) called
    tools: a model offered no tools calls none, and its "other path" would be the
    trace's gap, not the candidate's.  None when it has them or nothing called tools."""
    step = steps[at].model
    if step is None or step.tool_definitions is not None:
        return None
    for later in steps[at:]:
        if later.model is not None and M.tool_calls(later.model.output_messages or []):
            who = "it" if later is steps[at] else later.label()
            return (
                f"{steps[at].label()}: the trace holds no tool definitions, so the candidate "
                f"could not be offered the tools {who} called"
            )
    return None
