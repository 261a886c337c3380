"""Cost of importing the capture API, against importing the OTel SDK's tracing.

    python benchmarks/bench_import.py [--runs 25]

Each measurement is a fresh interpreter (its start included in both):
baseline ``import opentelemetry.sdk.trace``; measured, the capture API an
instrumented app touches (``ReplaySpanProcessor``, ``tool``, ``model_call``,
``agent_run``, ``FileSpanExporter``, ``RecordingSpanProcessor``).  The two
alternate, and the ratio is taken pair by pair on the children's CPU time
(the machine is shared); the median is printed.  Byte-code caches are written
by a first, uncounted run of each, as an installed package has them.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys

BASELINE = "import opentelemetry.sdk.trace"
CAPTURE = (
    "import otel_replay as o; o.ReplaySpanProcessor; o.tool; o.model_call; o.agent_run; "
    "o.FileSpanExporter; o.RecordingSpanProcessor"
)


def cpu(code: str) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args()
    cpu(BASELINE), cpu(CAPTURE)  # byte-code written, caches warm
    pairs = [(cpu(CAPTURE), cpu(BASELINE)) for _ in range(args.runs)]
    capture = statistics.median(a for a, _ in pairs)
    baseline = statistics.median(b for _, b in pairs)
    ratio = statistics.median(a / b for a, b in pairs)
    print(f"import opentelemetry.sdk.trace (baseline): {baseline * 1e3:6.1f} ms CPU")
    print(f"import the capture API:                    {capture * 1e3:6.1f} ms CPU")
    print(f"ratio (median of {args.runs} pairs):              {ratio:6.2f}x")


if __name__ == "__main__":
    main()
