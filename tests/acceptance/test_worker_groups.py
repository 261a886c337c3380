"""The slow tier's tests of one stack run on one worker, as ``--dist loadgroup`` promises.

A stack's JavaScript agent reads its scenario from its stack's one home, and a stack's
environment is made by the first of its tests: the slow tier marks each stack's tests
``xdist_group(STACK)``.  A pytest and pytest-xdist pair that drops the groups does so
silently (pytest-xdist 3.8 on pytest 9.2), so this runs a grouped module the way the slow
tier runs and checks where each test ran.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = """
import os, pytest

@pytest.mark.xdist_group("{group}")
@pytest.mark.parametrize("i", range(6))
def test_in_{group}(i):
    with open(os.environ["WHERE"], "a") as out:
        out.write("{group} " + os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


#: As the slow tier runs (and nothing of this project's configuration).
GROUPED = ["--dist", "loadgroup", "-o", "addopts="]


@pytest.mark.slow
def test_each_group_runs_on_one_worker(tmp_path: Path) -> None:
    for group in ("stack_a", "stack_b"):
        (tmp_path / f"test_{group}.py").write_text(MODULE.format(group=group))
    (tmp_path / "conftest.py").write_text("")
    where = tmp_path / "where.txt"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"]
    done = subprocess.run(
        [*command, *GROUPED, str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ, "WHERE": str(where)},
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    ran: dict[str, set[str]] = {}
    for line in where.read_text().splitlines():
        group, worker = line.split()
        ran.setdefault(group, set()).add(worker)
    assert sorted(ran) == ["stack_a", "stack_b"]
    assert all(len(workers) == 1 for workers in ran.values()), ran
