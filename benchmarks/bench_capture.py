"""Cost of ``@tool`` and ``model_call`` against a span carrying the same attributes by hand.

    python benchmarks/bench_capture.py [--calls N] [--repeats R] [--against REV]

Baseline, measured in the same run: a span carrying exactly the attributes
the helper records (taken from one recorded call: names, payloads, digests,
types), set by hand on the same tracer provider inside an agent run: those the
helper gives at start in one dict at start, the rest in one ``set_attributes``
call before the span ends.  Measured: the helper doing the same call.  Two setups: the
provider with ``ReplaySpanProcessor`` alone, and with
``RecordingSpanProcessor(FileSpanExporter)`` as well.  With the processor
alone the process's CPU time per call is measured (the machine may be busy);
with recording, the app thread's wall time per call (encoding and writing
happen on the recording thread, which holds the GIL while it encodes).  The
cases alternate, ``--repeats`` rounds; printed, the median per call and the
median of each round's ratio (helper over hand, measured back to back).  For scale, a bare
SDK span (no processors, two attributes) is printed too.

``--against REV`` also runs the helpers of an earlier commit (its package read
with ``git archive`` into a temporary directory, never written into the tree) in
the same rounds, printed as ``at REV``; the spans they record (names and every
attribute) must be those this commit's helpers record.
"""

from __future__ import annotations

import argparse
import importlib
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench_redaction import package_at
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay

ARGS = {"query": "where is my order", "user_id": "u_7710", "limit": 3}
RESULT = [{"order_id": str(4400 + i), "item": "Widget Pro", "status": "shipped"} for i in range(3)]
MESSAGES = [
    {"role": "system", "parts": [{"type": "text", "content": "You help customers."}]},
    {"role": "user", "parts": [{"type": "text", "content": "Where is order 4401?"}]},
]
ANSWER = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_1", "name": "lookup_order", "arguments": ARGS}],
    "finish_reason": "tool_calls",
}


#: Where each name the benchmark uses lives in the package (an earlier commit's too).
_WHERE = {
    "tool": "capture.tool",
    "model_call": "capture.model_call",
    "agent_run": "capture.agent_run",
    "use_tracer_provider": "capture.spans",
    "ReplaySpanProcessor": "capture.processor",
    "FileSpanExporter": "export.file_exporter",
    "RecordingSpanProcessor": "export.recording_processor",
}


def library(package: str) -> Any:
    """The names the benchmark uses, from the package imported as ``package``."""
    return SimpleNamespace(
        **{
            name: getattr(importlib.import_module(f"{package}.{where}"), name)
            for name, where in _WHERE.items()
        }
    )


def lookup_order(query: str, user_id: str, limit: int) -> list[dict[str, str]]:
    return RESULT


def helpers(lib: Any) -> dict[str, Callable[[], None]]:
    """``@tool`` and ``model_call`` as ``lib`` records them, by case."""
    tool = lib.tool(lookup_order)

    def tool_helper() -> None:
        tool(**ARGS)

    def model_helper() -> None:
        with lib.model_call(provider="openai", model="gpt-4o", messages=MESSAGES) as call:
            call.record(ANSWER, usage={"input_tokens": 40, "output_tokens": 12})

    return {"@tool": tool_helper, "model_call": model_helper}


#: A conversation at its 100th turn: every call records all of it again.
HISTORY = [MESSAGES[0]]
for turn in range(100):
    HISTORY += [
        {"role": "user", "parts": [{"type": "text", "content": f"question {turn} " * 30}]},
        {**ANSWER, "parts": [{**ANSWER["parts"][0], "id": f"call_{turn}"}]},
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": f"call_{turn}", "response": RESULT}],
        },
    ]


def model_helper(messages: list[dict[str, Any]] = MESSAGES) -> None:
    with otel_replay.model_call(provider="openai", model="gpt-4o", messages=messages) as call:
        call.record(ANSWER, usage={"input_tokens": 40, "output_tokens": 12})


class _AtStart(SpanProcessor):
    """Keeps each span's attributes as they were when it started."""

    def __init__(self) -> None:
        self.seen: dict[int, dict[str, Any]] = {}

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        self.seen[span.context.span_id] = dict(span.attributes or {})


def recorded(
    helper: Callable[[], None], lib: Any = otel_replay
) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """The name of the span ``helper`` records, its attributes given at start, and the rest."""
    memory, at_start = InMemorySpanExporter(), _AtStart()
    provider = TracerProvider()
    provider.add_span_processor(at_start)
    provider.add_span_processor(lib.ReplaySpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(memory))
    previous = lib.use_tracer_provider(provider)
    try:
        with lib.agent_run("bench"):
            helper()
    finally:
        lib.use_tracer_provider(previous)
    (span,) = [s for s in memory.get_finished_spans() if s.parent is not None]
    start = at_start.seen[span.context.span_id]
    later = {k: v for k, v in (span.attributes or {}).items() if k not in start}
    return span.name, start, later


