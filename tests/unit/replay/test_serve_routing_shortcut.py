"""serve: a request sending the recorded messages is routed without keying them, as if keyed.

The engine takes the keys of a request that sends, as recorded, the messages
the last conversation served expects next from when that conversation was
filed; when that conversation is the only one kept, it routes the request
there without keys at all, and files conversations only when an index is read.  Drawn sequences of requests from several clients (each replaying the
recorded conversation of a real openai-v2 trace, going back to a request it
sent before, sending one never recorded, naming its conversation or not) are
sent to two engines over the same runs, one with the shortcut and one keying
every request: every answer is the same (status, conversation, step, body).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.engine import CONVERSATION_HEADER, Conversation, ReplayEngine
from tests.unit.replay.test_serve_hostile import CHAT, DATA, InProcess, bodies, divergent


class Keyed(ReplayEngine):
    """The engine as it was: every request keyed, every conversation filed at once."""

    def _only_continued(self, messages: list[dict[str, Any]]) -> None:
        return None

    def _recorded_as_sent(self, messages: list[dict[str, Any]]) -> None:
        return None

    def _wait(self, conv: Conversation) -> None:
        super()._wait(conv)
        self._file_pending()


@pytest.fixture(scope="module", params=["as recorded", "an answer lost"])
def runs(request: pytest.FixtureRequest) -> list[otel_replay.Run]:
    """The runs; or with the second model call's answer lost (answered 500, the
    conversation past it without being filed again)."""
    runs = otel_replay.load(str(DATA / CHAT / "traces.otlp.jsonl"))
    if request.param == "an answer lost":
        step = [s for s in runs[0].steps if s.kind == "model"][1]
        assert step.model is not None
        step.model = dataclasses.replace(
            step.model, output_messages=[], output_payload=None, raw=None
        )
    return runs


@pytest.fixture(scope="module")
def sent() -> list[bytes]:
    return bodies(CHAT)


#: (client, what it sends): the next recorded request, one it sent before, one never
#: recorded; with its conversation named or not.
ACTIONS = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from(["next", "again", "divergent"]),
        st.booleans(),
    ),
    min_size=1,
    max_size=12,
)


def answer(response: Any) -> tuple[Any, ...]:
    return (
        response.status_code,
        response.headers.get(CONVERSATION_HEADER),
        response.headers.get("x-otel-replay-step"),
        response.content,
    )


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(actions=ACTIONS)
def test_requests_sent_as_recorded_go_where_keying_them_sends_them(
    runs: list[otel_replay.Run], sent: list[bytes], actions: list[tuple[int, str, bool]]
) -> None:
    shortcut, keyed = InProcess(ReplayEngine(runs)), InProcess(Keyed(runs))
    try:
        at = [0, 0, 0]
        for client, what, named in actions:
            if what == "next":
                body = sent[at[client] % len(sent)]
                at[client] += 1
            elif what == "again":
                body = sent[max(0, at[client] - 1) % len(sent)]
            else:
                body = divergent()
            headers = {CONVERSATION_HEADER: f"client-{client}"} if named else {}
            got = answer(shortcut.post("/v1/chat/completions", body, headers))
            assert got == answer(keyed.post("/v1/chat/completions", body, headers))
    finally:
        shortcut.close()
        keyed.close()
