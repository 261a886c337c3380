"""Per-call replay latency through the OpenAI SDK for runs of 10, 100 and 1,000 model calls.

    python benchmarks/bench_serve.py

Each run is recorded with our capture: an agent making N Chat Completions
calls in a row (a system message and one question each, so requests stay the
same size and the measurement is about the replayer, not a growing prompt).
It is replayed twice, call by call, in the same process:

- ours: ``openai.OpenAI`` over a replay session's in-process transport
  (request parsed, checked on the matcher ladder against the step the
  cursor expects, the recorded answer rendered);
- vcrpy: the same requests POSTed with ``httpx`` while a vcrpy cassette of
  the same calls plays back (``record_mode="none"``, default matching).
  vcrpy looks for the first unplayed matching interaction from the top of
  the cassette on each request, so a call costs more the further in it is.

A third pass takes the SDK out of our side (the same ``httpx`` POSTs as the
vcrpy side, over the transport), so the two can be compared call for call.
Printed: the median latency of the first 10 and the last 10 calls of each run
and their ratio (flat is 1.0x), for each side, and vcrpy vs ours on the last
10 calls.  Loading the trace and the cassette is timed apart.
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import vcr
from opentelemetry.sdk.trace import TracerProvider
from vcr.request import Request as VcrRequest
from vcr.serialize import serialize
from vcr.serializers import jsonserializer

import otel_replay
from otel_replay.replay.engine import ReplayEngine

SYSTEM = "You are a support agent. Answer in one sentence."
MODEL = "gpt-4o-mini"
URL = "http://127.0.0.1:9/v1"  # never connected to: both sides answer in-process


def messages(i: int) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"Question {i}: where is order ORD-{1000 + i}?"},
    ]


def record(path: Path, calls: int) -> None:
    provider = TracerProvider()
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
    )
    previous = otel_replay.use_tracer_provider(provider)
    try:
        with otel_replay.agent_run("bench_serve") as run:
            for i in range(calls):
                with otel_replay.model_call(
                    provider="openai", model=MODEL, messages=messages(i)
                ) as call:
                    text = f"Order ORD-{1000 + i} ships tomorrow."
                    reply = {"role": "assistant", "parts": [{"type": "text", "content": text}]}
                    call.record(
                        reply, input_tokens=30, output_tokens=8, response_id=f"chatcmpl-{i}"
                    )
            run.record(text)
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


def request_body(i: int) -> bytes:
    return json.dumps({"messages": messages(i), "model": MODEL}).encode()


def write_cassette(path: Path, run: Any, calls: int) -> None:
    """A vcrpy cassette of the same calls: each request and the answer our engine renders."""
    engine = ReplayEngine([run])
    requests, responses = [], []
    for i in range(calls):
        body = request_body(i)
        answer = engine.handle("POST", "/v1/chat/completions", body)
        assert answer.status == 200, b"".join(answer.chunks)
        requests.append(
            VcrRequest(
                "POST", URL + "/chat/completions", body, {"content-type": "application/json"}
            )
        )
        responses.append(
            {
                "status": {"code": 200, "message": "OK"},
                "headers": {"content-type": ["application/json"]},
                "body": {"string": b"".join(answer.chunks).decode()},
            }
        )
    path.write_text(serialize({"requests": requests, "responses": responses}, jsonserializer))


def ours(run: Any, calls: int) -> list[float]:
    times = []
    with otel_replay.replay(run, require_complete=calls == len(run.model_steps())) as session:
        http = httpx2.Client(transport=session.transport())
        client = openai.OpenAI(api_key="unused", base_url=URL, http_client=http, max_retries=0)
        for i in range(calls):
            t0 = time.perf_counter()
            got = client.chat.completions.create(model=MODEL, messages=messages(i))  # type: ignore[arg-type]
            times.append(time.perf_counter() - t0)
            assert got.choices[0].message.content == f"Order ORD-{1000 + i} ships tomorrow."
    return times


def ours_httpx(run: Any, calls: int) -> list[float]:
    """Ours without the SDK: the same httpx POSTs as the vcrpy side, over the transport."""
    times = []
    with (
        otel_replay.replay(run) as session,
        httpx.Client(transport=session.transport()) as client,  # type: ignore[arg-type]
    ):
        for i in range(calls):
            t0 = time.perf_counter()
            r = client.post(
                URL + "/chat/completions",
                content=request_body(i),
                headers={"content-type": "application/json"},
            )
            times.append(time.perf_counter() - t0)
            assert r.json()["choices"][0]["message"]["content"].startswith(f"Order ORD-{1000 + i}")
    return times


def vcrpy(cassette: Path, calls: int) -> tuple[list[float], float]:
    times = []
    t0 = time.perf_counter()
    with vcr.use_cassette(str(cassette), serializer="json", record_mode="none"):
        load_s = time.perf_counter() - t0
        with httpx.Client() as client:
            for i in range(calls):
                t0 = time.perf_counter()
                r = client.post(
                    URL + "/chat/completions",
                    content=request_body(i),
                    headers={"content-type": "application/json"},
                )
                times.append(time.perf_counter() - t0)
                assert r.json()["choices"][0]["message"]["content"].startswith(
                    f"Order ORD-{1000 + i}"
                )
    return times, load_s


def median_ms(values: list[float]) -> float:
    # The median of ten calls: a garbage-collector pause in one call does not move it.
    return statistics.median(values) * 1e3


def main() -> None:
    sizes = (10, 100, 1000)
    previous = otel_replay.use_tracer_provider(None)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for calls in sizes:
            trace = Path(tmp) / f"run{calls}.otlp"
            cassette = Path(tmp) / f"run{calls}.json"
            record(trace, calls)
            t0 = time.perf_counter()
            (run,) = otel_replay.load(trace)
            load_s = time.perf_counter() - t0
            write_cassette(cassette, run, calls)
            ours(run, min(calls, 10))  # warm up imports and caches
            our_times = ours(run, calls)
            raw_times = ours_httpx(run, calls)
            vcr_times, vcr_load_s = vcrpy(cassette, calls)
            rows.append((calls, our_times, raw_times, vcr_times))
            print(
                f"{calls:5d} calls: trace load {load_s * 1e3:7.1f} ms, "
                f"cassette load {vcr_load_s * 1e3:7.1f} ms"
            )
    otel_replay.use_tracer_provider(previous)
    print("median ms per call, first 10 and last 10 calls of the run (last/first):")
    for calls, our_times, raw_times, vcr_times in rows:
        line = [f"{calls:5d}-call run"]
        last = {}
        for name, times in (
            ("ours+SDK", our_times),
            ("ours+httpx", raw_times),
            ("vcrpy+httpx", vcr_times),
        ):
            first, last[name] = median_ms(times[:10]), median_ms(times[-10:])
            line.append(f"{name} {first:6.3f} / {last[name]:7.3f} ({last[name] / first:5.2f}x)")
        line.append(
            f"last-10 vcrpy vs ours+httpx {last['vcrpy+httpx'] / last['ours+httpx']:5.1f}x,"
            f" vs ours+SDK {last['vcrpy+httpx'] / last['ours+SDK']:5.1f}x"
        )
        print(" | ".join(line))


if __name__ == "__main__":
    main()
