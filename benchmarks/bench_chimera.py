"""Whether Hyperscan's Chimera (Hyperscan with PCRE) could run the credential shapes for the engine.

    python benchmarks/bench_chimera.py [--kb K] [--repeats R] [--census] [--ucp]

Chimera (the ``hyperscan`` package's ``Database(chimera=True)``) takes full
PCRE syntax: lookarounds, back-references, and the groups where a secret
stands (``CH_MODE_GROUPS``).  Each shape of the catalogue (``VALUE_PATTERNS``)
is given to it as ``re`` wrote it, ``\\Z`` written ``\\z`` (PCRE's end of the
text); ``(?P<v>...)`` and ``(?P=n)`` are PCRE's syntax too.

Chimera's answers are not the engine's: per expression, PCRE searches from
where its last match ended (leftmost, non-overlapping, as ``re.finditer``),
where the engine matches each shape at every place its trigger word stands,
also inside an earlier match, and only there.  So the benchmark asks the
differential question on the output: the engine's ``find`` is made to answer
Chimera's spans (on ASCII text; the rest as before) and the hidden text
compared with the engine's own, on the benchmark's trigger-dense text, on the
repository's ASCII text files cut in 4,000-character pieces, and on the public
scanner's catalogue, three secrets drawn per rule in six wrappings.

Printed: how many shapes compile (``--census``: each alone in a child process
with a time limit, ASCII or, ``--ucp``, UTF-8 with Unicode classes as ``re``
reads ``\\w`` and ``\\s`` in text), the database's build time, the CPU
milliseconds on the dense text (median of R interleaved rounds) of the
engine's ``find``, of Chimera's scan handing the secrets' spans to Python, of
its scan with a callback that only counts, and of the scan with each shape
led by a look-ahead for its trigger words; then the texts whose hidden text
differs, a few of them shown.
"""

from __future__ import annotations

import argparse
import multiprocessing
import random
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT)]  # (the catalogue's secrets are drawn as the tests draw them)

import bench_redaction  # noqa: E402
import hyperscan  # noqa: E402
from tests.unit.redaction.test_secret_catalogue import draw_secret, rules  # noqa: E402

from otel_replay.redaction import Redactor  # noqa: E402
from otel_replay.redaction.patterns import VALUE_PATTERNS  # noqa: E402
from otel_replay.redaction.shape import Shape  # noqa: E402

#: ``\Z`` not itself escaped (``\\Z`` is a backslash and a Z).
_END = re.compile(r"(?<!\\)((?:\\\\)*)\\Z")


def expression(shape: Shape, lookahead: bool = False) -> bytes:
    """``shape``'s expression in PCRE's syntax; ``lookahead``: led by a look-ahead for
    its trigger words (where it matches from its word: ``back`` 0)."""
    pattern = _END.sub(r"\1\\z", shape.pattern)
    if lookahead and shape.triggers and not shape.back:
        words = "|".join(re.escape(t) for t in shape.triggers)
        pattern = f"(?=(?i:{words}))(?:{pattern})"
    return pattern.encode("ascii")


