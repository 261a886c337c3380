"""``otel-replay ls`` on a big dump: the first listing, then listings from the saved summaries.

    python benchmarks/bench_ls.py [--size-mb 1024]

Writes a dump of 4-byte framed requests (the dump of ``bench_index.py``:
GenAI spans of ~2.8 KB, 10 spans per trace).  Baseline, measured in the
same run: ``otel_replay.load(dump)``, every run built.  Then: the first
``ls`` (load, summarize every run with its verdict and anomalies, save the
summaries beside the dump), a second ``ls`` (summaries read back, nothing
else), and the second ``ls`` as a user runs it (a fresh ``otel-replay``
process, sorted by tokens).  Every listing must name every run.
"""

from __future__ import annotations

import argparse
import gc
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_index import peak_rss_mb, write_dump

import otel_replay
from otel_replay.workflow import summary_cache


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=1024)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        dump = Path(tmp) / "dump.otlp"
        t0 = time.perf_counter()
        ids = write_dump(dump, args.size_mb * 1024 * 1024)
        size = dump.stat().st_size
        took = time.perf_counter() - t0
        print(f"dump: {size / 1e9:.2f} GB, {len(ids):,} traces, written in {took:.1f} s")

        t0 = time.perf_counter()
        runs = otel_replay.load(dump)
        base = time.perf_counter() - t0
        count = len(runs)
        assert count == len(ids), (count, len(ids))
        del runs
        gc.collect()
        rate = size / base / 1e6
        print(f"baseline, load() of every run: {base:7.2f} s ({rate:.0f} MB/s, {count:,} runs)")
        print(f"  peak RSS so far {peak_rss_mb():.0f} MB")

        def listing() -> list[summary_cache.RunSummary]:
            found, _ = summary_cache.summaries([str(dump)], lambda: otel_replay.load(dump))
            assert len(found) == count
            return found

        t0 = time.perf_counter()
        listing()
        first = time.perf_counter() - t0
        cache = summary_cache.cache_path(str(dump))
        assert cache is not None and cache.exists()
        mb = cache.stat().st_size / 1e6
        print(f"first ls (load, summarize, save): {first:7.2f} s  ratio {first / base:.2f}x")
        print(f"  summaries file {mb:.1f} MB; peak RSS so far {peak_rss_mb():.0f} MB")

        t0 = time.perf_counter()
        listing()
        again = time.perf_counter() - t0
        print(f"second ls (summaries read back):  {again:7.2f} s  ratio {again / base:.4f}x")

        src = Path(__file__).resolve().parents[1] / "src"
        env = {**os.environ, "PYTHONPATH": str(src)}
        t0 = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "otel_replay.cli.main", "ls", str(dump), "--sort", "tokens"],
            capture_output=True,
            text=True,
            env=env,
            check=True,
        )
        cli = time.perf_counter() - t0
        assert len(done.stdout.splitlines()) == count + 1
        print(f"second ls, fresh otel-replay process: {cli:5.2f} s  ratio {cli / base:.4f}x")
        cache.unlink()


if __name__ == "__main__":
    main()
