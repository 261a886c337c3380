"""``load()`` against a raw protobuf parse of the same file, and its peak memory.

    python benchmarks/bench_load.py [--size-mb 20] [--turns 1000] [--repeat 3]

Two files: a dump of GenAI agent runs (``bench_index.write_dump``: ten spans
of ~2.8 KB per run), and one long agent run recorded by the processor (the
loop of ``bench_replay.py``: a model call with its messages and a tool call
with exact payloads per turn).  Baseline, in the same process and run: upb
parsing every record of the file and walking to its spans, as a reader
must.  Then ``load()`` (every run found and ready to use; an agent's run has
its steps built, and its spans decoded, when first asked for), and
``load()`` with every run's steps then built (what a listing of every run
pays).  Then what a first ``otel-replay ls`` of the file computes (every run
read, built, checked and summarized, in one process), and the least any
listing that is exact must do before building a run: the reader decoding
every span's attributes, and that with every message list JSON-parsed and its
digest checked (a verdict asks whether each message says something, and
whether it is byte-exact).  CPU time, all
alternating, best of ``--repeat``.  Peak memory: the growth of the process's
peak RSS over one ``load()`` in a fresh process, against the file's size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_index import write_dump
from bench_replay import record
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import otel_replay
from otel_replay import attributes as A
from otel_replay.commands import summary_cache
from otel_replay.otlp.records import SpanRecord
from otel_replay.otlp.sniff import iter_records
from otel_replay.payload import codec as payload
from otel_replay.sources.reader import RecordReader

MESSAGE_LISTS = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES)
DIGEST = A.SHA256


def parse(path: Path) -> int:
    """The baseline: every record parsed, every span reached."""
    spans = 0
    for _, body in iter_records(path):
        request = ExportTraceServiceRequest.FromString(body)
        spans += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
    return spans


def built(path: Path) -> int:
    """``load()``, then every run's steps built."""
    return sum(len(run.steps) for run in otel_replay.load(path))


def listed(path: Path) -> int:
    """The first ``ls``: every run's line computed from the file (no saved summaries)."""
    found, problems = summary_cache.summaries([str(path)], use_cache=False, jobs=1)
    assert not problems
    return len(found)


def decoded(path: Path) -> int:
    """Floor of an exact listing: every span read and its attributes decoded."""
    return sum(1 for _ in RecordReader(str(path)))


def messages_parsed(path: Path) -> int:
    """The floor, and every message list parsed and its digest checked, as a verdict
    needs them."""
    lists = 0
    for read in RecordReader(str(path)):
        if isinstance(read, SpanRecord):
            attrs = read.attributes
            for key in MESSAGE_LISTS:
                value = attrs.get(key)
                if isinstance(value, str):
                    json.loads(value)
                    digest = attrs.get(DIGEST + key)
                    if digest is not None:
                        assert payload.sha256(value.encode()) == digest
                    lists += 1
    return lists


def cpu(fn: object, path: Path) -> float:
    t0 = time.process_time()
    fn(path)  # type: ignore[operator]
    return time.process_time() - t0


def peak_growth_mb(path: Path) -> float:
    """Peak RSS growth of one ``load()`` in a fresh process (imports excluded)."""
    # VmHWM, not ru_maxrss: a child's ru_maxrss starts at its parent's peak on Linux.
    code = (
        "import re, sys, otel_replay\n"
        "from otel_replay.runs import build, load\n"
        "def peak():\n"
        "    with open('/proc/self/status') as f:\n"
        "        return int(re.search(r'VmHWM:\\s+(\\d+)', f.read()).group(1))\n"
        "before = peak()\n"
        "runs = otel_replay.load(sys.argv[1])\n"
        "print((peak() - before) / 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True
    )
    return float(done.stdout.split()[-1])


def bench(label: str, path: Path, repeat: int) -> None:
    spans = parse(path)
    runs = otel_replay.load(path)  # warm: imports, caches
    phases = (parse, otel_replay.load, built, listed, decoded, messages_parsed)
    best = dict.fromkeys(phases, float("inf"))
    for _ in range(repeat):
        for phase in phases:
            best[phase] = min(best[phase], cpu(phase, path))
    base, took, whole = best[parse], best[otel_replay.load], best[built]
    size = path.stat().st_size / 1e6
    peak = peak_growth_mb(path)
    print(f"{label}: {size:.1f} MB, {spans:,} spans, {len(runs):,} runs")
    print(f"  upb parse (baseline)   {base:7.3f} s  1.00x")
    print(
        f"  load()                 {took:7.3f} s  {took / base:5.1f}x"
        f"  ({took / spans * 1e6:.0f} µs/span)"
    )
    print(f"  load(), every run built {whole:7.3f} s  {whole / base:5.1f}x")
    first_ls = best[listed]
    print(f"  first ls, 1 process    {first_ls:7.3f} s  {first_ls / base:5.1f}x")
    floor, floor_json = best[decoded], best[messages_parsed]
    print(f"  floor: spans decoded   {floor:7.3f} s  {floor / base:5.1f}x")
    print(f"  floor + messages parsed {floor_json:7.3f} s  {floor_json / base:5.1f}x")
    print(f"  peak RSS growth of load() {peak:.0f} MB = {peak / size:.1f}x the file")
    print(
        json.dumps(
            {
                "label": label,
                "ratio": took / base,
                "built": whole / base,
                "first_ls": first_ls / base,
                "floor": floor / base,
                "floor_json": floor_json / base,
                "memory": peak / size,
            }
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=20)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "agents.otlp"
        write_dump(dump, args.size_mb << 20, agent=True)
        bench("agent runs dump", dump, args.repeat)
        long = Path(tmp) / "long.otlp"
        record(long, args.turns)
        bench(f"one run of {args.turns:,} turns with tools", long, args.repeat)


if __name__ == "__main__":
    main()
