"""Exporting third-party spans, secrets scrubbed, against the SDK's encoding of them.

    python benchmarks/bench_export_scrub.py [--spans N] [--repeats R] [--median]

Spans as an instrumentation other than ours writes them, with no
``ReplaySpanProcessor`` on their provider, so that ``FileSpanExporter`` scrubs
every one before it writes it: GenAI chat spans whose input is a conversation
growing turn by turn (every span's text its own), their answers, a tool call
now and then whose arguments hold an API key, and HTTP client spans whose URL
carries one in its query.  Baseline, in the same run on the same spans: the
SDK's ``encode_spans(spans).SerializeToString()``.  Measured: CPU time of the
process, best of R rounds (``--median``: the median round), each round running
the baseline and the export with the redaction engine's pure-Python pass and
with its Hyperscan prefilter (the ``fast`` extra; where it is missing, both run
the pure pass) in turn; each export starts with the engine's memory of texts it
scrubbed emptied (a round sees the spans first, as a new run would).
Printed: microseconds a span of each, and how many times the baseline's cost
each export is (``>= 3`` is the goal: the export faster than the encoding by
that much).  The same for the GenAI spans of ``bench_encoder.py`` (a long
conversation repeated on every span, a payload of ours with its digest).
Exits 1 if the export hid no secret or the two engines wrote different
files.

``--parts`` prints instead where an export of the third-party mix spends its
time, in the same rounds: the SDK's encoding, our encoder alone (on the spans
scrubbed), the walk over spans whose texts the engine has all seen (it scans
again only a long text that hid a secret), the same walk with none seen, and the
whole export; then each kind of attribute text of the mix scanned alone, a text
at a time, none seen before.

``--against REV`` also runs the exporter of an earlier commit (its package read
with ``git archive`` into a temporary directory, never written into the tree), with
its Hyperscan prefilter, in the same rounds: printed as ``export at REV``, and the
file it wrote must be the one this exporter wrote, byte for byte.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_encoder import genai_spans
from bench_redaction import interleaved, package_at
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay
from otel_replay.redaction import Redactor, install_redactor

QUESTIONS = [
    "Where is my order 4401? It was due on Monday and the tracking page has not moved.",
    "Can you send it to my office instead, 12 rue de la Paix, before Friday?",
    "What does the carrier say about the delay, and will I be refunded the shipping?",
    "Please also check whether the second parcel left the warehouse in Lyon.",
]


def third_party_spans(n: int) -> list[ReadableSpan]:
    """``n`` spans as a third-party instrumentation ends them (no scrubbing of ours)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-agent"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("openinference.instrumentation.openai", "0.1.66")
    history: list[dict[str, object]] = [
        {"role": "system", "content": "You are a support agent for an online shop. " * 8}
    ]
    with tracer.start_as_current_span("agent run"):
        for i in range(n):
            if i % 5 == 4:
                key = f"sk-proj-{i:06d}Ab3dEf6hIj9kLm2nOp5qRs8tUv1w"
                with tracer.start_as_current_span("GET", kind=trace.SpanKind.CLIENT) as span:
                    span.set_attributes(
                        {
                            "http.request.method": "GET",
                            "url.full": f"https://api.carrier.example/v2/track/{i}?api_key={key}",
                            "http.response.status_code": 200,
                            "server.address": "api.carrier.example",
                        }
                    )
                continue
            if len(history) > 12:
                del history[1:]
            history.append({"role": "user", "content": f"{QUESTIONS[i % 4]} (ticket {i})"})
            with tracer.start_as_current_span("chat gpt-4o", kind=trace.SpanKind.CLIENT) as span:
                answer = f"Order {4400 + i} left the warehouse on day {i % 28 + 1}; " * 6
                calls = []
                if i % 10 == 0:
                    arguments = {
                        "order": 4400 + i,
                        "api_key": f"ghp_{i:08d}aBcDeFgHiJkLmNoPqRsTuVwXyZ01",
                    }
                    calls = [{"id": f"call_{i}", "name": "track", "arguments": arguments}]
                span.set_attributes(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.provider.name": "openai",
                        "gen_ai.request.model": "gpt-4o",
                        "gen_ai.response.id": f"chatcmpl-{i:08d}",
                        "gen_ai.request.max_tokens": 512,
                        "gen_ai.usage.input_tokens": 900 + i % 50,
                        "gen_ai.usage.output_tokens": 120 + i % 30,
                        "gen_ai.response.finish_reasons": ["stop"],
                        "gen_ai.input.messages": json.dumps(history),
                        "gen_ai.output.messages": json.dumps(
                            [{"role": "assistant", "content": answer, "tool_calls": calls}]
                        ),
                        "llm.invocation_parameters": json.dumps({"temperature": 0.2, "seed": i}),
                    }
                )
                span.add_event("gen_ai.choice", {"index": 0, "finish_reason": "stop"})
            history.append({"role": "assistant", "content": answer})
    provider.shutdown()
    return list(exporter.get_finished_spans())


