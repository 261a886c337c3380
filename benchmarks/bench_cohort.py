"""``otel-replay cohort`` over 1,000 recorded runs: what a run costs beyond a bare replay,
and how ``-j`` scales against a model that takes its time.

    python benchmarks/bench_cohort.py [--runs 1000] [--latency-ms 10] [--rounds 2]

The cohort is the order-support example's agent, recorded ``--runs`` times (the
questions in turn).  Measured, each command in a fresh process (its CPU time is
the child's, read from ``getrusage``; wall time beside it):

- **baseline**: a bare replay of the same runs in a fresh process,
  ``otel_replay.replay(run)`` and the agent in a loop (CPU time; loading apart);
- **cohort --agent** (the agent against the pinned model, as the baseline replays
  it) over every run, less a one-run cohort (the command's start, the listing):
  its CPU per run against the baseline's;
- **cohort --model** against a local fake model (the example's scripted model
  behind an OpenAI-compatible server in this process, answering after
  ``--latency-ms``): CPU per run, and the wall time with ``-j 1``, ``2`` and ``4``,
  interleaved over ``--rounds`` rounds, each against ``-j 1`` of the same round.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from examples.order_support.agent import run_agent
from examples.order_support.record import USER, record
from examples.order_support.scripted_model import ScriptedModel

import otel_replay
from otel_replay import messages as M

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = ["Where is my order?", "Status of 4452?", "Anything about Widget Mini?"]


def child(*args: str | Path) -> tuple[float, float, str]:
    """``otel-replay ARGS`` in a fresh process: its CPU seconds, wall seconds, stdout."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    env.pop("OPENAI_API_KEY", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"otel-replay {' '.join(map(str, args))}: {done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, done.stdout


@contextlib.contextmanager
def fake_model(latency: float) -> Iterator[str]:
    """The example's scripted model behind an OpenAI-compatible endpoint on 127.0.0.1,
    answering each request after ``latency`` seconds; its base URL."""

    class Handler(BaseHTTPRequestHandler):
        # A kept-alive connection, each answer sent at once (as an API's server does).
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            said = [M.normalize_message(m) for m in body["messages"] if m["role"] != "system"]
            for m in said:  # the scripted model reads a tool's result as a value
                for p in m["parts"]:
                    if p.get("type") == "tool_call_response" and isinstance(p["response"], str):
                        p["response"] = json.loads(p["response"])
            reply = ScriptedModel().respond(said)
            message: dict[str, Any] = {"role": "assistant", "content": M.last_text([reply])}
            calls = M.tool_calls([reply])
            if calls:
                message["tool_calls"] = [
                    {
                        "id": c["id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
                    }
                    for c in calls
                ]
            time.sleep(latency)
            out = json.dumps(
                {
                    "id": "c",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def log_message(self, *args: Any) -> None:
            pass

    with ThreadingHTTPServer(("127.0.0.1", 0), Handler) as server:
        server.daemon_threads = True
        serving = threading.Thread(target=server.serve_forever, daemon=True)
        serving.start()
        with contextlib.ExitStack() as done:
            done.callback(server.shutdown)  # before the server closes
            yield f"http://127.0.0.1:{server.server_address[1]}/v1"


def bare_replay(path: Path) -> tuple[float, float, int]:
    """CPU seconds to load the runs, CPU seconds to replay each with the agent, runs."""
    began = time.process_time()
    runs = otel_replay.load(path)
    loaded = time.process_time() - began
    began = time.process_time()
    for run in runs:
        asked = str(run.steps[0].model.input_messages[-1]["parts"][0]["content"])  # type: ignore[union-attr,index]
        with otel_replay.replay(run, require_complete=True) as session:
            run_agent(asked, model=session.model, user_id=USER["user.id"])
    return loaded, time.process_time() - began, len(runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--bare", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bare is not None:
        print(json.dumps(bare_replay(Path(args.bare))))
        return
    n = args.runs
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "runs.otlp"
        began = time.perf_counter()
        for i in range(n):
            record(path, QUESTIONS[i % len(QUESTIONS)])
        took = time.perf_counter() - began
        print(f"recorded {n} runs in {took:.1f} s ({path.stat().st_size:,} bytes)")
        child("ls", path)  # the listing's summaries, saved beside the dump for every command

        # In a fresh process, as the cohort's: this one holds what recording left behind.
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        said = subprocess.run(
            [sys.executable, __file__, "--bare", str(path)],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        ).stdout
        loaded, bare, replayed = json.loads(said)
        assert replayed == n
        per_bare = bare / n * 1000
        print(
            f"baseline: bare replay {per_bare:.2f} ms CPU a run "
            f"(loading {loaded / n * 1000:.2f} ms a run)"
        )

        agent = ("--agent", "examples.order_support.agent:run_agent", "--kwarg", "user_id=@user.id")
        one_cpu, _, _ = child("cohort", path, *agent, "--json", "--limit", "1")
        all_cpu, all_wall, out = child("cohort", path, *agent, "--json")
        doc = json.loads(out)
        assert doc["totals"][0]["counts"]["same"] == n, doc["totals"]
        per_agent = (all_cpu - one_cpu) / (n - 1) * 1000
        print(
            f"cohort --agent: {per_agent:.2f} ms CPU a run ({per_agent / per_bare:.2f}x the bare "
            f"replay; +{per_agent - per_bare:.2f} ms), fixed {one_cpu:.2f} s, "
            f"{all_wall:.1f} s wall for {n} runs"
        )

        latency = args.latency_ms / 1000
        with fake_model(latency) as url:
            model = ("--model", f"openai:scripted@{url}")
            one_cpu, _, _ = child("cohort", path, *model, "--json", "--limit", "1")
            walls: dict[int, list[float]] = {1: [], 2: [], 4: []}
            cpus: dict[int, list[float]] = {1: [], 2: [], 4: []}
            for _ in range(args.rounds):
                for jobs in walls:
                    cpu, wall, out = child("cohort", path, *model, "--json", "-j", str(jobs))
                    doc = json.loads(out)
                    assert doc["totals"][0]["counts"]["same"] == n, doc["totals"]
                    walls[jobs].append(wall)
                    cpus[jobs].append(cpu)
        per_model = (statistics.median(cpus[1]) - one_cpu) / (n - 1) * 1000
        print(
            f"cohort --model (fake, {args.latency_ms:g} ms a request, 2 requests a run): "
            f"{per_model:.2f} ms CPU a run ({per_model / per_bare:.2f}x the bare replay)"
        )
        for jobs in walls:
            ratios = [w / one for w, one in zip(walls[jobs], walls[1], strict=True)]
            print(
                f"  -j {jobs}: {statistics.median(walls[jobs]):.1f} s wall, "
                f"{statistics.median(cpus[jobs]):.1f} s CPU; "
                f"wall {statistics.median(ratios):.2f}x -j 1"
            )


if __name__ == "__main__":
    main()
