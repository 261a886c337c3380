"""Throughput of the redaction engine on plain prose and on trigger-dense text.

    python benchmarks/bench_redaction.py [--kb K] [--repeats R]

Each text (about ``--kb`` kilobytes, longer than the engine remembers, so
every call scans) goes through ``Redactor.text``; the baseline, measured in
the same run on the same text, is one simple regular expression
(``sk-[A-Za-z0-9_-]{16,}``, an OpenAI key) through ``re.finditer``.  CPU time
of the process, best of R rounds; printed, MB/s of each and the engine's
cost as a multiple of the baseline's.  The texts:

* prose: English sentences, no trigger in them;
* JSON: a chat request as JSON text (messages, tools, ``max_tokens``), a few
  triggers such as ``token`` in names that are not secrets;
* dense: configuration, headers and command lines, a trigger every few
  words, a secret every line;
* bytes: the dense text as UTF-8 bytes (``Redactor.data``).

``--against REV`` also runs the engine of an earlier commit (its
``redaction.py`` and ``secret_patterns.py``, read with ``git show`` into a
temporary module, never written into the tree) on the same texts in the same
process, and prints both CPU times and their ratio.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import json
import random
import re
import subprocess
import sys
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


def cpu_best(fn: Callable[[], object], repeats: int, inner: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(inner):
            fn()
        best = min(best, (time.process_time() - start) / inner)
    return best


def engine_at(rev: str, into: Path) -> Any:
    """A ``Redactor`` of commit ``rev``'s engine, loaded as a package under ``into``."""
    root = Path(__file__).resolve().parent.parent
    package = into / "_redaction_at"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("redaction", "secret_patterns"):
        source = subprocess.run(
            ["git", "show", f"{rev}:src/otel_replay/{name}.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        # Its own patterns beside it; the rest of the package as installed.
        source = re.sub(
            r"^from \.(?!secret_patterns)(\w*) import",
            lambda m: f"from otel_replay{'.' + m[1] if m[1] else ''} import",
            source,
            flags=re.M,
        )
        (package / f"{name}.py").write_text(source)
    sys.path.insert(0, str(into))
    return importlib.import_module("_redaction_at.redaction").Redactor()


def compare(rev: str, texts: dict[str, str], repeats: int, inner: int) -> None:
    """CPU time of commit ``rev``'s engine and of this one, on the same texts."""
    with tempfile.TemporaryDirectory() as tmp:
        engines = {rev: engine_at(rev, Path(tmp)), "this": Redactor()}
        print(f"{'text':<8}{rev + ' ms':>14}{'this ms':>10}{'this/' + rev:>16}")
        for name in (*texts, "bytes"):
            times = []
            for engine in engines.values():
                data = texts["dense"].encode() if name == "bytes" else texts[name]
                run = functools.partial(engine.data if name == "bytes" else engine.text, data)
                run()
                times.append(cpu_best(run, repeats, inner) * 1000)
            print(f"{name:<8}{times[0]:>14.2f}{times[1]:>10.2f}{times[1] / times[0]:>16.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--against", metavar="REV", help="also time the engine of commit REV")
    args = parser.parse_args()
    rng = random.Random(7)
    size = args.kb * 1024
    texts = {
        "prose": prose(size, rng),
        "JSON": chat_json(size, rng),
        "dense": dense(size, rng),
    }
    inner = max(1, 2048 // args.kb)
    if args.against:
        compare(args.against, texts, args.repeats, inner)
        return
    engine = Redactor()
    baseline = re.compile(r"sk-[A-Za-z0-9_-]{16,}")
    print(f"{'text':<8}{'KB':>6}{'engine MB/s':>14}{'re MB/s':>10}{'engine/re':>11}")
    cases: list[tuple[str, int, Callable[[], object], Callable[[], object]]] = []
    for name, text in texts.items():
        cases.append(
            (
                name,
                len(text),
                lambda t=text: engine.text(t),
                lambda t=text: list(baseline.finditer(t)),
            )
        )
    data = texts["dense"].encode()
    cases.append(
        (
            "bytes",
            len(data),
            lambda: engine.data(data),
            lambda: list(baseline.finditer(texts["dense"])),
        )
    )
    for name, n, run, base in cases:
        run()  # compiled, warmed
        t_engine = cpu_best(run, args.repeats, inner)
        t_base = cpu_best(base, args.repeats, inner)
        mb = n / 1e6
        print(
            f"{name:<8}{n // 1024:>6}{mb / t_engine:>14.1f}{mb / t_base:>10.1f}"
            f"{t_engine / t_base:>11.2f}"
        )


if __name__ == "__main__":
    main()
