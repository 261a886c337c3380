"""A streamed answer that did not reach its end, traced with nothing around the call.

The cases ``cases/openai_openllmetry/stream@seed-{31,32,52}`` were recorded by running
the hand-written OpenAI agent loop under OpenLLMetry's OpenAI instrumentation on drawn
scenarios whose model server cuts one streamed answer partway (at the first turn, with a
tool call's arguments cut inside their JSON; at the answer after the tools, inside its
text; at the first turn, after two whole calls): the client raised, and the loop with it.
OpenLLMetry ends that span unfailed, with the first deltas as its answer, no finish reason,
and ``gen_ai.is_streaming``; no span is around it.  That is the call that failed and ended
the run (``failed_end``): a replay fails it again.  Drawn around the recorded runs: whether
the span says it streamed (and how the flag is spelled), whether its answer has a finish
reason, and whether the run went on after it (a later call): a stream cut short that the
run went on after is an answer not recorded whole, which the verdict names and a replay
refuses.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.pinned_model import unanswered
from otel_replay.replay.servable import servable
from otel_replay.runs.failed_calls import failed_end, fails_again
from otel_replay.runs.kit import check_kit
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases" / "openai_openllmetry"
SEEDS = (31, 32, 52)


def _run(seed: int) -> Any:
    path = CASES / f"stream@seed-{seed}" / "traces.binpb"
    assert path.is_file(), path  # the recorded case is the test's data: missing, it fails
    (run,) = otel_replay.load(path)
    return copy.deepcopy(run)


@pytest.mark.parametrize("seed", SEEDS)
def test_the_recorded_cut_stream_is_the_call_that_ended_its_run(seed: int) -> None:
    run = _run(seed)
    last = run.model_steps()[-1]
    assert last.parent_span_id is None and last.status != "ERROR"
    assert last.model.finish_reasons in (None, [])
    assert failed_end(run, last)
    assert not any(m.endswith("finish_reasons") for m in run.kit.missing)
    assert not [p for p in servable(run) if p.kind == "unanswered"], servable(run)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.sampled_from(SEEDS),
    flag=st.sampled_from([True, "true", None]),
    reason=st.booleans(),
    went_on=st.booleans(),
)
def test_a_stream_without_its_end_ends_the_run_or_is_named_missing(
    seed: int, flag: Any, reason: bool, went_on: bool
) -> None:
    run = _run(seed)
    last = run.model_steps()[-1]
    if flag is None:
        del last.attributes["gen_ai.is_streaming"]
    else:
        last.attributes["gen_ai.is_streaming"] = flag
    if reason:
        last.model.finish_reasons = ["stop"]
    if went_on:  # the first call asked again after it
        again = copy.deepcopy(run.model_steps()[0])
        again = dataclasses.replace(
            again, span_id="later", start_ns=last.end_ns + 1, end_ns=last.end_ns + 2
        )
        again.index = len(run.steps)
        run.steps.append(again)
    cut = flag is not None and not reason
    assert failed_end(run, last) == (cut and not went_on)
    kit = check_kit(run)
    named = f"steps[{last.index}].finish_reasons" in kit.missing
    assert named == (cut and went_on), kit.missing
    refused = [p for p in servable(run) if p.kind == "unanswered" and last.label() in str(p)]
    assert bool(refused) == (cut and went_on), refused
    if not failed_end(run, last):  # what the replay asks before serving the step
        assert (unanswered(last, went_on=went_on) is not None) == (cut and went_on)
    if named:
        assert kit.verdict != "full" and not kit.replayable
        assert any(last.label() in p and "did not reach its end" in p for p in kit.problems)


class _ReadFromTheEndOnly(list[Any]):
    """A run's steps that may be read from the end only."""

    def __iter__(self) -> Any:
        raise AssertionError("the run's steps were read from the start")


def test_a_call_before_the_last_is_told_from_the_run_s_end() -> None:
    """A replay asks of every call it serves whether it failed and ended the run: a call
    with no finish reason recorded before the last call is told without reading the run's
    other calls (listing them made each request cost the run's length)."""
    run = _run(32)  # two calls: the second cut
    first, _ = run.model_steps()
    first.model.finish_reasons = None
    run.steps = _ReadFromTheEndOnly(run.steps)
    assert not failed_end(run, first)
    assert not fails_again(run, first)
