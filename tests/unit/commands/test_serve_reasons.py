"""What ``serve`` leaves out, and why: a run is left out only for what keeps all of it
from being served (no content recorded, no model calls), told by the reason's kind,
never by the words of a reason, which name runs and steps as the trace chose them."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.commands.serve import served
from otel_replay.runs.model import Run
from tests.fixtures.data import TESTS

CASE = TESTS / "conformance" / "cases" / "crewai" / "sync"
(RECORDED,) = otel_replay.load(str(CASE / "traces.binpb"))

#: The words of the reasons that leave a whole run out.
WHOLE_RUN_WORDS = st.sampled_from(["inspect-only", "no model calls", "is inspect-only: content"])
#: Text a trace may put around them: any characters, escapes and newlines included.
AROUND = st.text(max_size=12)


def _fresh() -> Run:
    return copy.deepcopy(RECORDED)


@settings(max_examples=60, deadline=None)
@given(before=AROUND, words=WHOLE_RUN_WORDS, after=AROUND, in_run_id=st.booleans())
def test_a_run_whose_names_read_like_a_whole_run_reason_is_served(
    before: str, words: str, after: str, in_run_id: bool
) -> None:
    run = _fresh()
    step = run.model_steps()[0]
    assert step.model is not None
    named = before + words + after
    if in_run_id:
        run.run_id = named
    else:
        step.name = named
    step.model.input_messages = []  # a step-level reason, which names the run and step
    good, reasons = served([run])
    assert good == [run]
    assert [r.kind for r in reasons] == ["no_input"]
    assert named in str(reasons[0])
    assert not reasons[0].whole_run


@settings(max_examples=20, deadline=None)
@given(name=AROUND)
def test_a_run_with_nothing_to_serve_is_left_out_whatever_it_is_named(name: str) -> None:
    inspect_only, no_calls, fine = _fresh(), _fresh(), _fresh()
    for run in (inspect_only, no_calls, fine):
        run.run_id = name
    for step in inspect_only.steps:  # no content recorded
        if step.model is not None:
            step.model.input_messages = None
            step.model.output_messages = None
    no_calls.steps = [s for s in no_calls.steps if s.kind != "model"]
    good, reasons = served([inspect_only, no_calls, fine])
    assert good == [fine]
    assert [r.kind for r in reasons] == ["inspect_only", "no_model_calls"]
    assert all(r.whole_run for r in reasons)
    assert [str(r) for r in reasons] == [r.message for r in reasons]
