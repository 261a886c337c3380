"""``otel-replay regress``: a recorded run becomes a pytest test that locks the fix.

The generated test is run the way a user runs it: pytest in a fresh process,
against the recording copied beside it.  It passes as written, and fails when
the agent regresses, when the answer changes, or when a user check fails.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from examples.order_support.record import record

from _agent import WORLD, call, record_run, say
from _cli import cli_process

ROOT = Path(__file__).resolve().parents[1]


def run_pytest(test: Path, *path: Path) -> subprocess.CompletedProcess[str]:
    """pytest on ``test`` in a fresh process, as a user runs it (``path``: importable dirs)."""
    dirs = [*path, test.parent, ROOT, ROOT / "src"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, dirs))}
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
    return cli_process(
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
            from _agent import WORLD, support_agent


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
    done = cli_process("regress", src, "-o", test, "--agent", "bigagent:run")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "out" / "test_big.otlp.blobs").iterdir()) == blobs
    # The copy alone replays: the source and its blobs are gone.
    src.unlink()
    shutil.rmtree(tmp_path / "src.otlp.blobs")
    passed = run_pytest(test, tmp_path, ROOT / "tests")
    assert passed.returncode == 0, passed.stdout + passed.stderr


def test_bad_usage_is_named(fixed_run: Path, tmp_path: Path) -> None:
    bad_ref = cli_process("regress", fixed_run, "-o", tmp_path / "t.py", "--agent", "nocolon")
    assert bad_ref.returncode == 2 and "'nocolon' is not MODULE:NAME" in bad_ref.stderr
    no_field = regress(fixed_run, tmp_path / "t.py", "--kwarg", "tenant=@nope")
    assert no_field.returncode == 2 and "the run recorded no nope" in no_field.stderr
    not_py = regress(fixed_run, tmp_path / "t.txt")
    assert not_py.returncode == 2 and "must end in .py" in not_py.stderr
    assert not (tmp_path / "t.py").exists()
