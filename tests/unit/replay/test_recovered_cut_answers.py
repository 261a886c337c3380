"""An answer cut partway through that the agent went on from: a replay fails that call again,
however often the client asks, and serves what the agent asked after it.

The class: a model call that failed partway through its answer (ended in error, a stream's
first deltas as its output, no finish reason), which nothing retried as the same request,
and after which the run went on: the agent caught the error (CrewAI runs its task again from
its first request, re-running the tools).  Cut at the first request, the agent sends that
request again: the failed call is then an attempt of the call that answered it.  Served, its first deltas would be taken for the
answer and the agent would end with them; the verdict said the run replays.  Built on the
conformance cases recorded by running CrewAI (OpenInference) streamed, with the model
server cutting the answer at each turn (the first request, one after tool results, the
answer's), each of the ids' shapes the scenarios draw; hypothesis draws how many times the
client sends the cut request again before the agent goes on.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from otel_replay.runs.failed_calls import failed_end, fails_again
from tests.conformance.checks import Case, check, find_cases
from tests.conformance.test_conformance import NOT_RECORDED


def _sent_again(case: Case, r: dict[str, Any]) -> bool:
    """A stream cut partway through (no SDK retries one) that did not end the run."""
    streamed = json.loads(str(r["body_raw"])).get("stream")
    ended = case.cut(str(r["conversation"]))
    return bool(streamed) and r.get("cut") == "stream" and (ended or {}).get("seq") != r["seq"]


def _went_on(case: Case) -> bool:
    return any(case.recovered(o) for o in case.conversations())


#: (Not those whose trace records the cut answer as whole: nothing there says it was cut.)
RECOVERED = [c for c in find_cases() if _went_on(c) and c.id not in NOT_RECORDED]
#: Cases with a stream cut partway through (which no SDK retries) whose request the agent
#: sent again, the run going on.
RETRIED = [
    c
    for c in find_cases()
    if not _went_on(c) and any(_sent_again(c, r) for r in c.failed_attempts())
]


def test_the_corpus_holds_cut_answers_the_agent_went_on_from_at_several_turns() -> None:
    turns = {r["turn"] for c in RECOVERED for o in c.conversations() for r in c.recovered(o)}
    assert len(RECOVERED) >= 3 and len(turns) >= 2, ([c.id for c in RECOVERED], turns)


@pytest.mark.parametrize("case", RECOVERED, ids=lambda c: c.id)
def test_the_cut_call_is_a_failed_model_step_and_the_run_replays(case: Case) -> None:
    (run,) = check(case).runs
    failing = [s for s in run.model_steps() if fails_again(run, s)]
    assert len(failing) == sum(len(case.recovered(o)) for o in case.conversations())
    for step in failing:
        assert step.model is not None and step.model.output_messages  # its first deltas
        assert step.status == "ERROR" and not failed_end(run, step)
    assert run.kit.verdict == "full" and run.kit.replayable, run.kit.problems


@pytest.mark.parametrize("case", RECOVERED, ids=lambda c: c.id)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(again=st.integers(min_value=0, max_value=2))
def test_the_cut_call_fails_again_each_time_then_the_agent_is_served(
    case: Case, again: int
) -> None:
    engine = ReplayEngine(check(case).runs)
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for order, requests in case.conversations().items():
            recovered = case.recovered(order)
            headers = {"content-type": "application/json"}
            for r in sorted([*requests, *recovered], key=lambda r: int(r["seq"])):
                body = str(r["body_raw"]).encode()
                if r in recovered:
                    for _ in range(1 + again):
                        with pytest.raises(httpx.RemoteProtocolError):
                            http.post("/v1/chat/completions", content=body, headers=headers)
                    continue
                answer = http.post("/v1/chat/completions", content=body, headers=headers)
                assert answer.status_code == 200, (r["seq"], answer.text[:500])
                headers[CONVERSATION_HEADER] = answer.headers[CONVERSATION_HEADER]


@pytest.mark.parametrize("case", RETRIED, ids=lambda c: c.id)
def test_a_cut_call_sent_again_is_an_attempt_of_the_call_that_answered(case: Case) -> None:
    (run,) = check(case).runs
    attempts = [s for s in run.steps if s.retried_as]
    assert attempts and all(s.kind == "other" and s.model is None for s in attempts)
    assert not any(fails_again(run, s) for s in run.model_steps())
    assert run.kit.verdict == "full" and run.kit.replayable, run.kit.problems
