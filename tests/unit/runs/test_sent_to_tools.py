"""What the model was sent for each call a tool step ran, found whatever the ids.

A result comes back to the model in a later request under the call's id; a call
the model sent without one is answered under an id the framework made (pydantic-ai's
``pyd_ai_…``), or none, or a counter that restarts in every answer.  The trace of a
real pydantic-ai agent under a model that gives no ids (a conformance case, one tool
failing twice) is read with its later requests' ids redrawn: each tool step must find
what it returned, or, for a failed one, the error it told the model.
"""

from __future__ import annotations

import copy
import functools
import random
import uuid
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import messages as M
from otel_replay.runs.model import Run
from otel_replay.runs.tool_spans import sent_to_tools
from otel_replay.same_message import spelled_value
from tests.conformance.checks import Case
from tests.fixtures.data import ROOT

CASE = Case(ROOT / "tests/conformance/cases/pydantic_ai/sync@seed-27")


@functools.cache
def _loaded() -> Run:
    (run,) = otel_replay.load(*CASE.trace_files())
    return run


def _run() -> Run:
    return copy.deepcopy(_loaded())


def _strings(value: Any) -> list[str]:
    """Every text in ``value`` (JSON text parsed): an error told the model sits in one."""
    value = spelled_value(value)
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _check(run: Run) -> None:
    sent = sent_to_tools(run.steps)
    tools = [s for s in run.steps if s.kind == "tool" and s.tool is not None]
    assert len(tools) == 5
    for step in tools:
        t = step.tool
        assert t is not None
        assert step.index in sent, step.label()
        if t.error is not None:
            assert any(t.error.message in s for s in _strings(sent[step.index]))
        else:
            assert spelled_value(sent[step.index]) == spelled_value(t.result)


def test_each_tool_step_finds_what_the_model_was_sent_under_the_ids_the_framework_made() -> None:
    run = _run()
    models = [s for s in run.steps if s.kind == "model" and s.model is not None]
    # As recorded: the answers carry no id, the later requests pydantic-ai's own.
    answers = [m.model.output_messages or [] for m in models if m.model is not None]
    assert all(not c.get("id") for out in answers for c in M.tool_calls(out))
    _check(run)


#: How a later request names the calls: one made id per call (uuids), none at all, or a
#: counter that restarts in every answer.
ID_SHAPES = st.sampled_from(["made", "none", "counter"])


@settings(max_examples=60, deadline=None)
@given(shape=ID_SHAPES, seed=st.integers(0, 2**32 - 1))
def test_the_result_is_found_by_its_place_whatever_ids_the_later_requests_use(
    shape: str, seed: int
) -> None:
    run = _run()
    rng = random.Random(seed)
    renamed: dict[str, str] = {}

    def rename(old: Any, position: int) -> Any:
        if not isinstance(old, str):
            return old
        if shape == "none":
            return ""
        if shape == "counter":
            return f"call_{position}"
        return renamed.setdefault(old, str(uuid.UUID(int=rng.getrandbits(128), version=4)))

    for step in run.steps:
        if step.kind != "model" or step.model is None:
            continue
        messages = copy.deepcopy(step.model.input_messages or [])
        # Each made id's place among its answer's calls (the counter restarts per answer).
        place: dict[str, int] = {}
        for message in messages:
            calls = [p for p in message.get("parts") or [] if p.get("type") == "tool_call"]
            place.update((part["id"], i) for i, part in enumerate(calls))
        for message in messages:
            for part in message.get("parts") or []:
                if part.get("type") in ("tool_call", "tool_call_response"):
                    part["id"] = rename(part.get("id"), place.get(part.get("id"), 0))
        step.model.input_messages = messages
    _check(run)
