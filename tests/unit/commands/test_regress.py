"""``otel-replay regress``: a recorded run becomes a pytest test that locks the fix.

The generated test is run the way a user runs it: pytest in a fresh process,
against the recording copied beside it.  It passes as written, and fails when
the agent regresses, when the answer changes, or when a user check fails.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from examples.order_support.record import record

import otel_replay
from otel_replay.commands.regress import RunFailed, write_regression
from otel_replay.runs.anomalies import DEFAULT_ERROR_PHRASES
from tests.fixtures.agent import WORLD, call, record_run, say
from tests.fixtures.cli import cli_run
from tests.fixtures.data import ROOT
from tests.fixtures.lost_parts import without
from tests.fixtures.weather_agent import FINAL, PROVIDERS, SHAPES, import_agent, write_agent
from tests.fixtures.weather_agent import record as record_weather


def run_pytest(
    test: Path, *path: Path, environ: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """pytest on ``test`` in a fresh process, as a user runs it (``path``: importable dirs;
    ``environ``: its environment, this process's when None)."""
    dirs = [*path, test.parent, ROOT, ROOT / "src"]
    env = {**(os.environ if environ is None else environ)}
    env["PYTHONPATH"] = os.pathsep.join(map(str, dirs))
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=test.parent,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


AGENT = """\
from examples.order_support.agent import run_agent as example_agent

FIXED = {fixed}


def run_agent(question, *, model, user_id):
    return example_agent(question, model=model, user_id=user_id, fixed=FIXED)
"""

CHECKS = """\
def names_an_order(answer, run):
    return "#" in answer


def is_short(answer, run):
    return len(answer) < 10
"""


@pytest.fixture
def fixed_run(tmp_path: Path) -> Path:
    path = tmp_path / "rec" / "fixed.otlp"
    path.parent.mkdir()
    record(path, fixed=True)
    (tmp_path / "myagent.py").write_text(AGENT.format(fixed=True))
    (tmp_path / "mychecks.py").write_text(CHECKS)
    return path


def regress(path: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return cli_run(
        "regress",
        path,
        "-o",
        out,
        "--agent",
        "myagent:run_agent",
        "--kwarg",
        "user_id=@user.id",
        "--check",
        "mychecks:names_an_order",
        *extra,
    )


@pytest.mark.slow  # two pytest runs in a subprocess: the slow tier
def test_the_generated_test_passes_and_catches_the_regression(
    fixed_run: Path, tmp_path: Path
) -> None:
    test = tmp_path / "test_locked.py"
    done = regress(fixed_run, test)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "test_locked.otlp").stat().st_size == fixed_run.stat().st_size
    source = test.read_text()
    assert "FINAL_ANSWER = 'Order #4430 (Widget Mini) is processing.'" in source
    assert "('lookup_order', {'query': 'my order', 'user_id': 'u_7710'})" in source
    assert "AGENT_KWARGS = {'user_id': 'u_7710'}" in source
    assert "/" not in source.split('"""')[2].split("RUN_ID")[0]  # no machine path: beside it

    passed = run_pytest(test)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout

    # The fix is undone: the agent stops passing the user id to lookup_order.
    (tmp_path / "myagent.py").write_text(AGENT.format(fixed=False))
    failed = run_pytest(test)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "1 failed" in failed.stdout
    assert "DIVERGED" in failed.stdout
    assert "replay diverged at step 2 (tool lookup_order" in failed.stdout
    assert "arguments differ (missing user_id)" in failed.stdout
    assert "During handling" not in failed.stdout  # the report once, no chained traceback


@pytest.mark.slow  # a pytest run in a subprocess: the slow tier
def test_a_failing_check_fails_the_test(fixed_run: Path, tmp_path: Path) -> None:
    test = tmp_path / "test_short.py"
    assert regress(fixed_run, test, "--check", "mychecks:is_short").returncode == 0
    failed = run_pytest(test)
    assert failed.returncode == 1
    assert "mychecks:is_short failed" in failed.stdout


@pytest.mark.slow  # a whole generated test run in a fresh process, with blobs
def test_the_recording_travels_with_its_blobs(tmp_path: Path) -> None:
    """A tool result too large to inline lives in the blob store: it is copied too."""
    (tmp_path / "bigagent.py").write_text(
        textwrap.dedent(
            """\
            from tests.fixtures.agent import WORLD, support_agent


            def run(question, *, model):
                WORLD["orders"] = [{"order_id": str(i), "note": "x" * 1000} for i in range(400)]
                return support_agent(question, model)
            """
        )
    )
    src = tmp_path / "src.otlp"
    saved = list(WORLD["orders"])
    WORLD["orders"] = [{"order_id": str(i), "note": "x" * 1000} for i in range(400)]
    try:
        record_run(src, [call("lookup_order", "c1", query="all"), say("400 orders.")])
    finally:
        WORLD["orders"] = saved
    blobs = sorted(p.name for p in (tmp_path / "src.otlp.blobs").iterdir())
    assert blobs
    test = tmp_path / "out" / "test_big.py"
    done = cli_run("regress", src, "-o", test, "--agent", "bigagent:run")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "test_big.otlp.blobs").iterdir()) == blobs
    # The copy alone replays: the source and its blobs are gone.
    src.unlink()
    shutil.rmtree(tmp_path / "src.otlp.blobs")
    passed = run_pytest(test, tmp_path, ROOT / "tests")
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_bad_usage_is_named(fixed_run: Path, tmp_path: Path) -> None:
    bad_ref = cli_run("regress", fixed_run, "-o", tmp_path / "t.py", "--agent", "nocolon")
    assert bad_ref.returncode == 2 and "'nocolon' is not MODULE:NAME" in bad_ref.stderr
    no_field = regress(fixed_run, tmp_path / "t.py", "--kwarg", "tenant=@nope")
    assert no_field.returncode == 2 and "the run recorded no nope" in no_field.stderr
    not_py = regress(fixed_run, tmp_path / "t.txt")
    assert not_py.returncode == 2 and "must end in .py" in not_py.stderr
    assert not (tmp_path / "t.py").exists()


