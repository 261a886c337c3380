"""Every option that writes a file names it when done: ``wrote PATH ...``.

A newcomer ran ``replay ... -o replay.otlp`` and was told nothing of the file
(``report``, ``convert``, ``regress`` and ``diff --html`` say what they wrote),
so could not tell it was written, nor how to compare it with the recording.
Each command's writing options are found on the command line itself, each is
run as a user runs it on the worked example's recording, and its output must
name the file it wrote, which must exist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from otel_replay.cli.main import cli
from tests.fixtures.cli import python_process
from tests.fixtures.data import ROOT

CASE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
AGENT = ("--agent", "examples.order_support.agent:run_agent", "--kwarg", "user_id=@user.id")

#: Per (command, option that writes): its arguments (the file written is OUT), and whether
#: the default tier runs it (the others are slow: a process each).
RECIPES: dict[tuple[str, str], tuple[tuple[str, ...], bool]] = {
    ("replay", "record_to"): (("replay", "case.otlp", *AGENT, "-o", "OUT.otlp"), True),
    ("diff", "html_out"): (("diff", "case.otlp", "case.otlp", "--html", "OUT.html"), True),
    ("regress", "output"): (("regress", "case.otlp", *AGENT, "-o", "OUT.py"), False),
    ("report", "output"): (("report", "case.otlp", "-o", "OUT.html"), False),
    ("convert", "output"): (("convert", "case.otlp", "-o", "OUT.json"), False),
    ("cohort", "output"): (("cohort", "case.otlp", *AGENT, "-o", "OUT"), False),
    ("cohort", "html_out"): (("cohort", "case.otlp", *AGENT, "--html", "OUT.html"), False),
}


def writing_options() -> set[tuple[str, str]]:
    """(command, option) for each option of the command line that names a file to write."""
    found = set()
    for name, command in cli.commands.items():
        for param in command.params:
            opts = getattr(param, "opts", [])
            if "-o" in opts or "--output" in opts or "--html" in opts:
                found.add((name, str(param.name)))
    return found


def test_every_writing_option_has_a_recipe() -> None:
    """A new option that writes a file joins the test below."""
    assert writing_options() == set(RECIPES)


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it in their project directory."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "src")])}
    return python_process("-m", "otel_replay.cli.main", *args, cwd=cwd, env=env)


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(key, id="-".join(key), marks=() if quick else (pytest.mark.slow,))
        for key, (_, quick) in RECIPES.items()
    ],
)
def test_the_file_written_is_named(tmp_path: Path, key: tuple[str, str]) -> None:
    shutil.copy(CASE, tmp_path / "case.otlp")
    args, _ = RECIPES[key]
    out = next(a for a in args if a.startswith("OUT")).replace("OUT", "written")
    done = run(tmp_path, *(a.replace("OUT", "written") for a in args))
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: diff or replay differ
    assert (tmp_path / out).exists()
    said = [line for line in (done.stdout + done.stderr).splitlines() if out in line]
    assert any(line.startswith(("wrote", "converted")) for line in said), done.stdout + done.stderr
