"""A trace may name a span its own parent, or close a loop of parents (a hostile or broken
exporter): telling whether a failed model call's error went up, and the verdict built on
it, end on such runs.  Drawn: a real run with a failed last model call (LiteLLM failing on
a 503, tests/conformance/cases/), its spans' parents rewired at random among its own spans,
itself included.  Before, the walk up the parents went round a loop for ever (a fuzzed
request to ``ls`` hung)."""

from __future__ import annotations

import copy
import signal
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import given
from hypothesis import strategies as st

import otel_replay
from otel_replay.runs.failed_calls import failed_end, fails_again, kept_cut
from otel_replay.runs.kit import check_kit
from tests.conformance.checks import CASES

CASE = CASES / "litellm_otel" / "responses@seed-573398989"
(_RUN,) = otel_replay.load(str(CASE / "traces.binpb"))


@contextmanager
def _within(seconds: float) -> Iterator[None]:
    def _stop(*_: object) -> None:
        raise TimeoutError(f"not done within {seconds} s: a loop of parents walked for ever")

    old = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@given(st.data())
def test_a_loop_of_parents_is_walked_once(data: st.DataObject) -> None:
    run = copy.deepcopy(_RUN)
    ids = [s.span_id for s in run.steps]
    assert any(s.status == "ERROR" and s.kind == "model" for s in run.steps)
    for step in run.steps:
        step.parent_span_id = data.draw(st.sampled_from([*ids, None]))
    with _within(5):
        for step in run.steps:
            failed_end(run, step)
            fails_again(run, step)
            kept_cut(run, step)
        check_kit(run)
