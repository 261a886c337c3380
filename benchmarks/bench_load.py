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

``--against REV`` times the first ``ls`` of the same files and the floor, in
fresh processes, with this tree's package and with commit ``REV``'s,
alternating over ``--rounds`` rounds (each process: best CPU of ``--repeat``),
checks that both list the same lines, and gives each side's first ``ls`` over
its floor and the new first ``ls`` over the old (medians of the rounds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
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


def phase(path: Path, repeat: int) -> None:
    """In a fresh process: the best CPU of the first ``ls`` and of the floor, and a digest
    of the lines listed."""
    found, problems = summary_cache.summaries([str(path)], use_cache=False, jobs=1)
    assert not problems
    lines = json.dumps([s.to_json() for s in found], sort_keys=True).encode()
    first = floor = float("inf")
    for _ in range(repeat):
        first = min(first, cpu(listed, path))
        floor = min(floor, cpu(messages_parsed, path))
    digest = hashlib.sha256(lines).hexdigest()
    print(json.dumps({"first_ls": first, "floor": floor, "lines": digest}))


def against(label: str, path: Path, rev: str, rounds: int, repeat: int) -> None:
    """The first ``ls`` of ``path`` with this tree's package and with ``rev``'s, alternating."""
    # Only --against reads another commit's package (and that benchmark's helpers).
    from bench_ls_clickhouse import ROOT, package_at

    sides: dict[str, list[dict[str, float]]] = {"now": [], rev: []}
    with tempfile.TemporaryDirectory() as tmp:
        srcs = {"now": ROOT / "src", rev: package_at(rev, Path(tmp))}
        for _ in range(rounds):
            for side, src in srcs.items():
                env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(src), str(ROOT)])}
                done = subprocess.run(
                    [sys.executable, __file__, "--phase", str(path), "--repeat", str(repeat)],
                    capture_output=True,
                    text=True,
                    env=env,
                    check=True,
                )
                sides[side].append(json.loads(done.stdout))
    digests = {r["lines"] for rs in sides.values() for r in rs}
    assert len(digests) == 1, "the two packages list other lines"
    print(f"{label}: first ls, CPU best of {repeat} per process, median of {rounds} rounds")
    for side, results in sides.items():
        first = statistics.median(r["first_ls"] for r in results)
        over = statistics.median(r["first_ls"] / r["floor"] for r in results)
        print(f"  {side:>12}  first ls {first:7.3f} s  {over:4.2f}x its floor")
    pairs = [n["first_ls"] / o["first_ls"] for n, o in zip(sides["now"], sides[rev], strict=True)]
    print(
        f"  now / {rev}: {statistics.median(pairs):.2f}x (rounds {min(pairs):.2f}-{max(pairs):.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=20)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--against", metavar="REV", help="also time REV's first ls, alternating")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of --against")
    parser.add_argument("--phase", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.phase is not None:
        phase(args.phase, args.repeat)
        return
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "agents.otlp"
        write_dump(dump, args.size_mb << 20, agent=True)
        long = Path(tmp) / "long.otlp"
        record(long, args.turns)
        files = [("agent runs dump", dump), (f"one run of {args.turns:,} turns with tools", long)]
        for label, path in files:
            if args.against is not None:
                against(label, path, args.against, args.rounds, args.repeat)
            else:
                bench(label, path, args.repeat)


if __name__ == "__main__":
    main()
