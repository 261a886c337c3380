"""Throughput of the redaction engine on plain prose and on trigger-dense text.

    python benchmarks/bench_redaction.py [--kb K] [--repeats R] [--median]

Each text (about ``--kb`` kilobytes, longer than the engine remembers with
its scrubbed form, and the long texts it remembers as clean forgotten before
each call, so every call scans) goes through ``Redactor.text``, once with its pure-Python
pass (``prefilter=False``: the engine as it was before the prefilter) and
once with its Hyperscan prefilter (where the ``fast`` extra is installed);
the baseline, measured in the same run on the same text, is one simple
regular expression (``sk-[A-Za-z0-9_-]{16,}``, an OpenAI key) through
``re.finditer``.  CPU time of the process, best of R rounds (``--median``: the
median round, steadier on a loaded machine), the three interleaved in each
round; printed, MB/s of each, each engine's cost as a multiple of the
baseline's, and the prefilter's speed-up over the pure pass.
The texts:

* prose: English sentences, no trigger in them;
* JSON: a chat request as JSON text (messages, tools, ``max_tokens``), a few
  triggers such as ``token`` in names that are not secrets;
* dense: configuration, headers and command lines, a trigger every few
  words, a secret every line;
* bytes: the dense text as UTF-8 bytes (``Redactor.data``).

``--against REV`` runs the engine of an earlier commit instead of the
baseline (that commit's package, read with ``git archive`` into a temporary
directory, never written into the tree) on the same
texts in the same process, and prints its CPU time, this engine's (pure and
fast) and the speed-up of each over it.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import io
import json
import random
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from otel_replay.redaction import Redactor

WORDS = [
    "the",
    "agent",
    "looked",
    "up",
    "the",
    "order",
    "and",
    "found",
    "that",
    "it",
    "shipped",
    "on",
    "Monday",
    "from",
    "the",
    "warehouse",
    "in",
    "Lyon;",
    "the",
    "customer",
    "asked",
    "whether",
    "the",
    "parcel",
    "could",
    "be",
    "sent",
    "to",
    "a",
    "different",
    "address",
    "before",
    "Friday,",
    "and",
    "the",
    "assistant",
    "answered",
    "that",
    "it",
    "would",
    "check",
    "with",
    "the",
    "carrier",
    "first",
]

DENSE_LINES = (
    'api_key: "{s}"',
    "X-Api-Key: {s}",
    "export AWS_SECRET_ACCESS_KEY={s}",
    '{{"max_tokens": 512, "token_count": 7, "password": "{s}"}}',
    "mysql --user app --password {s} --host db",
    "Authorization: Bearer {s}",
    "https://x.io/v1?q=a&key={s}&n=2",
    "postgres://app:{s}@db:5432/prod",
    "sort(items, key=len) # the access token is refreshed hourly",
    "aws_secret_access_key = {s}",
)


def prose(size: int, rng: random.Random) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        sentence = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))).capitalize()
        out.append(sentence + ".")
        n += len(sentence) + 2
    return " ".join(out)


def chat_json(size: int, rng: random.Random) -> str:
    messages = [{"role": "system", "content": "You help customers track orders."}]
    while len(json.dumps(messages)) < size:
        messages.append({"role": "user", "content": prose(300, rng)})
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{rng.randrange(10**8)}",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": '{"order_id": "4401"}'},
                    }
                ],
            }
        )
    body = {"model": "gpt-x", "messages": messages, "max_tokens": 512, "stream": False}
    return json.dumps(body)


def dense(size: int, rng: random.Random) -> str:
    out: list[str] = []
    n = 0
    while n < size:
        secret = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(24))
        line = rng.choice(DENSE_LINES).format(s=secret)
        out.append(line)
        n += len(line) + 1
    return "\n".join(out)


def texts(size: int) -> dict[str, str]:
    """The benchmark's texts of ``size`` characters, drawn always the same: prose, a chat
    request as JSON, trigger-dense lines."""
    rng = random.Random(7)
    return {"prose": prose(size, rng), "JSON": chat_json(size, rng), "dense": dense(size, rng)}


def scanned(engine: Any, method: str, data: str | bytes) -> object:
    """``engine.<method>(data)``, the long texts the engine remembers as clean forgotten
    first: the text is scanned, not found again."""
    getattr(engine, "_long_clean", set()).clear()
    return getattr(engine, method)(data)


def interleaved(
    fns: list[Callable[[], object]], repeats: int, inner: int, *, median: bool = False
) -> list[float]:
    """CPU seconds a call of each of ``fns``, best of ``repeats`` rounds (or the median
    round); each round runs them all in turn, so that a change in the machine's load hits
    all alike."""
    rounds: list[list[float]] = [[] for _ in fns]
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.process_time()
            for _ in range(inner):
                fn()
            rounds[i].append((time.process_time() - start) / inner)
    return [statistics.median(r) if median else min(r) for r in rounds]


def engine_at(rev: str, into: Path) -> Any:
    """A ``Redactor`` of commit ``rev``'s engine: its whole package, extracted under
    ``into`` as ``_redaction_at`` (its relative imports then find that commit's modules,
    wherever they lived then)."""
    return importlib.import_module(package_at(rev, into) + ".redaction").Redactor()


def package_at(rev: str, into: Path) -> str:
    """The name under which commit ``rev``'s whole package is imported, extracted under
    ``into`` as ``_redaction_at``."""
    root = Path(__file__).resolve().parent.parent
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src/otel_replay"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout
    # (Python's own filter where it has one: the archive is this repository's, trusted.)
    safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, **safe)
    (into / "src" / "otel_replay").rename(into / "_redaction_at")
    sys.path.insert(0, str(into))
    return "_redaction_at"


def compare(rev: str, texts: dict[str, str], repeats: int, inner: int, median: bool) -> None:
    """CPU time of commit ``rev``'s engine and of this one, on the same texts."""
    with tempfile.TemporaryDirectory() as tmp:
        engines = [engine_at(rev, Path(tmp)), Redactor(prefilter=False), Redactor()]
        print(
            f"{'text':<8}{rev + ' ms':>14}{'pure ms':>10}{'fast ms':>10}"
            f"{rev + '/pure':>16}{rev + '/fast':>16}"
        )
        for name in (*texts, "bytes"):
            data = texts["dense"].encode() if name == "bytes" else texts[name]
            runs = [
                functools.partial(scanned, engine, "data" if name == "bytes" else "text", data)
                for engine in engines
            ]
            for run in runs:
                run()
            old, pure, fast = (t * 1000 for t in interleaved(runs, repeats, inner, median=median))
            print(
                f"{name:<8}{old:>14.2f}{pure:>10.2f}{fast:>10.2f}"
                f"{old / pure:>16.2f}{old / fast:>16.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--against", metavar="REV", help="also time the engine of commit REV")
    parser.add_argument("--median", action="store_true", help="the median round, not the best")
    args = parser.parse_args()
    drawn = texts(args.kb * 1024)
    inner = max(1, 2048 // args.kb)
    if args.against:
        compare(args.against, drawn, args.repeats, inner, args.median)
        return
    pure, fast = Redactor(prefilter=False), Redactor()
    baseline = re.compile(r"sk-[A-Za-z0-9_-]{16,}")
    fast.text("warm")
    if fast._shapes._prefilter is None:
        print("(the fast extra is not installed: both engines run the pure pass)")
    print(
        f"{'text':<8}{'KB':>6}{'pure MB/s':>11}{'fast MB/s':>11}{'re MB/s':>9}"
        f"{'pure/re':>9}{'fast/re':>9}{'speed-up':>10}"
    )
    data = drawn["dense"].encode()
    for name in (*drawn, "bytes"):
        if name == "bytes":
            runs = [functools.partial(scanned, e, "data", data) for e in (pure, fast)]
            text = drawn["dense"]
        else:
            text = drawn[name]
            runs = [functools.partial(scanned, e, "text", text) for e in (pure, fast)]
        assert runs[0]() == runs[1](), name  # the same result, and compiled, warmed
        t_pure, t_fast, t_base = interleaved(
            [*runs, lambda t=text: list(baseline.finditer(t))],
            args.repeats,
            inner,
            median=args.median,
        )
        mb = len(text) / 1e6
        print(
            f"{name:<8}{len(text) // 1024:>6}{mb / t_pure:>11.1f}{mb / t_fast:>11.1f}"
            f"{mb / t_base:>9.1f}{t_pure / t_base:>9.1f}{t_fast / t_base:>9.1f}"
            f"{t_pure / t_fast:>9.1f}x"
        )


if __name__ == "__main__":
    main()
