"""A failed call traced without its request joins the conversation that waited for it.

The cases ``cases/anthropic_openllmetry/anthropic_stream@seed-{31,32}`` were recorded by
running the hand-written Anthropic agent loop under OpenLLMetry's Anthropic instrumentation
(the SDK's own tracing left on: each call traced twice) on drawn scenarios whose model
server cuts one streamed answer partway: at the first answer (seed 31), at the answer after
the tools (seed 32).  OpenLLMetry exports no span of the cut call; the SDK's metadata span
of it ends in error, with no messages, in a trace of its own.  Read: that span is the run's
last model call, and the verdict says it is not in the trace.  Drawn around the recorded
pieces: when the stray call started (before or after the conversation's last call), its
process, and another conversation of the process waiting too, or ended: it joins exactly
when one conversation of its process waited for it.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import attributes as A
from otel_replay.replay.engine import ReplayEngine
from otel_replay.runs.failed_calls import STREAMED
from otel_replay.runs.steps import classify
from otel_replay.runs.stitch import ConversationKeys, group_pieces, piece_facts
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases" / "anthropic_openllmetry"
NOT_IN_THE_TRACE = "the run's last model call is not in the trace"


def _runs(seed: int) -> list[Any]:
    path = CASES / f"anthropic_stream@seed-{seed}" / "traces.binpb"
    assert path.is_file(), path  # the recorded case is the test's data: missing, it fails
    return list(otel_replay.load(path))


@pytest.mark.parametrize("seed", [31, 32])
def test_the_verdict_names_the_last_call_not_in_the_trace(seed: int) -> None:
    (run,) = _runs(seed)  # the stray span is no run of its own
    last = run.model_steps()[-1]
    assert last.status == "ERROR" and last.model.input_messages is None
    assert last.scope == "com.anthropic.sdk.python"
    assert f"steps[{last.index}].input_messages" in run.kit.missing
    assert any(last.label() in p and NOT_IN_THE_TRACE in p for p in run.kit.problems)
    assert not run.kit.replayable
    if seed == 32:  # the call before it, and its answer, are whole
        assert len(run.model_steps()) == 2 and run.kit.verdict == "model-only"


def _pieces() -> tuple[Any, Any]:
    """The seed-32 conversation without its stray call, and the seed-31 stray call."""
    (run,) = _runs(32)
    stray = run.model_steps()[-1]
    talk = copy.deepcopy(run)
    talk.steps = [s for s in talk.steps if s.span_id != stray.span_id]
    talk.roots = [s for s in talk.roots if s.span_id != stray.span_id]
    (alone,) = _runs(31)
    return piece_facts(talk, ConversationKeys()), piece_facts(alone, ConversationKeys())


@settings(max_examples=60, deadline=None)
@given(
    after=st.booleans(),
    same_process=st.booleans(),
    other=st.sampled_from(["none", "waiting", "ended", "elsewhere"]),
)
def test_a_stray_failed_call_joins_the_one_conversation_waiting_for_it(
    after: bool, same_process: bool, other: str
) -> None:
    talk, stray = _pieces()
    assert talk.asks_tools and not talk.failed_alone and stray.failed_alone
    stray = dataclasses.replace(
        stray,
        start_ns=talk.start_ns + (10 if after else -10),
        process=talk.process if same_process else talk.process + "-other",
    )
    pieces = [talk]
    if other != "none":
        second = dataclasses.replace(
            talk,
            run_id="second",
            start_ns=talk.start_ns + 1,
            asks_tools=other != "ended",
            process=talk.process + "-other" if other == "elsewhere" else talk.process,
            successors=(),  # no call continues it
        )
        pieces.append(second)
    pieces.append(stray)
    pieces.sort(key=lambda p: p.start_ns)
    groups = group_pieces(pieces)
    at = pieces.index(stray)
    group = next(g for g in groups if at in g)
    waiting = [
        i
        for i, p in enumerate(pieces)
        if p is not stray
        and p.asks_tools
        and p.process == stray.process
        and p.start_ns < stray.start_ns
    ]
    assert (group != [at]) == (len(waiting) == 1)
    if len(waiting) == 1:
        assert group == [waiting[0], at]
    if after and same_process:  # the recorded conversation, unless another waits too
        assert (group == [pieces.index(talk), at]) == (other != "waiting")


# OpenLLMetry's OpenAI instrumentation on a Responses stream cut partway
# (``cases/openai_openllmetry/responses_stream@seed-14``, recorded by running the hand-written
# OpenAI agent loop, async and streamed, on the drawn scenario of seed 14, which cuts the
# answer after the tools): it ends the cut call's span in error holding the request's model
# and that it streamed, no operation name, no messages, in a trace of its own.
RESPONSES_CUT = TESTS / "conformance" / "cases" / "openai_openllmetry"
RESPONSES_CUT = RESPONSES_CUT / "responses_stream@seed-14" / "traces.binpb"


def _responses_stray() -> tuple[Any, Any]:
    assert RESPONSES_CUT.is_file(), RESPONSES_CUT  # the recorded case is the test's data
    (run,) = otel_replay.load(RESPONSES_CUT)  # the stray span is no run of its own
    return run, run.model_steps()[-1]


def test_a_cut_responses_stream_span_joins_its_run_as_its_last_call() -> None:
    run, last = _responses_stray()
    assert last.status == "ERROR" and last.model.input_messages is None
    assert last.attributes.get("gen_ai.is_streaming") in (True, "True", "true")
    assert len(run.model_steps()) == 3 and last.trace_id != run.model_steps()[0].trace_id
    assert f"steps[{last.index}].input_messages" in run.kit.missing
    assert any(last.label() in p and NOT_IN_THE_TRACE in p for p in run.kit.problems)
    assert not run.kit.replayable


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_span_naming_a_model_and_a_stream_is_a_model_call(data: st.DataObject) -> None:
    """Of the stray span's own attributes, drawn subsets (and the stream flag's spellings):
    it is a model call when it names a model or provider and that it streamed (or holds
    messages or usage), whatever else it holds."""
    _, last = _responses_stray()
    attrs = {k: v for k, v in last.attributes.items() if k != A.OPERATION_NAME}
    kept = data.draw(st.sets(st.sampled_from(sorted(attrs))))
    drawn = {k: attrs[k] for k in kept}
    flag = data.draw(st.sampled_from([None, *STREAMED]))
    if flag is not None:
        drawn[flag] = data.draw(st.sampled_from([True, "True", "true"]))
    names = A.REQUEST_MODEL in drawn or A.PROVIDER_NAME in drawn
    holds = any(
        k in drawn for k in (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.USAGE_INPUT_TOKENS, *STREAMED)
    )
    assert (classify(drawn) == "model") == (names and holds), drawn


#: The recorded cases whose last model call is traced without its request: OpenLLMetry's
#: Anthropic (cut at the first answer, at the answer after the tools) and its OpenAI
#: Responses instrumentation (cut after two answers).
STRAY_CUTS = [
    CASES / "anthropic_stream@seed-31",
    CASES / "anthropic_stream@seed-32",
    RESPONSES_CUT.parent,
]


@pytest.mark.parametrize("case", STRAY_CUTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_serve_names_the_last_call_not_in_the_trace(case: Any) -> None:
    """``serve``, sent the requests the recorded client sent: the request that reaches the
    call traced without its request is told what the trace lacks, naming that step (as
    the verdict does), not only where it diverged."""
    sent = case / "server.jsonl"
    assert sent.is_file(), sent  # the recorded case is the test's data: missing, it fails
    (run,) = otel_replay.load(case / "traces.binpb")
    last = run.model_steps()[-1]
    engine = ReplayEngine([run])
    said = []
    with open(sent, encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            answer = engine.handle("POST", r["path"], r["body_raw"].encode(), {})
            if answer.status >= 400:
                said.append(json.loads(b"".join(answer.chunks))["error"]["message"])
    assert said, "no request diverged"
    # Named with the step: as the start of the divergence, or as the place it most
    # likely belonged (the conversation waiting for it).
    named = f"{last.label()}: {NOT_IN_THE_TRACE}"
    assert all(named in m for m in said), said
