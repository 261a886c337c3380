"""A file that holds no run: every command says so, never "pick one with --run ID (runs: none)"."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_replay.cli.main import cli
from otel_replay.runs.pick import RunNotPicked, pick_run

#: Every command that reads runs, with what else it needs; EMPTY stands for the file.
COMMANDS = [
    ["report", "EMPTY", "-o", "page.html"],
    ["replay", "EMPTY", "--agent", "agent:run"],
    ["regress", "EMPTY", "--agent", "agent:run", "-o", "test_it.py"],
    ["diff", "EMPTY", "EMPTY"],
    ["show", "EMPTY"],
    ["check", "EMPTY"],
    ["ls", "EMPTY"],
    ["serve", "EMPTY"],
]


@pytest.mark.parametrize(
    "content", [b"", b'{"resourceSpans": []}\n'], ids=["empty", "a request of no spans"]
)
@pytest.mark.parametrize("command", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_every_command_says_the_file_holds_no_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: list[str], content: bytes
) -> None:
    monkeypatch.chdir(tmp_path)
    empty = tmp_path / "runs.jsonl"
    empty.write_bytes(content)
    done = CliRunner().invoke(cli, [str(empty) if a == "EMPTY" else a for a in command])
    assert "no run" in done.output, done.output
    assert "pick one" not in done.output and "runs: none" not in done.output
    assert "Traceback" not in done.output


def test_picking_from_no_runs_names_none() -> None:
    with pytest.raises(RunNotPicked, match=r"^no runs in runs\.otlp$"):
        pick_run([], None, where="runs.otlp", how="--run ID")
