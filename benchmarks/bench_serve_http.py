"""``otel-replay serve`` per call over real HTTP, against a bare ASGI app, for 10 and 1,000 calls.

    python benchmarks/bench_serve_http.py [--sizes 10 1000] [--busy 0 2] [--repeat 3]
        [--against REV]

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
own first call; each tells its URL once set up (uvicorn's configuration
loaded), so neither's start-up is counted.  ``--busy N`` measures again with N processes spinning on
the CPU meanwhile (the machine as busy as a shared one gets; 0 is the
machine as it is); ``--repeat R`` measures each case R times.

``--against REV`` serves the same run with commit ``REV``'s package too, in
a third process: every call goes to the three servers in turn, and REV's
figures are printed with ours over REV's (server CPU per call), so a change
is measured against the old code in the same stretch of time.
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
    from otel_replay.replay.adapters.uvicorn_server import base_url, bind

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
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    config.load()  # set up before its URL is told, as serve is
    print(base_url(sock), flush=True)
    uvicorn.Server(config).run(sockets=[sock])
    """
).replace("MODEL", MODEL)


#: Per server (ours first, the bare app last): its per-call seconds and its CPU seconds
#: per call.
Times = list[tuple[list[float], float]]


def start(args: list[str], src: Path = SRC) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "PYTHONPATH": str(src)}
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
    parser.add_argument("--against", metavar="REV", help="also serve with REV's package")
    args = parser.parse_args()
    previous = otel_replay.use_tracer_provider(None)
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            srcs = [SRC]
            if args.against is not None:
                # Only --against reads another commit's package.
                from bench_ls_clickhouse import package_at

                srcs.append(package_at(args.against, Path(tmp)))
            for calls in args.sizes:
                trace = Path(tmp) / f"run{calls}.otlp"
                record(trace, calls)
                for busy in args.busy:
                    for _ in range(args.repeat):
                        rows.append((calls, busy, serve_and_measure(trace, calls, busy, srcs)))
    finally:
        otel_replay.use_tracer_provider(previous)
    for calls, busy, results in rows:
        for client, ((mine, cpu), *others, (base, bare_cpu)) in results.items():
            first, last = statistics.median(mine[:10]), statistics.median(mine[-10:])
            print(
                f"{calls:5d}-call run, {client:5s}, {busy} spinning: wall: ours "
                f"{first * 1e3:5.2f} ms first 10, {last * 1e3:5.2f} ms last 10 "
                f"({last / first:4.2f}x), bare {statistics.median(base) * 1e3:5.2f} ms, "
                f"ours/bare {_ratio(mine, base):4.2f}x | server CPU per call: ours "
                f"{cpu * 1e3:5.3f} ms, bare {bare_cpu * 1e3:5.3f} ms, ours/bare "
                f"{cpu / bare_cpu:4.2f}x"
            )
            for old, old_cpu in others:
                print(
                    f"{'':16s}{args.against}: wall {_ratio(old, base):4.2f}x bare | server "
                    f"CPU per call {old_cpu * 1e3:5.3f} ms, {old_cpu / bare_cpu:4.2f}x bare; "
                    f"ours/{args.against} {cpu / old_cpu:4.2f}x"
                )


def _ratio(mine: list[float], base: list[float]) -> float:
    """The median of the per-call ratios (calls alternate, so each pair saw one machine)."""
    return statistics.median(a / b for a, b in zip(mine, base, strict=True))


def serve_and_measure(trace: Path, calls: int, busy: int, srcs: list[Path]) -> dict[str, Times]:
    """Our server with each package of ``srcs`` and the bare app, all started afresh (each
    pays its first call), measured with ``busy`` processes spinning."""
    servers = [start(["-m", "otel_replay.cli.main", "serve", str(trace)], src) for src in srcs]
    servers.append(start(["-c", BARE_APP]))
    load = spinners(busy)
    try:
        return measure([url for _, url in servers], [p.pid for p, _ in servers], calls)
    finally:
        for proc in (*load, *(p for p, _ in servers)):
            proc.terminate()
            proc.wait()


def measure(urls: list[str], pids: list[int], calls: int) -> dict[str, Times]:
    """Per-call seconds and CPU of each server, calls going to each in turn, per client."""
    results: dict[str, Times] = {}
    sdks = [openai.OpenAI(api_key="unused", base_url=url + "/v1", max_retries=0) for url in urls]
    walls: list[list[float]] = [[] for _ in urls]
    cpu0 = [cpu_seconds(pid) for pid in pids]
    for i in range(calls):
        msgs: Any = messages(i)
        for wall, sdk in zip(walls, sdks, strict=True):
            wall.append(timed(sdk.chat.completions.create, model=MODEL, messages=msgs))
    results["SDK"] = _per_server(walls, pids, cpu0, calls)
    walls = [[] for _ in urls]
    headers = {"content-type": "application/json"}
    clients = [httpx.Client() for _ in urls]
    try:
        cpu0 = [cpu_seconds(pid) for pid in pids]
        for i in range(calls):
            body = json.dumps({"model": MODEL, "messages": messages(i)}).encode()
            for wall, client, url in zip(walls, clients, urls, strict=True):
                target = url + "/v1/chat/completions"
                wall.append(timed(client.post, target, content=body, headers=headers))
        results["httpx"] = _per_server(walls, pids, cpu0, calls)
    finally:
        for client in clients:
            client.close()
    return results


def _per_server(walls: list[list[float]], pids: list[int], cpu0: list[float], calls: int) -> Times:
    """Each server's walls, with the CPU it spent per call since ``cpu0``."""
    cpu = [(cpu_seconds(pid) - t) / calls for pid, t in zip(pids, cpu0, strict=True)]
    return list(zip(walls, cpu, strict=True))


if __name__ == "__main__":
    main()
