"""Long commands show progress on a terminal and ``check`` ends with its totals.

Progress goes to stderr, and only when stderr is a terminal: tested through a
pseudo-terminal given to a real process as its stderr, and absent when piped.
The totals are checked against the runs the same output lists.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pty
import select
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from otel_replay.cli.main import cli
from tests.fixtures.agent import LOOKUP, call, record_run, say
from tests.fixtures.cli import SRC
from tests.fixtures.data import TESTS

THIRDPARTY = TESTS / "data" / "thirdparty"
#: Real traces of third-party instrumentations: runs of every verdict.
TRACES = sorted(THIRDPARTY.glob("*/*/traces.otlp.jsonl"))


def _dump_with_warnings(tmp_path: Path) -> Path:
    """Runs of our agent: clean ones, and ones that repeat a call (warnings)."""
    path = tmp_path / "runs.otlp"
    record_run(path, LOOKUP)
    repeated = [call("lookup_order", f"c{i}", query="my order") for i in range(3)]
    record_run(path, [*repeated, say("Order #4421 is shipped.")])
    record_run(path, [*repeated[:2], say("shipped")])
    return path


def _expected(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The totals, counted from the runs as listed."""
    off: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for r in runs:
        if not r["replayable"]:
            reason = r["verdict"] if r["verdict"] != "full" else "damaged"
            off[reason] = off.get(reason, 0) + 1
        for f in r["findings"]:
            kinds[f["kind"]] = kinds.get(f["kind"], 0) + 1
    return {
        "runs": len(runs),
        "replayable": sum(r["replayable"] for r in runs),
        "not_replayable": off,
        "warnings": sum(kinds.values()),
        "runs_with_warnings": sum(1 for r in runs if r["findings"]),
        "warnings_by_kind": kinds,
        "raised": sum(r["outcome"]["error"] is not None for r in runs),
        "runs_with_failed_calls": sum(
            bool(r["outcome"]["tool_calls_failed"] or r["outcome"]["model_calls_failed"])
            for r in runs
        ),
    }


@pytest.mark.parametrize("some", [slice(None), slice(0, 3), slice(5, 6), slice(-4, None)])
def test_check_ends_with_totals_that_add_up(tmp_path: Path, some: slice) -> None:
    paths = [*map(str, TRACES[some]), str(_dump_with_warnings(tmp_path))]
    done = CliRunner().invoke(cli, ["check", "--json", *paths])
    doc = json.loads(done.stdout)
    totals = doc["totals"]
    assert totals == _expected(doc["runs"])
    assert totals["warnings"] > 0 and totals["replayable"] > 0
    text = CliRunner().invoke(cli, ["check", *paths])
    last = text.stdout.splitlines()[-1]
    off = sum(totals["not_replayable"].values())
    replay = "replays" if totals["replayable"] == 1 else "replay"
    assert last.startswith(f"checked {totals['runs']} runs: {totals['replayable']} {replay}")
    assert (f", {off} do not replay (" in last or ", 1 does not replay (" in last) == bool(off)
    for reason, n in totals["not_replayable"].items():
        assert f"{n} {reason}" in last
    failed = totals["runs_with_failed_calls"]
    assert f"; {totals['raised']} raised, {failed} with failed calls;" in last
    assert f"; {totals['warnings']} warnings in {totals['runs_with_warnings']} run" in last


def test_check_of_every_third_party_trace_counts_each_verdict() -> None:
    done = CliRunner().invoke(cli, ["check", "--json", *map(str, TRACES)])
    doc = json.loads(done.stdout)
    assert doc["totals"] == _expected(doc["runs"])
    assert set(doc["totals"]["not_replayable"]) >= {"model-only", "inspect-only"}


#: Runs the command line in a fresh interpreter, progress shown at once (a small input
#: is checked before the usual delay is up).
_RUN = (
    "import sys; import otel_replay.sources.progress as p; p.DELAY = 0.0; "
    "from otel_replay.cli.main import main; sys.argv[0] = 'otel-replay'; main()"
)


def _run(args: list[str], *, terminal: bool) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of the command; stderr a pseudo-terminal or a pipe."""
    env = {**os.environ, "PYTHONPATH": str(SRC), "TERM": "xterm", "COLUMNS": "300"}
    env.pop("FORCE_COLOR", None)
    if not terminal:
        done = subprocess.run(
            [sys.executable, "-c", _RUN, *args], capture_output=True, env=env, timeout=120
        )
        return done.returncode, done.stdout.decode(), done.stderr.decode()
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-c", _RUN, *args], stdout=subprocess.PIPE, stderr=slave, env=env
    )
    os.close(slave)
    # stdout is read beside the terminal: a full pipe would stall the command.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert proc.stdout is not None
        stdout = pool.submit(proc.stdout.read)
        err = b""
        while True:
            ready, _, _ = select.select([master], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the process closed its end
                break
            if not chunk:
                break
            err += chunk
        os.close(master)
        out = stdout.result(timeout=60).decode()
    return proc.wait(timeout=60), out, err.decode(errors="replace")


@pytest.mark.parametrize(
    ("command", "label"),
    [
        (["check"], "checking"),
        (["ls"], "listing"),
        (["report", "-o", "{out}"], "writing the pages of"),
    ],
)
def test_long_commands_show_progress_on_a_terminal_only(
    tmp_path: Path, command: list[str], label: str
) -> None:
    dump = _dump_with_warnings(tmp_path)
    args = [c.replace("{out}", str(tmp_path / "pages")) for c in command] + [str(dump)]
    code, out, err = _run(args, terminal=True)
    assert code in (0, 1), err
    assert f"{label} {dump}" in err  # on the terminal, stderr
    assert label not in out and "\x1b" not in out
    code, out, err = _run(args, terminal=False)
    assert code in (0, 1), err
    assert label not in err and label not in out and "\x1b" not in err
