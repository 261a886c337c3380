"""serve: a request that matches nothing diverges where it most likely belongs.

A newcomer served a recording, replayed it once, then changed the question and
sent it again: the server answered "diverged at step 3" of the conversation
that had already finished, with that conversation as what was expected.  A new
question is a new conversation: it diverges at the first request of the run it
is closest to; a request that goes on a conversation diverges at that
conversation's next step.  Drawn over every point a conversation can stand at
(recorded calls of a real openai-v2 trace, sent as its client sent them).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from tests.unit.replay.test_serve_hostile import CHAT, DATA, InProcess, bodies

CHANGED = "What is the weather in Lyon today?"


@pytest.fixture(scope="module")
def runs() -> list[otel_replay.Run]:
    return otel_replay.load(str(DATA / CHAT / "traces.otlp.jsonl"))


@pytest.fixture
def served(runs: list[otel_replay.Run]) -> Iterator[InProcess]:
    app = InProcess(ReplayEngine(runs))
    try:
        yield app
    finally:
        app.close()


def changed_last_user(body: bytes, text: str = CHANGED) -> bytes:
    """The request with its last user message saying something else."""
    doc: dict[str, Any] = json.loads(body)
    users = [m for m in doc["messages"] if m["role"] == "user"]
    users[-1]["content"] = text
    return json.dumps(doc).encode()


def diverged(response: Any) -> tuple[int, int]:
    """(the step, the conversation) a 409 names."""
    assert response.status_code == 409, response.text[:300]
    error = response.json()["error"]
    return error["step"], error["conversation"]


def first_step(run: otel_replay.Run) -> int:
    return run.model_steps()[0].index


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(played=st.integers(0, 3), clients_before=st.integers(0, 2))
def test_a_new_question_diverges_at_the_first_request_not_in_another_conversation(
    runs: list[otel_replay.Run], played: int, clients_before: int
) -> None:
    recorded = bodies(CHAT)
    app = InProcess(ReplayEngine(runs))
    try:
        for _ in range(clients_before):  # whole conversations, finished
            for body in recorded:
                assert app.post("/v1/chat/completions", body).status_code == 200
        for body in recorded[:played]:  # one under way (or finished, at 3)
            assert app.post("/v1/chat/completions", body).status_code == 200
        under_way = max(app.engine.conversations, default=None)
        step, conv = diverged(app.post("/v1/chat/completions", changed_last_user(recorded[0])))
        assert step == first_step(runs[0])
        assert conv != under_way  # a conversation of its own, started anew
    finally:
        app.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(at=st.integers(1, 2), others=st.integers(0, 2))
def test_a_request_that_goes_on_a_conversation_diverges_at_its_next_step(
    runs: list[otel_replay.Run], at: int, others: int
) -> None:
    recorded = bodies(CHAT)
    steps = [s.index for s in runs[0].model_steps()]
    app = InProcess(ReplayEngine(runs))
    try:
        for body in recorded[:at]:
            assert app.post("/v1/chat/completions", body).status_code == 200
        ours = max(app.engine.conversations)
        for _ in range(others):  # other clients start after it, and stand at their first step
            assert app.post("/v1/chat/completions", recorded[0]).status_code == 200
        # The next request, with the tool's result changed: it went on from where ours stands.
        doc = json.loads(recorded[at])
        doc["messages"][-1]["content"] = json.dumps({"changed": at})
        step, conv = diverged(app.post("/v1/chat/completions", json.dumps(doc).encode()))
        assert step == steps[at]
        if at > 1 or not others:  # (others standing where ours stands may take it as well)
            assert conv == ours
    finally:
        app.close()


def test_a_named_conversation_still_diverges_in_itself(served: InProcess) -> None:
    recorded = bodies(CHAT)
    name = {CONVERSATION_HEADER: "mine"}
    assert served.post("/v1/chat/completions", recorded[0], name).status_code == 200
    step, _ = diverged(served.post("/v1/chat/completions", changed_last_user(recorded[0]), name))
    assert step == [s.index for s in served.engine.runs[0].model_steps()][1]