class Chimera:
    """One Chimera database of ``shapes``: their secrets' spans in one scan."""

    def __init__(self, shapes: Iterable[Shape], flags: int = 0, lookahead: bool = False) -> None:
        shapes = list(shapes)
        #: Per shape, the groups where its secret stands (``v``, ``v2``...), as the engine.
        self.secret = [
            tuple(i for name, i in re.compile(s.pattern).groupindex.items() if name[0] == "v")
            for s in shapes
        ]
        start = time.process_time()
        self.db = hyperscan.Database(chimera=True, mode=hyperscan.CH_MODE_GROUPS)
        self.db.compile(
            expressions=[expression(s, lookahead) for s in shapes],
            ids=list(range(len(shapes))),
            flags=[flags] * len(shapes),
        )
        self.build_seconds = time.process_time() - start
        self.scratch = hyperscan.Scratch(self.db)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Where the matches of ASCII ``text`` hide their secrets, in order."""
        found: list[tuple[int, int]] = []
        secret = self.secret

        def seen(i: int, start: int, end: int, _f: int, groups: list[Any], _c: object) -> None:
            for g in secret[i]:
                if g < len(groups) and groups[g][0]:  # (flags, from, to): active
                    found.append((groups[g][1], groups[g][2]))
                    return
            found.append((start, end))

        self.db.scan(text.encode("ascii"), match_event_handler=seen, scratch=self.scratch)
        found.sort()
        return found

    def count(self, text: str) -> int:
        """How many matches ``text`` holds, told to a callback that only counts."""
        n = [0]

        def seen(*_: object) -> None:
            n[0] += 1

        self.db.scan(text.encode("ascii"), match_event_handler=seen, scratch=self.scratch)
        return n[0]


def _compile_one(i: int, flags: int) -> None:
    db = hyperscan.Database(chimera=True, mode=hyperscan.CH_MODE_GROUPS)
    db.compile(expressions=[expression(VALUE_PATTERNS[i])], ids=[0], flags=[flags])


def census(flags: int, limit: float) -> tuple[list[int], list[int], list[int], float]:
    """Each shape compiled alone in a child process: those that compile, those refused,
    those still compiling after ``limit`` seconds, and the CPU seconds of those that did."""
    ok: list[int] = []
    refused: list[int] = []
    slow: list[int] = []
    seconds = 0.0
    context = multiprocessing.get_context("fork")
    for i in range(len(VALUE_PATTERNS)):
        before = time.process_time(), _children()
        child = context.Process(target=_compile_one, args=(i, flags))
        child.start()
        child.join(limit)
        if child.is_alive():
            child.kill()
            child.join()
            slow.append(i)
            continue
        (ok if child.exitcode == 0 else refused).append(i)
        seconds += _children() - before[1]
    return ok, refused, slow, seconds


def _children() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def corpus() -> list[str]:
    """The repository's ASCII text files in 4,000-character pieces, and the catalogue's
    secrets (three a rule) in six wrappings."""
    texts: list[str] = []
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    for name in listed.stdout.split():
        if name.endswith((".py", ".md", ".json", ".txt", ".toml", ".yaml", ".yml")):
            try:
                text = (ROOT / name).read_text()
            except (OSError, UnicodeDecodeError):
                continue
            if text.isascii():
                texts += (text[i : i + 4000] for i in range(0, len(text), 4000))
    rng = random.Random(1)
    for rule in rules():
        name = rule["id"].replace("-", "_")
        for _ in range(3):
            s, whole = draw_secret(rule, rng)
            for text in (whole, s, f"{name.upper()}={s}", f"{name}: {s}", f"the key {s}.",
                         f'password: "{s}" token={s}'):  # fmt: skip
                if text.isascii():
                    texts.append(text)
    return texts


def hidden(engine: Redactor, text: str, chimera: Chimera | None) -> str:
    """``text`` as ``engine`` hides it, its shapes' spans Chimera's where ``chimera`` is
    given (on ASCII text)."""
    engine._long_clean.clear()
    if chimera is None:
        return engine._text(text)
    find = engine._shapes.find

    def answered(t: str) -> tuple[list[tuple[int, int]], list[int], int]:
        spans, runs, maybe = find(t)
        return (chimera.spans(t) if t.isascii() else spans), runs, maybe

    engine._shapes.find = answered  # type: ignore[method-assign]
    try:
        return engine._text(text)
    finally:
        del engine._shapes.find


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--census", action="store_true", help="compile each shape alone")
    parser.add_argument("--ucp", action="store_true", help="census: UTF-8, Unicode classes")
    parser.add_argument("--limit", type=float, default=20.0, help="census: seconds a shape")
    args = parser.parse_args()
    if args.census:
        flags = hyperscan.CH_FLAG_UTF8 | hyperscan.CH_FLAG_UCP if args.ucp else 0
        ok, refused, slow, seconds = census(flags, args.limit)
        print(
            f"{'UTF-8, Unicode classes' if args.ucp else 'ASCII'}: of {len(VALUE_PATTERNS)} "
            f"shapes {len(ok)} compile ({seconds:.1f} s CPU), {len(refused)} refused "
            f"{refused}, {len(slow)} still compiling after {args.limit:.0f} s {slow}"
        )
    size = args.kb * 1024
    text = bench_redaction.texts(size)["dense"]
    engine = Redactor()
    chimera = Chimera(VALUE_PATTERNS)
    ahead = Chimera(VALUE_PATTERNS, lookahead=True)
    print(
        f"all {len(VALUE_PATTERNS)} shapes in one database: "
        f"built in {chimera.build_seconds:.1f} s CPU"
    )
    fns: dict[str, Callable[[], object]] = {
        "engine's find": lambda: engine._shapes.find(text),
        "Chimera, spans to Python": lambda: chimera.spans(text),
        "Chimera, counted only": lambda: chimera.count(text),
        "Chimera, trigger look-ahead, spans": lambda: ahead.spans(text),
    }
    engine._shapes.find(text)  # (the prefilter and the shapes compiled first)
    times = bench_redaction.interleaved(list(fns.values()), args.repeats, 1, median=True)
    print(
        f"trigger-dense text, {size // 1024} KB: {len(engine._shapes.find(text)[0])} spans "
        f"by the engine, {chimera.count(text)} matches by Chimera; "
        f"CPU ms, median of {args.repeats} interleaved rounds:"
    )
    for name, seconds in zip(fns, times, strict=True):
        print(f"  {name:<38}{seconds * 1000:8.2f}")
    texts = [text, *corpus()]
    differ = [t for t in texts if hidden(engine, t, None) != hidden(engine, t, chimera)]
    print(f"hidden text differs on {len(differ)} of {len(texts)} texts")
    for t in differ[:6]:
        mine, theirs = hidden(engine, t, None), hidden(engine, t, chimera)
        for a, b in zip(mine.splitlines(), theirs.splitlines(), strict=False):
            if a != b:  # (the line from a little before where they part)
                at = max(
                    0, next(i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y) - 50
                )
                print(f"  engine : {a[at : at + 100]}\n  Chimera: {b[at : at + 100]}")
                break
    return 0


if __name__ == "__main__":
    sys.exit(main())
