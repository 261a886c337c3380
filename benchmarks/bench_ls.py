"""``otel-replay ls`` on a big dump: the first listing, then listings from the saved summaries.

    python benchmarks/bench_ls.py [--size-mb 1024]

Two dumps of 4-byte framed requests (the dump of ``bench_index.py``: GenAI
spans of ~2.8 KB, 10 spans per trace, batches cutting across traces): one
of agent runs (each trace under an ``invoke_agent`` span), one of the same
spans with no agent span, as a client-only instrumentation writes them.
Baseline, measured in the same run on the same dump: what the first ``ls``
did before it read in windows, ``otel_replay.load`` (every run built at
once) and every run summarized.  Then the first ``ls`` (every run built, checked
and summarized, a window of the dump at a time; summaries saved beside the
dump) in one process and with two worker processes, then a second ``ls``
from the saved summaries, in a fresh ``otel-replay`` process sorted by
tokens.  Each phase runs in a process of its own, so its peak RSS (the
largest process, workers included) is its own.  Every listing must name
every run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_index import write_dump

SRC = Path(__file__).resolve().parents[1] / "src"


def phase(what: str, dump: str, jobs: int) -> None:
    """One measured phase, in this (fresh) process; prints its numbers as JSON."""
    import otel_replay
    from otel_replay.commands import summary_cache

    t0 = time.perf_counter()
    if what == "load":
        from otel_replay.runs.summary import summarize

        runs = len([summarize(r) for r in otel_replay.load(dump)])
    else:
        found, problems = summary_cache.summaries([dump], jobs=jobs)
        assert not problems
        runs = len(found)
    seconds = time.perf_counter() - t0
    rss = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
        resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    )
    print(json.dumps({"seconds": seconds, "runs": runs, "rss_mb": rss / 1024}))


def upb_parse(dump: Path) -> float:
    """Seconds (CPU) to parse every record of ``dump`` and reach its spans: what any reader pays."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    from otel_replay.otlp.sniff import iter_records

    t0 = time.process_time()
    for _, body in iter_records(dump):
        request = ExportTraceServiceRequest.FromString(body)
        sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    return time.process_time() - t0


def measure(what: str, dump: Path, jobs: int = 1) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    done = subprocess.run(
        [sys.executable, __file__, "--phase", what, "--jobs", str(jobs), str(dump)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def bench(dump: Path, label: str) -> None:
    from otel_replay.commands import summary_cache

    cache = summary_cache.cache_path(str(dump))
    assert cache is not None
    base = measure("load", dump)
    count = base["runs"]
    parse = min(upb_parse(dump) for _ in range(3))
    print(f"{label}: {count:,.0f} runs")
    print(f"  upb parse of every record, for scale: {parse:6.2f} s")
    print(
        f"  baseline, load() + summarize:  {base['seconds']:7.2f} s  1.00x"
        f"  peak RSS {base['rss_mb']:6.0f} MB"
    )
    for jobs in (1, 2):
        cache.unlink(missing_ok=True)
        first = measure("ls", dump, jobs)
        assert first["runs"] == count and cache.exists()
        ratio = first["seconds"] / base["seconds"]
        print(
            f"  first ls, {jobs} process(es):       {first['seconds']:7.2f} s  {ratio:.2f}x"
            f"  peak RSS {first['rss_mb']:6.0f} MB  ({first['seconds'] / parse:.0f}x the parse)"
        )
    mb = cache.stat().st_size / 1e6
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "otel_replay.cli.main", "ls", str(dump), "--sort", "tokens"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    again = time.perf_counter() - t0
    assert len(done.stdout.splitlines()) == count + 1
    print(
        f"  next ls, fresh otel-replay process: {again:5.2f} s  {again / base['seconds']:.3f}x"
        f"  ({mb:.0f} MB of summaries)"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    parser.add_argument("--phase", choices=["load", "ls"])
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("dump", nargs="?")
    args = parser.parse_args()
    if args.phase:
        phase(args.phase, args.dump, args.jobs)
        return
    with tempfile.TemporaryDirectory() as tmp:
        for agent, label in ((True, "agent runs"), (False, "client-only traces")):
            dump = Path(tmp) / f"dump-{'agent' if agent else 'client'}.otlp"
            t0 = time.perf_counter()
            ids = write_dump(dump, args.size_mb * 1024 * 1024, agent=agent)
            took = time.perf_counter() - t0
            size = dump.stat().st_size / 1e9
            print(f"dump of {label}: {size:.2f} GB, {len(ids):,} traces, written in {took:.1f} s")
            bench(dump, label)
            dump.unlink()


if __name__ == "__main__":
    main()
