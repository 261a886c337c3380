"""``otel-replay serve`` per call over real HTTP, against a bare ASGI app, for 10 and 1,000 calls.

    python benchmarks/bench_serve_http.py [--sizes 10 1000] [--busy 0 2] [--repeat 3]

Each run is recorded as in ``bench_serve.py`` (N Chat Completions calls of
the same size) and served by ``otel-replay serve`` in a process of its own.
The baseline, in another process: a bare ASGI application on the same
uvicorn, listening on a socket made the same way (TCP_NODELAY on its
connections), that reads the request and sends a fixed Chat Completions
answer of the same size with its Content-Length, in one message - what any
HTTP replayer costs at the least.  Calls alternate between the two servers
(the machine is shared), through the OpenAI SDK and through plain httpx,
keep-alive on.  Printed: the median per call of the first and the last 10
calls, ours over the baseline, and last over first (flat is 1.0x); and the
CPU time each server process spent per call (all its threads, read from
``/proc`` before and after the calls of one client; the two servers serve
the same interleaved calls, so both totals cover the same stretch of time),
ours over the baseline's.

Both servers are started afresh for each measurement, so each pays its
own first call.  ``--busy N`` measures again with N processes spinning on
the CPU meanwhile (the machine as busy as a shared one gets; 0 is the
machine as it is); ``--repeat R`` measures each case R times.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
from bench_serve import MODEL, messages, record

import otel_replay

SRC = Path(__file__).resolve().parents[1] / "src"

BARE_APP = textwrap.dedent(
    """
    import json, sys
    import uvicorn
    from otel_replay.replay.adapters.server import base_url, bind

    BODY = json.dumps({
        "id": "chatcmpl-0", "object": "chat.completion", "created": 0, "model": "MODEL",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {
            "role": "assistant", "content": "Order ORD-1000 ships tomorrow."}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 8, "total_tokens": 38},
    }).encode()

    HEADERS = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(BODY))]

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200, "headers": HEADERS})
        await send({"type": "http.response.body", "body": BODY})

    sock = bind("127.0.0.1", 0)
    print(base_url(sock), flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])
    """
).replace("MODEL", MODEL)


#: Per-call seconds on ours and on the bare app, and each server's CPU seconds per call.
Times = tuple[list[float], list[float], tuple[float, float]]


def start(args: list[str]) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def cpu_seconds(pid: int) -> float:
    """CPU time a process has used so far, all its threads (ns resolution where the kernel
    keeps scheduler statistics, else clock ticks)."""
    try:
        total = 0
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
        return total / 1e9
    except (OSError, ValueError, IndexError):
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    call(*args, **kwargs)
    return time.perf_counter() - t0


def spinners(n: int) -> list[subprocess.Popen[bytes]]:
    """``n`` processes keeping a core each busy until killed."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000])
    parser.add_argument("--busy", type=int, nargs="+", default=[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    previous = otel_replay.use_tracer_provider(None)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for calls in args.sizes:
                trace = Path(tmp) / f"run{calls}.otlp"
                record(trace, calls)
                for busy in args.busy:
                    for _ in range(args.repeat):
                        rows.append((calls, busy, serve_and_measure(trace, calls, busy)))
    finally:
        otel_replay.use_tracer_provider(previous)
    for calls, busy, results in rows:
        for client, (mine, base, cpu) in results.items():
            first, last = statistics.median(mine[:10]), statistics.median(mine[-10:])
            ratio = statistics.median(a / b for a, b in zip(mine, base, strict=True))
            print(
                f"{calls:5d}-call run, {client:5s}, {busy} spinning: wall: ours "
                f"{first * 1e3:5.2f} ms first 10, {last * 1e3:5.2f} ms last 10 "
                f"({last / first:4.2f}x), bare {statistics.median(base) * 1e3:5.2f} ms, "
                f"ours/bare {ratio:4.2f}x | server CPU per call: ours {cpu[0] * 1e3:5.3f} ms, "
                f"bare {cpu[1] * 1e3:5.3f} ms, ours/bare {cpu[0] / cpu[1]:4.2f}x"
            )


def serve_and_measure(trace: Path, calls: int, busy: int) -> dict[str, Times]:
    """Both servers started afresh (each pays its first call), measured with ``busy``
    processes spinning."""
    ours, our_url = start(["-m", "otel_replay.cli.main", "serve", str(trace)])
    bare, bare_url = start(["-c", BARE_APP])
    load = spinners(busy)
    try:
        return measure(our_url, bare_url, (ours.pid, bare.pid), calls)
    finally:
        for proc in (*load, ours, bare):
            proc.terminate()
            proc.wait()


def measure(our_url: str, bare_url: str, pids: tuple[int, int], calls: int) -> dict[str, Times]:
    """Per-call seconds and server CPU, ours and the bare app, calls alternating, per client."""
    results: dict[str, Times] = {}
    mine = openai.OpenAI(api_key="unused", base_url=our_url + "/v1", max_retries=0)
    base = openai.OpenAI(api_key="unused", base_url=bare_url + "/v1", max_retries=0)
    walls: tuple[list[float], list[float]] = ([], [])
    cpu0 = [cpu_seconds(pid) for pid in pids]
    for i in range(calls):
        msgs: Any = messages(i)
        walls[0].append(timed(mine.chat.completions.create, model=MODEL, messages=msgs))
        walls[1].append(timed(base.chat.completions.create, model=MODEL, messages=msgs))
    cpu = [(cpu_seconds(pid) - t) / calls for pid, t in zip(pids, cpu0, strict=True)]
    results["SDK"] = (*walls, (cpu[0], cpu[1]))
    walls = ([], [])
    headers = {"content-type": "application/json"}
    with httpx.Client() as ours_http, httpx.Client() as bare_http:
        cpu0 = [cpu_seconds(pid) for pid in pids]
        for i in range(calls):
            body = json.dumps({"model": MODEL, "messages": messages(i)}).encode()
            for n, (client, url) in enumerate(((ours_http, our_url), (bare_http, bare_url))):
                target = url + "/v1/chat/completions"
                walls[n].append(timed(client.post, target, content=body, headers=headers))
        cpu = [(cpu_seconds(pid) - t) / calls for pid, t in zip(pids, cpu0, strict=True)]
    results["httpx"] = (*walls, (cpu[0], cpu[1]))
    return results


if __name__ == "__main__":
    main()
