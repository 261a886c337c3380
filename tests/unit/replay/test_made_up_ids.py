"""A served answer whose calls the trace holds without an id says it made the ids up.

Some model servers give calls no id, or an empty one, which tracers do not keep: the
trace holds the call without an id, and serve must make one up for the client.  That
is a re-spelling of what the wire carried, and the answer names those calls.  (The
conformance case ``autogen/async@seed-27`` is a real stack's trace of such calls.)
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.runs.model import ModelCall, Step
from otel_replay.wire.spelling import spell

_ids = st.one_of(st.none(), st.just(""), st.text("abc_0123456789", min_size=1, max_size=8))


@settings(max_examples=100, deadline=None)
@given(ids=st.lists(_ids, min_size=1, max_size=4))
def test_calls_recorded_without_an_id_are_named_as_made_up(ids: list[str | None]) -> None:
    calls: list[dict[str, Any]] = []
    for i, call_id in enumerate(ids):
        call: dict[str, Any] = {"type": "tool_call", "name": f"tool{i}", "arguments": {"k": i}}
        if call_id is not None:
            call["id"] = call_id
        calls.append(call)
    output = [{"role": "assistant", "parts": calls}]
    step = Step(
        "model", "chat", "a" * 16, None, "b" * 32, 0, 1, model=ModelCall(output_messages=output)
    )
    spelled = spell(step, calls)
    # An id the trace holds (the empty one too) is served as it is; none is made up.
    assert spelled.made_up_ids == [f"tool{i}" for i, c in enumerate(ids) if c is None]
