"""Replaying 1,000 calls: otel-replay (in process and served) against vcrpy and cassetter.

    python benchmarks/bench_vs_cassettes.py [--calls 1000]

One run of N Chat Completions calls is recorded with our capture (as in
``bench_serve.py``); the same calls are then put in a vcrpy cassette and a
cassetter cassette (cassetter records them from ``otel-replay serve``, as it
would from the provider).  Each side replays all N calls through the same
client, plain ``httpx`` POSTs of the same bodies, every answer checked:

- otel-replay in process: the client over a replay session's transport;
- otel-replay served: the client over loopback to ``otel-replay serve``;
- vcrpy: ``record_mode="none"``, default matching (method and URI);
- cassetter: ``record_mode="none"``, matching on method, URI and JSON body.

Printed per side: loading (the trace, the cassette), the median per call of
the first and last 10 calls, and the whole replay, with its ratio to ours in
process (the baseline, measured in the same run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import cassetter
import httpx
import vcr
from bench_serve import MODEL, URL, messages, record, write_cassette
from bench_serve_http import start

import otel_replay

HEADERS = {"content-type": "application/json"}


def body(i: int) -> bytes:
    return json.dumps({"model": MODEL, "messages": messages(i)}).encode()


def check(i: int, response: httpx.Response) -> None:
    assert response.json()["choices"][0]["message"]["content"].startswith(f"Order ORD-{1000 + i}")


def calls(client: httpx.Client, base: str, n: int) -> list[float]:
    times = []
    for i in range(n):
        t0 = time.perf_counter()
        r = client.post(base + "/chat/completions", content=body(i), headers=HEADERS)
        times.append(time.perf_counter() - t0)
        check(i, r)
    return times


def in_process(trace: Path, n: int) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    (run,) = otel_replay.load(trace)
    load_s = time.perf_counter() - t0
    with (
        otel_replay.replay(run, require_complete=n == len(run.model_steps())) as session,
        httpx.Client(transport=session.transport()) as client,  # type: ignore[arg-type]
    ):
        return load_s, calls(client, URL, n)


def served(trace: Path, n: int) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    proc, url = start(["-m", "otel_replay.cli.main", "serve", str(trace)])
    load_s = time.perf_counter() - t0  # the server's start: it loads the trace
    try:
        with httpx.Client() as client:
            return load_s, calls(client, url + "/v1", n)
    finally:
        proc.terminate()
        proc.wait()


def with_vcrpy(cassette: Path, n: int) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    with vcr.use_cassette(str(cassette), serializer="json", record_mode="none"):
        load_s = time.perf_counter() - t0
        with httpx.Client() as client:
            return load_s, calls(client, URL, n)


MATCH: Any = ["method", "uri", "json_body"]


def record_cassetter(trace: Path, cassette: Path, n: int) -> None:
    """cassetter records the calls from ``otel-replay serve`` (standing in for the provider)."""
    proc, url = start(["-m", "otel_replay.cli.main", "serve", str(trace)])
    try:
        with (
            cassetter.use_cassette(cassette, record_mode="all", match_on=MATCH),
            httpx.Client() as client,
        ):
            for i in range(n):
                r = client.post(url + "/v1/chat/completions", content=body(i), headers=HEADERS)
                check(i, r)
    finally:
        proc.terminate()
        proc.wait()
    # The replaying client asks another URL than the server's port: name that one.
    cassette.write_text(cassette.read_text().replace(url + "/v1", URL))


def with_cassetter(cassette: Path, n: int) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    with cassetter.use_cassette(cassette, record_mode="none", match_on=MATCH):
        load_s = time.perf_counter() - t0
        with httpx.Client() as client:
            return load_s, calls(client, URL, n)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    n = args.calls
    previous = otel_replay.use_tracer_provider(None)
    results: dict[str, tuple[float, list[float]]] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            trace = Path(tmp) / "run.otlp"
            record(trace, n)
            vcr_cassette = Path(tmp) / "vcr.json"
            (run,) = otel_replay.load(trace)
            write_cassette(vcr_cassette, run, n)
            cassetter_cassette = Path(tmp) / "cassetter.yaml"
            record_cassetter(trace, cassetter_cassette, n)
            in_process(trace, min(n, 10))  # warm up imports and caches
            sides: dict[str, Callable[[], tuple[float, list[float]]]] = {
                "otel-replay, in process": lambda: in_process(trace, n),
                "otel-replay serve": lambda: served(trace, n),
                "vcrpy": lambda: with_vcrpy(vcr_cassette, n),
                "cassetter": lambda: with_cassetter(cassetter_cassette, n),
            }
            for name, side in sides.items():
                results[name] = side()
    finally:
        otel_replay.use_tracer_provider(previous)
    base = sum(results["otel-replay, in process"][1])
    print(f"replaying {n} calls through httpx (ms; ratio: whole replay vs ours in process):")
    for name, (load_s, times) in results.items():
        first = statistics.median(times[:10]) * 1e3
        last = statistics.median(times[-10:]) * 1e3
        print(
            f"{name:24s} load {load_s * 1e3:8.1f}  first 10 {first:6.3f}  last 10 {last:6.3f}  "
            f"all {sum(times) * 1e3:8.1f}  ratio {sum(times) / base:6.2f}x"
        )


if __name__ == "__main__":
    main()
