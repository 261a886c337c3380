"""Replay cost per step for runs of 10, 100 and 1,000 steps: it must stay flat.

    python benchmarks/bench_replay.py

Each run alternates model calls (served by the pinned model) and tool calls
(answered by stubs), as an agent loop does.  Baseline in the same run: the
per-step cost of the 10-step run; the ratio for longer runs shows whether a
step costs more the longer the run is.  Loading is timed apart.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import TracerProvider

import otel_replay


@otel_replay.tool
def step_tool(i: int, note: str) -> dict[str, Any]:
    return {"i": i, "note": note, "rows": [{"id": j} for j in range(5)]}


class CountingModel:
    def __init__(self, turns: int) -> None:
        self.turns = turns
        self.n = 0

    def respond(self, messages: list[dict[str, Any]], **kw: Any) -> dict[str, Any]:
        self.n += 1
        if self.n > self.turns:
            return {"role": "assistant", "parts": [{"type": "text", "content": "done"}]}
        return {
            "role": "assistant",
            "parts": [
                {
                    "type": "tool_call",
                    "id": f"c{self.n}",
                    "name": "step_tool",
                    "arguments": {"i": self.n, "note": "x" * 40},
                }
            ],
        }


def agent(model: Any) -> str:
    with otel_replay.agent_run("bench"):
        return _loop(model)


def _loop(model: Any) -> str:
    # Keep only the last exchange in context, so the request size stays flat
    # and the measurement is about the replayer, not a growing prompt.
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": "go"}]}
    ]
    while True:
        with otel_replay.model_call(provider="bench", model="m", messages=messages) as call:
            reply = model.respond(messages)
            call.record(reply)
        calls = [p for p in reply["parts"] if p["type"] == "tool_call"]
        if not calls:
            return str(reply["parts"][0]["content"])
        c = calls[0]
        with otel_replay.tool_call_id(c["id"]):
            result = step_tool(**c["arguments"])
        messages = [
            reply,
            {
                "role": "tool",
                "parts": [{"type": "tool_call_response", "id": c["id"], "response": result}],
            },
        ]


def record(path: Path, turns: int) -> None:
    provider = TracerProvider()
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
    )
    previous = otel_replay.use_tracer_provider(provider)
    try:
        agent(CountingModel(turns))
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


def main() -> None:
    sizes = (10, 100, 1000)
    per_step: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        runs = {}
        for turns in sizes:
            path = Path(tmp) / f"run{turns}.otlp"
            record(path, turns)
            t0 = time.perf_counter()
            (runs[turns],) = otel_replay.load(path)
            load_s = time.perf_counter() - t0
            steps = len(runs[turns].model_steps()) + len(runs[turns].tool_steps())
            print(
                f"{turns:5d} turns: {steps:5d} model+tool steps, load {load_s * 1e3:7.1f} ms "
                f"({load_s / steps * 1e6:.0f} µs/step)"
            )
        # Replay with no tracer so only replay work is measured.
        previous = otel_replay.use_tracer_provider(None)
        try:
            for turns in sizes:
                run = runs[turns]
                steps = len(run.model_steps()) + len(run.tool_steps())
                samples = []
                for _ in range(max(3, 3000 // steps)):
                    t0 = time.perf_counter()
                    with otel_replay.replay(run) as session:
                        agent(session.model)
                    samples.append((time.perf_counter() - t0) / steps)
                per_step[turns] = statistics.median(samples)
        finally:
            otel_replay.use_tracer_provider(previous)
    base = per_step[sizes[0]]
    for turns in sizes:
        print(
            f"replay, {turns:5d}-turn run: {per_step[turns] * 1e6:7.1f} µs/step  "
            f"ratio vs 10-turn run {per_step[turns] / base:5.2f}x"
        )


if __name__ == "__main__":
    main()
