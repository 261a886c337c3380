"""The pytest plugin: ``@pytest.mark.otel_replay(path)`` and the ``otel_replay_session`` fixture.

Each case is a test file a user would write, run by pytest in a fresh process
(the plugin is found through its ``pytest11`` entry point).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from _agent import LOOKUP, record_run
from _cli import python_process

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A user's project: a recording under recordings/, tests beside it."""
    (tmp_path / "recordings").mkdir()
    record_run(tmp_path / "recordings" / "lookup.otlp", LOOKUP)
    return tmp_path


def run_pytest(project: Path, source: str) -> subprocess.CompletedProcess[str]:
    test = project / "test_user.py"
    test.write_text(
        "import pytest\nimport otel_replay\nfrom _agent import support_agent\n" + source
    )
    dirs = [ROOT / "tests", ROOT / "src"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, dirs))}
    return python_process(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", test, cwd=project, env=env
    )


def test_a_recorded_run_replays_inside_a_test(project: Path) -> None:
    done = run_pytest(
        project,
        """
@pytest.mark.otel_replay("recordings/lookup.otlp")
def test_lookup(otel_replay_session):
    answer = support_agent("Where is my order?", otel_replay_session.model)
    assert answer == "Order #4421 is shipped."
    assert otel_replay_session.tool_calls == [("lookup_order", {"query": "my order"})]
""",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout


def test_a_divergence_fails_the_test_with_the_report(project: Path) -> None:
    done = run_pytest(
        project,
        """
@pytest.mark.otel_replay("recordings/lookup.otlp")
def test_other_question(otel_replay_session):
    support_agent("Cancel my order", otel_replay_session.model)


@pytest.mark.otel_replay("recordings/lookup.otlp")
def test_swallowed(otel_replay_session):
    try:
        support_agent("Cancel my order", otel_replay_session.model)
    except otel_replay.ReplayDivergence:
        pass  # the agent's own error handling: the replay still fails the test
""",
    )
    assert done.returncode == 1
    assert "2 failed" in done.stdout and "error" not in done.stdout.splitlines()[-1]
    # Counted in the failure reports only: how much of each message the short
    # summary repeats depends on pytest's version and terminal width.
    failures = done.stdout.split("short test summary info")[0]
    assert failures.count("DIVERGED — 0 of 3 recorded model/tool steps replayed") == 2
    assert "model request does not match the recording" in done.stdout
    assert "Cancel my order" in done.stdout  # the actual request, in the diff


def test_a_run_that_stops_early_fails(project: Path) -> None:
    done = run_pytest(
        project,
        """
@pytest.mark.otel_replay("recordings/lookup.otlp")
def test_nothing(otel_replay_session):
    pass
""",
    )
    assert done.returncode == 1 and "1 failed" in done.stdout
    assert "the replayed run ended early: 3 recorded step(s) not replayed" in done.stdout


def test_the_network_is_blocked_by_default(project: Path) -> None:
    done = run_pytest(
        project,
        """
import socket

@pytest.mark.otel_replay("recordings/lookup.otlp", require_complete=False)
def test_no_network(otel_replay_session):
    with pytest.raises(otel_replay.NetworkBlocked):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
""",
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.slow  # a pytest run in a subprocess: the slow tier
def test_the_fixture_needs_the_marker(project: Path) -> None:
    done = run_pytest(project, "\ndef test_unmarked(otel_replay_session):\n    pass\n")
    assert done.returncode == 1
    assert "otel_replay_session needs @pytest.mark.otel_replay(PATH" in done.stdout


@pytest.mark.slow  # a pytest run in a subprocess: the slow tier
def test_the_marker_takes_replay_options(project: Path) -> None:
    record_run(project / "recordings" / "lookup.otlp", LOOKUP, user="u_2")  # a second run
    done = run_pytest(
        project,
        """
import pathlib

def run_id(user):
    runs = otel_replay.load(pathlib.Path(__file__).parent / "recordings" / "lookup.otlp")
    return next(r.run_id for r in runs if r.fingerprint["user.id"] == user)


@pytest.mark.otel_replay("recordings/lookup.otlp", run_id("u_2"), tools="error")
def test_second(otel_replay_session):
    assert otel_replay_session.run.fingerprint["user.id"] == "u_2"
    with pytest.raises(otel_replay.ReplayError, match="policy 'error'"):
        support_agent("Where is my order?", otel_replay_session.model)
    otel_replay_session.require_complete = False


@pytest.mark.otel_replay("recordings/lookup.otlp")
def test_which_run(otel_replay_session):
    pass
""",
    )
    assert done.returncode == 1
    assert "PASSED test_user.py::test_second" in done.stdout
    assert "holds 2 runs; pick one with run_id=" in done.stdout
