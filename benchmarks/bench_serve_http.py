"""``otel-replay serve`` per call over real HTTP, against a bare ASGI app, for 10 and 1,000 calls.

    python benchmarks/bench_serve_http.py [--sizes 10 1000]

Each run is recorded as in ``bench_serve.py`` (N Chat Completions calls of
the same size) and served by ``otel-replay serve`` in a process of its own.
The baseline, in another process: a bare ASGI application on the same
uvicorn, listening on a socket made the same way (TCP_NODELAY on its
connections), that reads the request and sends a fixed Chat Completions
answer of the same size - what any HTTP replayer costs at the least.  Calls
alternate between the two servers (the machine is shared), through the
OpenAI SDK and through plain httpx, keep-alive on.  Printed: the median per
call of the first and the last 10 calls, ours over the baseline, and last
over first (flat is 1.0x).
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

    async def app(scope, receive, send):
        if scope["type"] != "http":
            return
        while (await receive()).get("more_body"):
            pass
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": BODY})

    sock = bind("127.0.0.1", 0)
    print(base_url(sock), flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off")).run(sockets=[sock])
    """
).replace("MODEL", MODEL)


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


def timed(call: Callable[..., Any], *args: Any, **kwargs: Any) -> float:
    t0 = time.perf_counter()
    call(*args, **kwargs)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 1000])
    args = parser.parse_args()
    previous = otel_replay.use_tracer_provider(None)
    bare, bare_url = start(["-c", BARE_APP])
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for calls in args.sizes:
                trace = Path(tmp) / f"run{calls}.otlp"
                record(trace, calls)
                ours, our_url = start(["-m", "otel_replay.cli.main", "serve", str(trace)])
                try:
                    rows.append((calls, measure(our_url, bare_url, calls)))
                finally:
                    ours.terminate()
                    ours.wait()
    finally:
        bare.terminate()
        bare.wait()
        otel_replay.use_tracer_provider(previous)
    for calls, results in rows:
        for client, (mine, base) in results.items():
            first, last = statistics.median(mine[:10]), statistics.median(mine[-10:])
            ratio = statistics.median(a / b for a, b in zip(mine, base, strict=True))
            print(
                f"{calls:5d}-call run, {client:7s}: ours {first * 1e3:6.2f} ms first 10, "
                f"{last * 1e3:6.2f} ms last 10 ({last / first:4.2f}x); "
                f"bare ASGI {statistics.median(base) * 1e3:6.2f} ms; ours/bare {ratio:4.2f}x"
            )


Times = tuple[list[float], list[float]]


def measure(our_url: str, bare_url: str, calls: int) -> dict[str, Times]:
    """Per-call seconds on ours and on the bare app, calls alternating, for each client."""
    results: dict[str, Times] = {}
    mine = openai.OpenAI(api_key="unused", base_url=our_url + "/v1", max_retries=0)
    base = openai.OpenAI(api_key="unused", base_url=bare_url + "/v1", max_retries=0)
    times: Times = ([], [])
    for i in range(calls):
        msgs: Any = messages(i)
        times[0].append(timed(mine.chat.completions.create, model=MODEL, messages=msgs))
        times[1].append(timed(base.chat.completions.create, model=MODEL, messages=msgs))
    results["SDK"] = times
    times = ([], [])
    headers = {"content-type": "application/json"}
    with httpx.Client() as ours_http, httpx.Client() as bare_http:
        for i in range(calls):
            body = json.dumps({"model": MODEL, "messages": messages(i)}).encode()
            for n, (client, url) in enumerate(((ours_http, our_url), (bare_http, bare_url))):
                target = url + "/v1/chat/completions"
                times[n].append(timed(client.post, target, content=body, headers=headers))
    results["httpx"] = times
    return results


if __name__ == "__main__":
    main()
