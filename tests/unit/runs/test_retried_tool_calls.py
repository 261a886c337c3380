"""A tool the framework ran again at once after it raised is one call: its last attempt.

The case ``cases/langgraph_openinference/sync@seed-16`` was recorded by running LangChain
1.x's ``create_agent`` with ``ToolRetryMiddleware`` (traced by OpenInference) on the drawn
scenario ``seed-16``: ``open_ticket`` raises once, the middleware runs it again, and the
model is sent the second attempt's result.  Each attempt is a tool span beside the one
before, under the same ``tools`` span; the failed one records no call id.  Drawn here from
that trace's own records: how many attempts failed before the last, each one's error, and
whether the last failed too (every attempt did: the model was sent its error).  The spans
come in any order.  A replay's stub tools then answer the framework's calls of it with each
failed attempt's error in turn, then the last attempt, so that it retries as it did.
"""

from __future__ import annotations

import dataclasses
import functools
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.capture.hooks import ToolInvocation
from otel_replay.cli.render import step_line
from otel_replay.otlp.records import EventRecord, SpanRecord
from otel_replay.payload import codec as payload
from otel_replay.replay.divergence import ReplayDivergence
from otel_replay.replay.tool_stubs import ToolStubs
from otel_replay.runs.build import build_runs
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import TESTS

CASE = TESTS / "conformance" / "cases" / "langgraph_openinference" / "sync@seed-16"
TOOL = "open_ticket"


@functools.cache
def _records() -> tuple[list[SpanRecord], SpanRecord, SpanRecord]:
    """The case's spans but the tool's two attempts; its failed attempt; its last one."""
    records = list(SpanReader(CASE / "traces.binpb"))
    failed, last = sorted((r for r in records if r.name == TOOL), key=lambda r: r.start_ns)
    assert failed.status_code == 2 and last.status_code != 2, "the case as recorded"
    rest = [r for r in records if r.name != TOOL]
    return rest, failed, last


def _failed_as(failed: SpanRecord, span_id: str, start: int, end: int, message: str) -> SpanRecord:
    """The recorded failed attempt again: another span, at another time, another error."""
    events = [
        EventRecord(e.name, start, {**e.attributes, "exception.message": message})
        for e in failed.events
    ]
    return dataclasses.replace(
        failed,
        span_id=span_id,
        start_ns=start,
        end_ns=end,
        events=events,
        status_message=f"RuntimeError({message!r})",
    )


def _drawn_run(messages: list[str], all_failed: bool, seed: random.Random) -> tuple[Any, str]:
    """The case's run with the tool's attempts as drawn; the last attempt's span id."""
    rest, failed, last = _records()
    attempts = len(messages) + 1
    slot = (last.end_ns - failed.start_ns) // attempts
    spans = [
        _failed_as(failed, f"{0xA77E + i:016x}", failed.start_ns + i * slot, 0, m)
        for i, m in enumerate(messages)
    ]
    spans = [dataclasses.replace(s, end_ns=s.start_ns + slot - 1) for s in spans]
    start = failed.start_ns + len(messages) * slot
    if all_failed:
        final = _failed_as(failed, last.span_id, start, last.end_ns, LAST_ERROR)
    else:
        final = dataclasses.replace(last, start_ns=start)
    records: list[Any] = [*rest, *spans, final]
    seed.shuffle(records)  # the order spans arrive in says nothing
    (run,) = build_runs(records)
    return run, final.span_id


LAST_ERROR = "le dernier essai"
errors = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(errors, min_size=0, max_size=4),
    all_failed=st.booleans(),
    seed=st.randoms(use_true_random=False),
)
def test_a_tool_run_again_after_it_raised_is_one_tool_step_that_keeps_its_attempts(
    messages: list[str], all_failed: bool, seed: random.Random
) -> None:
    run, last = _drawn_run(messages, all_failed, seed)
    (step,) = [s for s in run.tool_steps() if s.tool.tool_name == TOOL]
    assert step.span_id == last, "the last attempt is the tool step"
    assert (step.tool.error is not None) == all_failed
    assert step.tool.call_id == f"call_{TOOL}_6080", "joined to the model's call"
    kept = [s for s in run.steps if s.retried_as == step.span_id]
    assert [s.span_id for s in kept] == [f"{0xA77E + i:016x}" for i in range(len(messages))]
    for attempt, message in zip(kept, messages, strict=True):
        assert attempt.kind == "other" and attempt.status == "ERROR"
        assert attempt.tool is not None and attempt.tool.error is not None
        assert attempt.tool.error.message == message
        # The id and arguments of the call they ran, which the failed span did not record.
        assert attempt.tool.call_id == step.tool.call_id
        assert attempt.tool.arguments == step.tool.arguments
        assert f"a failed attempt, retried as span {step.span_id}" in step_line(attempt)
        assert run.to_json()["steps"][attempt.index]["retried_as"] == step.span_id
    assert len(run.tool_steps()) == 2, "lookup_order and the one call of open_ticket"
    assert run.kit.verdict == "full", run.kit.problems


@settings(max_examples=40, deadline=None)
@given(
    messages=st.lists(errors, min_size=0, max_size=4),
    all_failed=st.booleans(),
    seed=st.randoms(use_true_random=False),
    with_id=st.booleans(),
)
def test_stub_tools_raise_each_failed_attempt_in_turn_then_answer_the_call(
    messages: list[str], all_failed: bool, seed: random.Random, with_id: bool
) -> None:
    """The framework calls the tool again after each error, with the call's id (LangChain
    passes it) or without: each failed attempt's error in turn, then the last attempt's
    outcome.  One more call after a result was not recorded; after a last error, it is
    that error again (the stubs' rule for a framework that tries a failing call again
    before the model is asked anything)."""
    run, _ = _drawn_run(messages, all_failed, seed)
    (step,) = [s for s in run.tool_steps() if s.tool.tool_name == TOOL]
    stubs = ToolStubs(run)
    args = dict(step.tool.arguments)
    call_id = step.tool.call_id if with_id else None

    def call() -> Any:
        return stubs.resolve(ToolInvocation(TOOL, call_id, args, payload.encode(args)))

    for message in messages:
        resolution = call()
        assert resolution.action == "raise" and str(resolution.error) == message
    resolution = call()
    if all_failed:
        assert resolution.action == "raise" and str(resolution.error) == LAST_ERROR
        assert str(call().error) == LAST_ERROR
        return
    assert resolution.action == "return" and resolution.value == step.tool.result
    with pytest.raises(ReplayDivergence):
        call()
