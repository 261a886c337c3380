"""Load cost per step for runs of 100, 1,000 and 3,000 turns: it must stay flat.

    python benchmarks/bench_load_long.py [--sizes 100 1000 3000] [--repeat 3]

Each run is the agent loop of ``bench_replay.py`` (a model call and a tool
call per turn) recorded to a file.  Measured: the CPU time of ``load()`` and
of building the run's steps (``load()`` leaves them to the first use), per
model and tool step, best of ``--repeat``; baseline in the same run: the
per-step cost of the shortest run.  A ratio above 1 means a step costs more
the longer its run is.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from bench_replay import record

import otel_replay


def per_step(path: Path, repeat: int) -> tuple[float, int]:
    best = float("inf")
    steps = 0
    for _ in range(repeat):
        t0 = time.process_time()
        (run,) = otel_replay.load(path)
        run.build_steps()  # the steps wait for their first use
        best = min(best, time.process_time() - t0)
        steps = len(run.model_steps()) + len(run.tool_steps())
    return best / steps, steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 3000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    results: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for turns in args.sizes:
            path = Path(tmp) / f"run{turns}.otlp"
            record(path, turns)
            results[turns], steps = per_step(path, args.repeat)
            print(f"{turns:5d} turns: {steps:5d} steps loaded, {results[turns] * 1e6:7.1f} µs/step")
    base = results[args.sizes[0]]
    for turns in args.sizes:
        print(
            f"load, {turns:5d}-turn run: {results[turns] * 1e6:7.1f} µs/step  "
            f"ratio vs {args.sizes[0]}-turn run {results[turns] / base:5.2f}x"
        )


if __name__ == "__main__":
    main()
