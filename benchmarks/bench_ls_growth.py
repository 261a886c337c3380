"""``otel-replay ls`` of a dump that grew since it was last listed.

    python benchmarks/bench_ls_growth.py [--size-mb 100] [--repeat 3] [--format json]

A dump of GenAI agent runs (``bench_index.write_dump``: ten spans of ~2.8 KB
per run) is listed once, so its summaries are kept beside it; then one more
exporter request (50 runs, 500 spans) is appended, as a running application
or Collector appends them (``--format json``: the dump and the request as
JSON lines, the Collector's default).  Measured, alternating, on the grown dump: the
listing from the kept summaries, reading again only the traces the new bytes
add to; and the baseline, the same listing read whole, as every listing of
a changed dump did before.  Also the first listing of the dump (what the
summaries cost to make, the SHA-256 of the dump's bytes among it) and that
digest alone.  CPU time of one process (the listing read whole runs in one
process here), best of ``--repeat``; every listing must give the same runs.
"""

from __future__ import annotations

import argparse
import functools
import random
import shutil
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from bench_index import template, write_dump

from otel_replay.commands import summary_cache
from otel_replay.export.convert import convert

T = TypeVar("T")


def cpu(fn: Callable[[], T]) -> tuple[float, T]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def request(rng: random.Random) -> bytes:
    """One framed exporter request of 50 agent runs none of the dump holds."""
    body, ids = template(agent=True)
    for old in ids:
        body = body.replace(old, rng.randbytes(16))
    return struct.pack(">I", len(body)) + body


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--format", choices=("proto", "json"), default="proto")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base, extra = Path(tmp) / "base.otlp", Path(tmp) / "extra.otlp"
        write_dump(base, args.size_mb << 20, agent=True)
        extra.write_bytes(request(random.Random(1)))
        if args.format == "json":
            for framed in (base, extra):
                convert([framed], framed.with_suffix(".jsonl"), format="json")
            base, extra = base.with_suffix(".jsonl"), extra.with_suffix(".jsonl")
        grown_best = whole_best = first_best = digest_best = float("inf")
        for trial in range(args.repeat):
            dump = Path(tmp) / f"dump-{trial}{base.suffix}"  # its own file, its own summaries
            shutil.copyfile(base, dump)
            size = dump.stat().st_size
            listing = functools.partial(summary_cache.summaries, [str(dump)], jobs=1)
            first, (first_runs, _) = cpu(listing)
            digest, _ = cpu(functools.partial(summary_cache._scan, str(dump), [size]))
            with open(dump, "ab") as f:
                f.write(extra.read_bytes())
            whole, (want, _) = cpu(functools.partial(listing, use_cache=False))
            grown, (got, _) = cpu(listing)
            assert got == want and len(got) == len(first_runs) + 50
            grown_best, whole_best = min(grown_best, grown), min(whole_best, whole)
            first_best, digest_best = min(first_best, first), min(digest_best, digest)
            dump.unlink()
        size_mb = base.stat().st_size / 1e6
        print(
            f"dump of {size_mb:.0f} MB ({args.format}), {len(got):,} runs after one request"
            " appended"
        )
        print(f"  ls read whole (baseline)        {whole_best:7.3f} s  1.00x")
        print(
            f"  ls of the grown dump            {grown_best:7.3f} s  {grown_best / whole_best:.3f}x"
        )
        print(f"  first ls of the dump            {first_best:7.3f} s")
        print(
            f"  of which the dump's SHA-256     {digest_best:7.3f} s"
            f"  ({digest_best / first_best:.1%})"
        )


if __name__ == "__main__":
    main()
