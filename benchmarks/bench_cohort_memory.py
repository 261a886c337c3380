"""The memory of ``otel-replay cohort`` over a few hundred and a few thousand runs.

    python benchmarks/bench_cohort_memory.py [--runs 250 2500]

The cohort is the order-support example's agent, recorded ``--runs`` times (the
questions in turn, each numbered); the candidate is the example's fix, against the
pinned model.  Each command runs in a fresh process; its peak resident memory
(``VmHWM``, Linux) is read as it exits.  The baseline, in the same run: ``ls`` of the
same file (its summaries already saved beside it, as every command finds them).
Measured against it:

- ``cohort --json``: the replays alone;
- ``cohort -o DIR --html PAGE --json``: the replays written, and the page with a
  side-by-side page of every replay beside its recording.

A cohort whose memory stays flat grows by what it keeps per run (each run's
summary and outcome), not by the runs it reads.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from examples.order_support.record import record

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ["Where is my order?", "Status of 4452?", "Anything about Widget Mini?"]
CANDIDATE = ("--agent", "tests.fixtures.cohort_agents:fixed_agent", "--kwarg", "user_id=@user.id")

#: Runs the command as ``otel-replay ARGS`` would, and writes its peak RSS (kB) to the
#: file named by the first argument when the process exits (``sys.exit`` included).
_CHILD = """
import atexit, re, sys
def peak():
    with open("/proc/self/status") as f:
        kb = re.search(r"VmHWM:\\s+(\\d+)", f.read()).group(1)
    with open(out, "w") as f:
        f.write(kb)
out = sys.argv[1]
atexit.register(peak)
sys.argv = ["otel-replay", *sys.argv[2:]]
from otel_replay.cli.main import main
main()
"""


def peak_mb(*args: str | Path) -> float:
    """Peak RSS (MB) of ``otel-replay ARGS`` in a fresh process."""
    paths = [str(ROOT / "src"), str(ROOT)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    with tempfile.NamedTemporaryFile("r", suffix=".kb") as kb:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, kb.name, *map(str, args)],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            check=False,
        )
        if done.returncode not in (0, 1):
            raise SystemExit(f"otel-replay {' '.join(map(str, args))}: {done.stderr}")
        return int(kb.read()) / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, nargs="+", default=[250, 2500])
    args = parser.parse_args()
    for n in args.runs:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "runs.otlp"
            for i in range(n):
                record(path, f"{QUESTIONS[i % len(QUESTIONS)]} ({i})")
            peak_mb("ls", path)  # the summaries, saved beside the dump for every command
            ls = peak_mb("ls", path, "--json")
            alone = peak_mb("cohort", path, *CANDIDATE, "--json")
            out = Path(tmp) / "replays"
            page = peak_mb("cohort", path, *CANDIDATE, "-o", out, "--html", out / "c.html")
            size = path.stat().st_size / 1e6
            print(f"{n:,} runs ({size:.1f} MB): ls (baseline) {ls:.0f} MB")
            print(f"  cohort --json            {alone:6.0f} MB  {alone / ls:.2f}x")
            print(f"  cohort -o DIR --html     {page:6.0f} MB  {page / ls:.2f}x")


if __name__ == "__main__":
    main()