# --- every way an agent takes its model ------------------------------------------------------
def _regress_shape(tmp_path: Path, provider: str, entry: str) -> subprocess.CompletedProcess[str]:
    """A newcomer's agent recorded through RecordingTransport, ``regress`` run on it, and
    the test it wrote run with pytest: that last process."""
    module = import_agent(write_agent(tmp_path, provider))
    recorded = tmp_path / "runs.otlp"
    assert record_weather(recorded, module, provider) == FINAL
    test = tmp_path / "tests" / "test_weather.py"
    done = cli_run("regress", recorded, "-o", test, "--agent", f"weather_agent:{entry}")
    assert done.returncode == 0, done.stderr
    assert "otel_replay.call_agent(agent, session, QUESTION, **AGENT_KWARGS)" in test.read_text()
    # No provider key: the replay needs none.
    keyless = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    return run_pytest(test, tmp_path, environ=keyless)


def _shape_cases() -> list[Any]:
    """Every provider, shape and mode; the default tier the newcomer's own (a sync OpenAI
    client), the rest slow (two processes each)."""
    return [
        pytest.param(
            provider,
            entry,
            id=f"{provider}-{entry}",
            marks=() if (provider, entry) == ("openai", "run_agent") else (pytest.mark.slow,),
        )
        for provider in PROVIDERS
        for names in SHAPES.values()
        for entry in names
    ]


@pytest.mark.parametrize(("provider", "entry"), _shape_cases())
def test_the_generated_test_reaches_every_agent_shape(
    tmp_path: Path, provider: str, entry: str
) -> None:
    """The test ``regress`` writes calls the agent as ``replay --agent`` does: client=,
    base_url=, a client of its own from the provider variables, model=; sync or async."""
    passed = _regress_shape(tmp_path, provider, entry)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "1 passed" in passed.stdout


