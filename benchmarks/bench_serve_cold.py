"""The engine's answer to one HTTP request in process, warm and with the CPU's caches emptied.

    python benchmarks/bench_serve_cold.py [--calls 1000] [--evict-mb 0 2 8] [--repeat 3]

A run of ``--calls`` Chat Completions calls is recorded as in ``bench_serve.py``
and served by the engine ``otel-replay serve`` builds (``ReplayEngine.handle``,
its log line written to stderr as serve writes it), call after call.  Between
two calls, ``--evict-mb`` megabytes are written over (0: none): what the client
and the other processes of a busy machine do between two requests to a server,
whose code and data then come from memory again.  Printed per size: the CPU
time of ``handle`` per call (its thread's, the writing not counted), the median
of ``--repeat`` rounds, and over the warm one.

In the server (``bench_serve_http.py``) the engine's answer costs two to three
times what it does warm in a loop; written over with a few megabytes between
calls, it costs as much here, where a change can be measured without servers.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_serve import MODEL, messages, record

import otel_replay
from otel_replay.cli.loading import load_runs
from otel_replay.cli.printable import printable
from otel_replay.commands.serve import ServeOptions, engine_for, served

HEADERS = {"host": "127.0.0.1:8000", "content-type": "application/json", "accept": "*/*"}
PATH = "/v1/chat/completions"


def log(line: str) -> None:
    sys.stderr.write(f"otel-replay: {printable(line)}\n")
    sys.stderr.flush()


def per_call(trace: Path, bodies: list[bytes], evict: int) -> float:
    """CPU seconds of ``handle`` per call, ``evict`` bytes written over between calls."""
    runs, _ = served(load_runs((str(trace),), None))
    engine = engine_for(runs, ServeOptions(), log)
    junk = bytearray(evict)
    spent = 0
    for body in bodies:
        if evict:
            junk[:] = bytes(evict)
        t0 = time.thread_time_ns()
        answer = engine.handle("POST", PATH, body, HEADERS)
        spent += time.thread_time_ns() - t0
        assert answer.status == 200, answer.chunks
    return spent / 1e9 / len(bodies)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--evict-mb", type=float, nargs="+", default=[0, 2, 8])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    previous = otel_replay.use_tracer_provider(None)
    stderr = sys.stderr
    try:
        with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w") as devnull:
            trace = Path(tmp) / "run.otlp"
            record(trace, args.calls)
            bodies = [
                json.dumps({"model": MODEL, "messages": messages(i)}).encode()
                for i in range(args.calls)
            ]
            sys.stderr = devnull  # the log lines, as the benchmark's servers write them
            rows = [
                (
                    mb,
                    statistics.median(
                        per_call(trace, bodies, int(mb * 2**20)) for _ in range(args.repeat)
                    ),
                )
                for mb in args.evict_mb
            ]
    finally:
        sys.stderr = stderr
        otel_replay.use_tracer_provider(previous)
    warm = rows[0][1]
    for mb, seconds in rows:
        print(
            f"{args.calls}-call run, {mb:g} MB written over between calls: "
            f"{seconds * 1e6:6.1f} us a call ({seconds / warm:4.2f}x the first)"
        )


if __name__ == "__main__":
    main()
