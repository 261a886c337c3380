"""The worked example's regression tests: replay the recorded complaint.

The recording in examples/order_support/recordings/ is the case file of the
complaint: user u_7710 asked "Where is my order?" and was told about order
#4421, which belongs to u_2001.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from examples.order_support.agent import ORDERS, run_agent
from examples.order_support.scripted_model import ScriptedModel

import otel_replay
from tests.fixtures.cli import python_process
from tests.fixtures.data import ROOT

RECORDING = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"


def owner_of_answer(answer: str) -> str | None:
    return next((o["user_id"] for o in ORDERS if f"#{o['order_id']}" in answer), None)


def recorded() -> otel_replay.Run:
    (run,) = otel_replay.load(RECORDING)
    return run


def test_the_case_file_is_complete() -> None:
    run = recorded()
    assert run.kit.verdict == "full" and run.replayable
    assert run.fingerprint["user.id"] == "u_7710"
    assert run.fingerprint["tenant.id"] == "widgets-eu"
    lookup = next(s for s in run.tool_steps() if s.tool and s.tool.tool_name == "lookup_order")
    assert lookup.tool is not None and lookup.tool.arguments == {"query": "my order"}
    assert len(lookup.tool.result) == 3  # three candidates: the lookup ignored the user


def test_replay_reenacts_the_wrong_answer() -> None:
    run = recorded()
    user = run.fingerprint["user.id"]
    with otel_replay.replay(run) as session:
        answer = run_agent("Where is my order?", model=session.model, user_id=user)
        assert session.check_output(answer)
    assert session.report().matched
    assert owner_of_answer(answer) == "u_2001" != user


def test_the_fix_diverges_at_the_lookup_step() -> None:
    run = recorded()
    lookup = next(s for s in run.tool_steps() if s.tool and s.tool.tool_name == "lookup_order")
    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(run) as session:
            run_agent("Where is my order?", model=session.model, user_id="u_7710", fixed=True)
    assert info.value.index == lookup.index and info.value.name == "lookup_order"
    assert "user_id" in info.value.diff


def test_fixed_agent_never_returns_another_users_order() -> None:
    """The eval that locks the fix: the recorded question and user, the fixed tools."""
    run = recorded()
    question = run.roots[0].model.input_messages[0]["parts"][0]["content"]  # type: ignore[union-attr]
    user = run.fingerprint["user.id"]
    previous = otel_replay.use_tracer_provider(None)
    try:
        answer = run_agent(question, model=ScriptedModel(), user_id=user, fixed=True)
    finally:
        otel_replay.use_tracer_provider(previous)
    assert owner_of_answer(answer) == user


def test_the_main_job_runs(tmp_path: Path) -> None:
    """README's first command: record, show, replay, fix, replay again."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    done = python_process("-m", "examples.order_support", tmp_path, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MATCHED" in done.stdout
    assert "replay diverged at step" in done.stdout and "lookup_order" in done.stdout
    assert (tmp_path / "order_support.otlp").stat().st_size > 0
    # 5. the fix is locked by a regression test written from the fixed run, and it passes.
    assert (tmp_path / "test_order_support_regression.otlp").stat().st_size > 0
    test = (tmp_path / "test_order_support_regression.py").read_text()
    assert "FINAL_ANSWER = 'Order #4430 (Widget Mini) is processing.'" in test
    assert "never_another_users_order" in test
    assert "1 passed" in done.stdout
    assert "a regression test locks the fix" in done.stdout
