"""A stream cut partway that the framework recorded as an ended answer.

The class: a model call whose answer streamed and was cut (no finish reason, its tool calls
never run, the run ended in the error its client raised), which the framework's tracing
ended unfailed, holding what streamed before the cut.  The cases were recorded by running
the stacks on drawn scenarios whose model server cuts one streamed answer partway
(``python -m tests.conformance.generate STACK --mode MODE --seed N``): pydantic-ai 2 at the
first turn after two whole tool calls (``seed-1061220460``: no call before it says whether
the tracing records finish reasons) and at a later turn, inside a call's arguments
(``seed-92``) and after a whole call (``seed-114``); OpenLLMetry's OpenAI instrumentation, around the hand-written loop and
around AutoGen's (``seed-1061220460``, at the first turn after a whole tool call).  Each
span says it streamed in its own way: pydantic-ai times the stream's first chunk
(``gen_ai.client.operation.time_to_first_chunk``), OpenLLMetry sets
``gen_ai.is_streaming``.  That call failed and ended the run (``failed_end``): the rebuild
says so, and a replay fails it again, where it served the first deltas as the answer (the
agent then ran tools the recording never ran).

Drawn around the recorded runs: how the span says it streamed (or does not), whether its
answer has a finish reason, whether the error went up to the agent's span, whether the run
went on after it, and whether a call before it holds a finish reason.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from otel_replay.replay.servable import servable
from otel_replay.runs.failed_calls import STREAMED, failed_end, fails_again
from otel_replay.runs.kit import check_kit
from tests.conformance.checks import Case, check, find_cases
from tests.conformance.endings import RAISES


def _ended_unfailed(case: Case) -> bool:
    """Whether ``case`` holds a run that ended in a stream its server cut, and whose last
    model call the tracing ended unfailed."""
    if not case.raised or not any(r.get("cut") == "stream" for r in case.posts()):
        return False
    if case.ending is not None and RAISES not in case.ending["kinds"]:
        return False  # the framework went on from the cut answer: no client error ended it
    cut = [case.cut(order) for order in case.raised]
    if not any(r is not None and r.get("cut") == "stream" for r in cut):
        return False
    return any(
        run.model_steps() and run.model_steps()[-1].status != "ERROR" for run in check(case).runs
    )


#: Every recorded case of the class, whatever the stack.
CASES = [c for c in find_cases() if _ended_unfailed(c)]
#: Its pydantic-ai cases: the call cut at the first turn, and at later ones.
PYDANTIC = {c.id: c for c in CASES if c.id.startswith("pydantic_ai/")}
FIRST_TURN = "pydantic_ai/async_stream@seed-1061220460"
LATER_TURN = "pydantic_ai/async_stream@seed-92"
LATER_WHOLE = "pydantic_ai/async_stream@seed-114"
#: How a span says its answer streamed: the flags, and the first chunk timed.
SAID = (
    *((key, True) for key in STREAMED),
    ("gen_ai.client.operation.time_to_first_chunk", 0.048),
    ("gen_ai.response.time_to_first_chunk", 0.031),
)


def test_the_corpus_holds_the_class_at_several_turns_and_in_several_stacks() -> None:
    assert {FIRST_TURN, LATER_TURN, LATER_WHOLE} <= set(PYDANTIC), [c.id for c in CASES]
    assert len({c.id.partition("/")[0] for c in CASES}) >= 2, [c.id for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_cut_call_ended_the_run_and_the_run_replays(case: Case) -> None:
    outcome = check(case)
    assert not outcome.problems, outcome.problems
    for run in outcome.runs:
        last = run.model_steps()[-1]
        assert last.status != "ERROR" and not (last.model and last.model.finish_reasons)
        assert failed_end(run, last) and fails_again(run, last)
        assert not [p for p in servable(run) if p.kind == "unanswered"], servable(run)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_serve_cuts_the_call_again_after_answering_those_before(case: Case) -> None:
    engine = ReplayEngine(check(case).runs)
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for order in case.raised:
            cut = case.cut(order)
            assert cut is not None and cut.get("cut") == "stream"
            headers = {"content-type": "application/json"}
            for r in case.conversations()[order]:
                body = str(r["body_raw"]).encode()
                answer = http.post(str(r["path"]), content=body, headers=headers)
                assert answer.status_code == 200, (r["seq"], answer.text[:500])
                headers[CONVERSATION_HEADER] = answer.headers[CONVERSATION_HEADER]
            # The cut call: its first deltas, then the connection closes, as recorded.
            with pytest.raises(httpx.RemoteProtocolError):
                http.post(str(cut["path"]), content=str(cut["body_raw"]).encode(), headers=headers)


def _run(case_id: str) -> Any:
    (run,) = check(PYDANTIC[case_id]).runs
    return copy.deepcopy(run)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    case_id=st.sampled_from([FIRST_TURN, LATER_TURN, LATER_WHOLE]),
    said=st.sampled_from([None, *SAID]),
    reason=st.booleans(),
    went_up=st.booleans(),
    went_on=st.booleans(),
    earlier_reason=st.booleans(),
)
def test_an_unfailed_stream_without_its_end_ended_the_run_or_is_named_missing(
    case_id: str,
    said: tuple[str, Any] | None,
    reason: bool,
    went_up: bool,
    went_on: bool,
    earlier_reason: bool,
) -> None:
    run = _run(case_id)
    last = run.model_steps()[-1]
    earlier = run.model_steps()[:-1]
    for key, _ in SAID:
        last.attributes.pop(key, None)
    if said is not None:
        last.attributes[said[0]] = said[1]
    if reason:
        last.model.finish_reasons = ["tool_call"]
    if not went_up:  # the agent caught the error: its span ended unfailed
        for s in run.steps:
            if s.kind == "agent":
                s.status, s.status_message, s.events = "UNSET", None, []
    for s in earlier:
        s.model.finish_reasons = ["tool_call"] if earlier_reason else None
    if went_on:  # the first call asked again after it
        again = dataclasses.replace(
            copy.deepcopy(run.model_steps()[0]),
            span_id="later",
            start_ns=last.end_ns + 1,
            end_ns=last.end_ns + 2,
        )
        again.index = len(run.steps)
        run.steps.append(again)
    stream_cut = said is not None and not reason
    # Without a word of a stream, a missing finish reason says a cut where every call
    # before it has one (the tracing records them).
    cut_short = not reason and bool(earlier) and earlier_reason
    assert failed_end(run, last) == ((stream_cut or cut_short) and went_up and not went_on)
    kit = check_kit(run)
    named = f"steps[{last.index}].finish_reasons" in kit.missing
    assert named == (stream_cut and not failed_end(run, last)), kit.missing
    refused = [p for p in servable(run) if p.kind == "unanswered" and last.label() in str(p)]
    assert bool(refused) == named, refused
    if named:
        assert kit.verdict != "full" and not kit.replayable
