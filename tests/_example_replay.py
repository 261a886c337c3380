"""Test helper: the example agent replayed from a run read back from a backend."""

from __future__ import annotations

from examples.order_support.agent import run_agent

import otel_replay


def replays_alike(local: otel_replay.Run, back: otel_replay.Run) -> str:
    """Replay the example agent from the recorded run and from the run read back: each
    replay follows its run and gives the same answer, which is returned."""
    user = back.fingerprint["user.id"]
    answers = []
    for run in (local, back):
        with otel_replay.replay(run) as session:
            answers.append(run_agent("Where is my order?", model=session.model, user_id=user))
            assert session.check_output(answers[-1])
        assert session.report().matched
    assert answers[0] == answers[1]
    return answers[1]