def forget(engine: Redactor) -> None:
    """Forget the texts ``engine`` remembers with their scrubbed form, so that each round
    scrubs the spans as if it saw them first (a text repeated within the round is still
    remembered, as a long run of spans would)."""
    for memo in ("_memo", "_long_clean"):
        getattr(engine, memo, {}).clear()
    if hasattr(engine, "_long_chars"):
        engine._long_chars = 0


def measure(
    spans: list[ReadableSpan], repeats: int, median: bool = False, old: str | None = None
) -> tuple[dict[str, float], dict[str, bytes]]:
    """CPU seconds of the baseline and of each export of ``spans`` (best of ``repeats``
    interleaved rounds, or the median round), and the file each export wrote.  ``old``:
    the name of an earlier commit's package, whose exporter runs too (as ``at``)."""
    batches = [spans[i : i + 512] for i in range(0, len(spans), 512)]
    packages: dict[str, Any] = {"pure": otel_replay, "fast": otel_replay}
    if old is not None:
        packages["at"] = importlib.import_module(old)
    redactions = {
        name: importlib.import_module(package.__name__ + ".redaction")
        for name, package in packages.items()
    }
    engines = {
        name: module.Redactor(prefilter=name != "pure") for name, module in redactions.items()
    }
    with tempfile.TemporaryDirectory() as tmp:
        # (Each package's own module: the package's lazy names import ours by name.)
        exporters = {
            name: importlib.import_module(
                package.__name__ + ".export.file_exporter"
            ).FileSpanExporter(Path(tmp) / f"{name}.otlp")
            for name, package in packages.items()
        }

        def export(name: str) -> Callable[[], object]:
            def run() -> None:
                engine = engines[name]
                # The engine every exporter of that package uses.
                redactions[name].install_redactor(engine)
                forget(engine)
                for batch in batches:
                    exporters[name].export(batch)

            return run

        fns: dict[str, Callable[[], object]] = {
            "base": lambda: encode_spans(spans).SerializeToString()
        }
        fns.update({f"export, {name}": export(name) for name in engines})
        for fn in fns.values():
            fn()  # compiled, warmed; both files then hold the same spans
        rounds = interleaved(list(fns.values()), repeats, 1, median=median)
        times = dict(zip(fns, rounds, strict=True))
        for exporter in exporters.values():
            exporter.shutdown()
        files = {name: (Path(tmp) / f"{name}.otlp").read_bytes() for name in engines}
    return times, files