# --- failed runs --------------------------------------------------------------------------------
def _failed_runs() -> list[Any]:
    """Runs that failed, one of each way: an apology (every phrase check looks for), a tool
    that raised, the same call again and again, an agent that raised."""
    cases = [
        pytest.param(
            [call("lookup_order", "c1", query="my order"), say(f"Your order: {p} say more.")],
            "error_wording",
            id=f"answer-{p}",
        )
        for p in DEFAULT_ERROR_PHRASES
    ]
    cases.append(
        pytest.param(
            [call("flaky_lookup", "c1", query="my order"), say("Order #4421 is shipped.")],
            "tool_error",
            id="tool-raised",
        )
    )
    cases.append(
        pytest.param(
            [call("lookup_order", f"c{i}", query="my order") for i in range(10)]
            + [say("Order #4421 is shipped.")],
            "repeated_tool_call",
            id="ten-warnings",
        )
    )
    cases.append(
        pytest.param(
            [call("lookup_order", "c1", query="my order")], "ended in error", id="agent-raised"
        )
    )
    return cases


@pytest.mark.parametrize(("replies", "named"), _failed_runs())
def test_a_failed_run_is_refused_unless_allowed(
    tmp_path: Path, replies: list[dict[str, Any]], named: str
) -> None:
    path = tmp_path / "failed.otlp"
    WORLD["fail"] = 1
    try:
        record_run(path, replies)
    except IndexError:
        pass  # the agent raised: the model had no answer left
    finally:
        WORLD["fail"] = 0
    (run,) = otel_replay.load(path)
    with pytest.raises(RunFailed) as refused:
        write_regression(run, tmp_path / "test_failed.py", agent="myagent:run_agent")
    assert any(named in line for line in refused.value.failures), refused.value.failures
    assert "--allow-failed" in str(refused.value)
    assert not (tmp_path / "test_failed.py").exists()

    test, _ = write_regression(
        run, tmp_path / "test_failed.py", agent="myagent:run_agent", allow_failed=True
    )
    source = test.read_text()
    assert "The recorded run FAILED (see KNOWN_FAILURES)" in source
    (known,) = [
        ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "KNOWN_FAILURES"
    ]
    assert known == refused.value.failures


def test_regress_refuses_a_failed_run_with_exit_1(tmp_path: Path) -> None:
    path = tmp_path / "sorry.otlp"
    record_run(path, [say("I'm sorry, I cannot find your order.")])
    test = tmp_path / "test_sorry.py"
    refused = cli_run("regress", path, "-o", test, "--agent", "myagent:run_agent")
    assert refused.returncode == 1, refused.stderr
    assert "failed, so a test locking it in would keep the failure" in refused.stderr
    assert 'error_wording: the final answer says "I\'m sorry"' in refused.stderr
    assert "--allow-failed" in refused.stderr
    assert not test.exists()
    allowed = cli_run("regress", path, "-o", test, "--agent", "myagent:run_agent", "--allow-failed")
    assert allowed.returncode == 0, allowed.stderr
    assert "FAILED" in test.read_text()


def test_regress_refuses_a_run_whose_trace_lacks_what_the_replay_needs_with_exit_4(
    tmp_path: Path,
) -> None:
    """The test would be refused every time it ran: no flag writes it."""
    path = tmp_path / "lost.otlp"
    example = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
    lost = without(
        example, path, "gen_ai.tool.call.result", lambda name: name.startswith("execute_tool")
    )
    assert lost == 1
    test = tmp_path / "test_lost.py"
    args = ["regress", path, "-o", test, "--agent", "examples.order_support.agent:run_agent"]
    for more in ([], ["--allow-failed"]):
        refused = cli_run(*args, *more)
        assert refused.returncode == 4, refused.stderr
        assert "a test of it would be refused: the trace lacks 1 item(s)" in refused.stderr
        assert "step 2 (tool lookup_order" in refused.stderr
        assert "no result was recorded for this tool call" in refused.stderr
        assert not test.exists()
