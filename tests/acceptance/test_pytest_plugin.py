"""The pytest plugin: ``@pytest.mark.otel_replay(path)`` and the ``otel_replay_session`` fixture.

Each case is a test file a user would write; all of them are run by one pytest
session in a fresh process (the plugin is found through its ``pytest11`` entry
point), and each case reads its tests' reports.
"""

from __future__ import annotations

import os
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import pytest

from tests.fixtures.agent import LOOKUP, record_run
from tests.fixtures.cli import python_process
from tests.fixtures.data import ROOT
from tests.fixtures.lost_parts import without

#: The test files a user would write, each run as its own file of one pytest session in
#: a fresh process (a process of its own each would cost seconds apiece).
USER_TESTS = {
    "test_lookup.py": """
@pytest.mark.otel_replay("recordings/lookup.otlp")
def test_lookup(otel_replay_session):
    answer = support_agent("Where is my order?", otel_replay_session.model)
    assert answer == "Order #4421 is shipped."
    assert otel_replay_session.tool_calls == [("lookup_order", {"query": "my order"})]
""",
    "test_divergence.py": """
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
    "test_early.py": """
@pytest.mark.otel_replay("recordings/lookup.otlp")
def test_nothing(otel_replay_session):
    pass
""",
    "test_network.py": """
import socket

@pytest.mark.otel_replay("recordings/lookup.otlp", require_complete=False)
def test_no_network(otel_replay_session):
    with pytest.raises(otel_replay.NetworkBlocked):
        socket.create_connection(("192.0.2.1", 80), timeout=1)
""",
    "test_unmarked.py": """
def test_unmarked(otel_replay_session):
    pass
""",
    "test_options.py": """
import pathlib

def run_id(user):
    runs = otel_replay.load(pathlib.Path(__file__).parent / "recordings" / "two.otlp")
    return next(r.run_id for r in runs if r.fingerprint["user.id"] == user)


@pytest.mark.otel_replay("recordings/two.otlp", run_id("u_2"), tools="error")
def test_second(otel_replay_session):
    assert otel_replay_session.run.fingerprint["user.id"] == "u_2"
    with pytest.raises(otel_replay.ReplayError, match="policy 'error'"):
        support_agent("Where is my order?", otel_replay_session.model)
    otel_replay_session.require_complete = False


@pytest.mark.otel_replay("recordings/two.otlp")
def test_which_run(otel_replay_session):
    pass
""",
    "test_refused.py": """
import pathlib

@pytest.mark.otel_replay("recordings/lost.otlp")
def test_lost_result(otel_replay_session):
    pathlib.Path("entered").write_text("the test body ran")
    support_agent("Where is my order?", otel_replay_session.model)
""",
}
HEADER = "import pytest\nimport otel_replay\nfrom tests.fixtures.agent import support_agent\n"


@dataclass
class Session:
    """The user's pytest session: its output and each test's report."""

    done: subprocess.CompletedProcess[str]
    cases: dict[str, ET.Element]

    def passed(self, name: str) -> None:
        case = self.cases[name]
        assert len(case) == 0, ET.tostring(case, encoding="unicode")[-3000:]
        assert f"PASSED {case.get('classname', '').split('.')[-1]}.py::{name}" in self.done.stdout

    def failure(self, name: str, kind: str = "failure") -> str:
        """The report of ``name``: a ``failure`` of the test, or an ``error`` of its setup."""
        (failure,) = self.cases[name]
        assert failure.tag == kind, ET.tostring(failure, encoding="unicode")[-3000:]
        return failure.text or ""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Session:
    """Every file of :data:`USER_TESTS` in a user's project, run by pytest in a fresh process
    (the plugin is found through its ``pytest11`` entry point)."""
    project = tmp_path_factory.mktemp("project")
    (project / "recordings").mkdir()
    record_run(project / "recordings" / "lookup.otlp", LOOKUP)
    record_run(project / "recordings" / "two.otlp", LOOKUP)
    record_run(project / "recordings" / "two.otlp", LOOKUP, user="u_2")
    lost = without(
        project / "recordings" / "lookup.otlp",
        project / "recordings" / "lost.otlp",
        "gen_ai.tool.call.result",
        lambda name: name.startswith("execute_tool"),
    )
    assert lost == 1
    for name, source in USER_TESTS.items():
        (project / name).write_text(HEADER + source)
    dirs = [ROOT, ROOT / "src"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, dirs))}
    done = python_process(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA", "--junitxml=report.xml",
        *USER_TESTS, cwd=project, env=env,
    )  # fmt: skip
    # 1: some tests failed (as some must); anything else is pytest's own trouble.
    assert done.returncode == 1, done.stdout + done.stderr
    cases = {c.get("name", ""): c for c in ET.parse(project / "report.xml").iter("testcase")}
    assert len(cases) == 9, (sorted(cases), done.stdout)
    assert not (project / "entered").exists(), "a refused replay ran the test body"
    return Session(done, cases)


def test_a_recorded_run_replays_inside_a_test(session: Session) -> None:
    session.passed("test_lookup")


def test_a_divergence_fails_the_test_with_the_report(session: Session) -> None:
    for name in ("test_other_question", "test_swallowed"):
        report = session.failure(name)
        assert report.count("DIVERGED — 0 of 3 recorded model/tool steps replayed") == 1, report
        assert "model request does not match the recording" in report
        assert "Cancel my order" in report  # the actual request, in the diff


def test_a_run_that_stops_early_fails(session: Session) -> None:
    report = session.failure("test_nothing")
    assert "the replayed run ended early: 3 recorded step(s) not replayed" in report


def test_the_network_is_blocked_by_default(session: Session) -> None:
    session.passed("test_no_network")


def test_the_fixture_needs_the_marker(session: Session) -> None:
    report = session.failure("test_unmarked", "error")  # the fixture refuses
    assert "otel_replay_session needs @pytest.mark.otel_replay(PATH" in report


def test_the_marker_takes_replay_options(session: Session) -> None:
    session.passed("test_second")
    assert "holds 2 runs; pick one with run_id=" in session.failure("test_which_run", "error")


def test_a_recording_that_lacks_what_the_replay_needs_is_refused_before_the_test_runs(
    session: Session,
) -> None:
    report = session.failure("test_lost_result", "error")  # the fixture refuses
    assert "REFUSED — the trace lacks 1 item(s) the replay needs; the agent was not run" in report
    assert "refused: step 2 (tool lookup_order" in report
    assert "no result was recorded for this tool call" in report
    assert "DIVERGED" not in report