def parts(spans: list[ReadableSpan], repeats: int, median: bool) -> None:
    """Print where an export of ``spans`` spends its time (see the module docstring)."""
    from otel_replay.export.file_exporter import FileSpanExporter, _encoder
    from otel_replay.export.scrub import hidden_copy

    engine = Redactor()
    install_redactor(engine)
    batches = [spans[i : i + 512] for i in range(0, len(spans), 512)]
    with tempfile.TemporaryDirectory() as tmp:
        exporter = FileSpanExporter(Path(tmp) / "parts.otlp")
        scrubbed = [hidden_copy(span) for span in spans]
        encode = _encoder(exporter.format)

        def walk() -> None:
            for span in spans:
                hidden_copy(span)

        def unseen() -> None:
            forget(engine)
            walk()

        def export() -> None:
            forget(engine)
            for batch in batches:
                exporter.export(batch)

        fns: dict[str, Callable[[], object]] = {
            "encode_spans().Serialize": lambda: encode_spans(spans).SerializeToString(),
            "our encoder alone": lambda: [
                encode(scrubbed[i : i + 512], max_inline=exporter.max_inline, blobs=exporter.blobs)
                for i in range(0, len(spans), 512)
            ],
            "walk, every text seen": walk,
            "walk, none seen": unseen,
            "export": export,
        }
        for fn in fns.values():
            fn()
        times = interleaved(list(fns.values()), repeats, 1, median=median)
        exporter.shutdown()
    print(f"{'third-party mix':<31}{'':<26}{'µs/span':>9}")
    for name, seconds in zip(fns, times, strict=True):
        print(f"{'':<31}{name:<26}{seconds * 1e6 / len(spans):>9.1f}")
    kinds: dict[str, list[str]] = {}
    for span in spans:
        for key, value in (span.attributes or {}).items():
            if type(value) is str:
                kinds.setdefault(key, []).append(value)
    kinds = {k: list(dict.fromkeys(v)) for k, v in kinds.items() if len(set(v)) > len(spans) // 20}

    def scans(texts: list[str]) -> Callable[[], object]:
        def run() -> None:
            forget(engine)
            for text in texts:
                engine.text(text)

        return run

    times = interleaved([scans(t) for t in kinds.values()], repeats, 1, median=median)
    print(f"{'a text alone, unseen':<31}{'':<26}{'chars':>9}{'µs/text':>9}")
    for (key, texts), seconds in zip(kinds.items(), times, strict=True):
        chars = sum(map(len, texts)) / len(texts)
        print(f"{'':<31}{key:<26}{chars:>9.0f}{seconds * 1e6 / len(texts):>9.1f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--median", action="store_true", help="the median round, not the best")
    parser.add_argument("--against", metavar="REV", help="also time the exporter of commit REV")
    parser.add_argument("--parts", action="store_true", help="where an export of the mix goes")
    args = parser.parse_args()
    if args.parts:
        parts(third_party_spans(args.spans), args.repeats, args.median)
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        old = package_at(args.against, Path(tmp)) if args.against else None
        return report(args, old)


def report(args: argparse.Namespace, old: str | None) -> int:
    """Measure and print; 1 if an export hid nothing or two exports differ."""
    if Redactor()._shapes._made() is None:
        print("(the fast extra is not installed: both exports run the pure pass)")
    sets = {
        "third-party mix": third_party_spans(args.spans),
        "GenAI spans (bench_encoder's)": genai_spans(args.spans),
    }
    statistic = "median" if args.median else "best"
    print(f"CPU time, {statistic} of {args.repeats} interleaved rounds")
    print(f"{'spans':<31}{'':<26}{'µs/span':>9}{'base/this':>11}")
    for title, spans in sets.items():
        times, files = measure(spans, args.repeats, args.median, old)
        if any(data != files["fast"] for data in files.values()):
            print(f"MISMATCH: the exports wrote different files of the {title}")
            return 1
        if title == "third-party mix" and (
            b"[REDACTED]" not in files["fast"] or b"ghp_" in files["fast"]
        ):
            print("the export hid no secret, or not all")
            return 1
        base = times["base"]
        for name, seconds in times.items():
            label = "encode_spans().Serialize" if name == "base" else name
            label = f"export at {args.against}" if name == "export, at" else label
            print(
                f"{title:<31}{label:<26}{seconds * 1e6 / len(spans):>9.1f}{base / seconds:>10.2f}x"
            )
            title = ""
    return 0


if __name__ == "__main__":
    sys.exit(main())