Make = Callable[[TracerProvider], Callable[[], None]]


def helper_call(helper: Callable[[], None]) -> Make:
    return lambda provider: helper


def long_model_helper() -> None:
    model_helper(HISTORY)


def by_hand(name: str, start: dict[str, Any], later: dict[str, Any]) -> Make:
    """The same span as user code would write it: its tracer got once, the attributes
    known at start given at start, the rest (the result) set in one call before it ends."""

    def make(provider: TracerProvider) -> Callable[[], None]:
        tracer = provider.get_tracer("app")

        def call() -> None:
            with tracer.start_as_current_span(name, attributes=start) as span:
                span.set_attributes(later)

        return call

    return make


def per_call(make: Make, n: int, recording: Path | None, lib: Any = otel_replay) -> float:
    """Time per call in an agent run, on a fresh provider: CPU, or wall when recording."""
    clock = time.process_time if recording is None else time.perf_counter
    provider = TracerProvider()
    provider.add_span_processor(lib.ReplaySpanProcessor())
    if recording is not None:
        exporter = lib.FileSpanExporter(recording)
        provider.add_span_processor(lib.RecordingSpanProcessor(exporter))
    previous = lib.use_tracer_provider(provider)
    fn = make(provider)
    try:
        with lib.agent_run("bench"):
            t0 = clock()
            for _ in range(n):
                fn()
            took = clock() - t0
    finally:
        lib.use_tracer_provider(previous)
        provider.shutdown()
    return took / n


def bare_span(n: int) -> float:
    tracer = TracerProvider().get_tracer("bench")
    with tracer.start_as_current_span("invoke_agent bench"):
        t0 = time.perf_counter()
        for _ in range(n):
            with tracer.start_as_current_span("execute_tool lookup_order") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", "lookup_order")
        return (time.perf_counter() - t0) / n


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", metavar="REV", help="also time the helpers of commit REV")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        libs = {"helper": otel_replay}
        if args.against:
            libs[f"at {args.against}"] = library(package_at(args.against, Path(tmp) / "at"))
        made = {what: helpers(lib) for what, lib in libs.items()}
        ours = made["helper"]
        for what, lib in libs.items():  # the same spans, or the comparison means nothing
            for case, helper in made[what].items():
                assert recorded(helper, lib) == recorded(ours[case]), f"{what} records {case} apart"
        cases = {case: by_hand(*recorded(helper)) for case, helper in ours.items()}
        times = rounds(args, Path(tmp), libs, made, cases)
    bare = times[("bare", "", "")]
    long = [per_call(helper_call(long_model_helper), args.calls // 10, None) for _ in range(3)]
    dumps = [_cpu_per_call(lambda: json.dumps(HISTORY), args.calls // 10) for _ in range(3)]
    print(f"bare SDK span, no processors, 2 attributes: {statistics.median(bare) * 1e6:6.1f} µs")
    for setup in ("processor", "file recording"):
        print(f"{setup} ({'CPU' if setup == 'processor' else 'app thread, wall'}):")
        for case in cases:
            hands = times[(setup, case, "hand")]
            line = f"  {case:<10} same attributes by hand {statistics.median(hands) * 1e6:6.1f} µs"
            for what in libs:
                took = times[(setup, case, what)]
                ratio = statistics.median(b / a for a, b in zip(hands, took, strict=True))
                line += f"   {what} {statistics.median(took) * 1e6:6.1f} µs, {ratio:4.2f}x"
            print(line)

    print(
        f"model_call of a {len(HISTORY)}-message conversation ({len(json.dumps(HISTORY)):,} bytes),"
        f" processor, CPU: {min(long) * 1e6:,.0f} µs per call; json.dumps of those messages"
        f" alone: {min(dumps) * 1e6:,.0f} µs"
    )


def rounds(
    args: argparse.Namespace,
    tmp: Path,
    libs: dict[str, Any],
    made: dict[str, dict[str, Callable[[], None]]],
    cases: dict[str, Make],
) -> dict[tuple[str, str, str], list[float]]:
    """Each round's time per call of the bare span, and of each case by hand and by each
    package's helper (in an order turned each round), by setup, case and who."""
    times: dict[tuple[str, str, str], list[float]] = {}
    for r in range(args.repeats):
        times.setdefault(("bare", "", ""), []).append(bare_span(args.calls))
        for setup in ("processor", "file recording"):
            for case, hand in cases.items():
                order = [("hand", hand, otel_replay)] + [
                    (what, helper_call(made[what][case]), lib) for what, lib in libs.items()
                ]
                turn = r % len(order)
                for what, fn, lib in order[turn:] + order[:turn]:
                    path = None if setup == "processor" else tmp / f"{case}{what}{r}"
                    took = per_call(fn, args.calls, path, lib)
                    times.setdefault((setup, case, what), []).append(took)
    return times


def _cpu_per_call(fn: Callable[[], object], n: int) -> float:
    t0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - t0) / n


if __name__ == "__main__":
    main()
