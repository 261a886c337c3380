"""Which credential shapes a native (Hyperscan) pass could run, and what dense text spends on each.

    python benchmarks/bench_native_shapes.py [--kb K] [--repeats R] [--shapes]

Hyperscan has no lookarounds, back-references or groups.  Each shape of the
catalogue (``VALUE_PATTERNS``) is put in one kind, by what running it natively
would need:

* native: Hyperscan compiles it as it is, start of match reported;
* edge guards: its only lookarounds are short ones (at most 6 characters, or
  ``\\b``) before its start or after its end (``(?<![A-Za-z0-9_])``), checked on
  the characters around a match; Hyperscan compiles it without them;
* edge guards, refused: the same, but Hyperscan refuses even that (too large);
* inner lookaround: a lookaround inside the match (a value is not a type name, a
  run of six characters holds a digit): Hyperscan can only run a superset;
* back-reference: an XML element closed by a tag of the same name (``(?P=n)``).

A shape whose secret is one of its groups (``v``, ``v2``...) says so: Hyperscan
reports where a match starts and ends, not where a group does, so Python's
``re`` must still match it to hide the right part.

Then the benchmark's trigger-dense text (``bench_redaction.dense``) is scanned
once with each shape's ``re.match`` recorded; the calls of each kind are run
again alone, timed (CPU time, best of R), against the whole scan of the text.
Printed: per kind, its shapes, the tries and matches a scan makes of them, and
the milliseconds their ``re.match`` calls cost.  ``--shapes``: each shape's
kind too.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser as P  # type: ignore[attr-defined]
from typing import Any

import bench_redaction
import hyperscan

from otel_replay.redaction import Redactor, finder
from otel_replay.redaction.patterns import VALUE_PATTERNS

#: The longest lookaround read as a boundary guard (``(?<=\\u[0-9a-fA-F]{4})``: 6).
GUARD_MAX = 6
_CATEGORIES = {
    C.CATEGORY_DIGIT: r"\d",
    C.CATEGORY_NOT_DIGIT: r"\D",
    C.CATEGORY_SPACE: r"\s",
    C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w",
    C.CATEGORY_NOT_WORD: r"\W",
}


class _Seen:
    """What a shape holds that Hyperscan has not: counted while it is written anew."""

    def __init__(self) -> None:
        self.guards = 0
        self.inner = 0
        self.backref = False
        self.lazy = False


def _char(c: int) -> str:
    return f"\\x{c:02x}" if c < 256 else "\\x3f"  # (none past Latin-1 in the catalogue)


def _in(items: list[tuple[Any, Any]]) -> str:
    negate = bool(items) and items[0][0] is C.NEGATE
    body = []
    for op, av in items:
        if op is C.LITERAL:
            body.append(_char(av))
        elif op is C.RANGE:
            body.append(_char(av[0]) + "-" + _char(av[1]))
        elif op is C.CATEGORY:
            body.append(_CATEGORIES[av])
    return "[" + ("^" if negate else "") + "".join(body) + "]"


def _sequence(items: list[tuple[Any, Any]], seen: _Seen, start: bool, end: bool) -> str:
    """``items`` in Hyperscan's syntax, lookarounds left out (a superset); ``start``,
    ``end``: whether the sequence begins or ends where the match does."""
    out = []
    for i, (op, av) in enumerate(items):
        at_start = start and all(_zero(x) for x in items[:i])
        at_end = end and all(_zero(x) for x in items[i + 1 :])
        out.append(_item(op, av, seen, at_start, at_end))
    return "".join(out)


def _zero(item: tuple[Any, Any]) -> bool:
    return item[0] in (C.ASSERT, C.ASSERT_NOT, C.AT)


def _item(op: Any, av: Any, seen: _Seen, start: bool, end: bool) -> str:
    if op is C.LITERAL:
        return _char(av)
    if op is C.NOT_LITERAL:
        return "[^" + _char(av) + "]"
    if op is C.ANY:
        return "."
    if op is C.IN:
        return _in(av)
    if op is C.SUBPATTERN:
        return "(?:" + _sequence(av[3].data, seen, start, end) + ")"
    if op is C.BRANCH:
        return "(?:" + "|".join(_sequence(b.data, seen, start, end) for b in av[1]) + ")"
    if op in (C.MAX_REPEAT, C.MIN_REPEAT):
        low, high, sub = av
        seen.lazy |= op is C.MIN_REPEAT
        most = "" if high is C.MAXREPEAT else str(high)
        return "(?:" + _sequence(sub.data, seen, False, False) + f"){{{low},{most}}}"
    if op in (C.ASSERT, C.ASSERT_NOT):
        behind, sub = av
        if sub.getwidth()[1] <= GUARD_MAX and (start if behind < 0 else end):
            seen.guards += 1
        else:
            seen.inner += 1
        return ""
    if op is C.AT:
        if av in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
            if start or end:
                seen.guards += 1
            else:
                seen.inner += 1
            return ""
        return {C.AT_END_STRING: r"\z", C.AT_END: "$"}.get(av, "^")
    if op is C.GROUPREF:
        seen.backref = True
        return ".*"
    raise ValueError(f"not written for Hyperscan: {op}")


def _compiles(expression: str, flags: int) -> bool:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[expression.encode("latin-1")], ids=[0], flags=[flags])
    except hyperscan.error:
        return False
    return True


def kind(pattern: str) -> str:
    """What running ``pattern`` natively would need (see the module docstring)."""
    tree = P.parse(pattern)
    seen = _Seen()
    written = _sequence(tree.data, seen, True, True)
    flags = hyperscan.HS_FLAG_SOM_LEFTMOST
    flags |= hyperscan.HS_FLAG_CASELESS if tree.state.flags & re.IGNORECASE else 0
    flags |= hyperscan.HS_FLAG_DOTALL if tree.state.flags & re.DOTALL else 0
    flags |= hyperscan.HS_FLAG_MULTILINE if tree.state.flags & re.MULTILINE else 0
    if not seen.guards and not seen.inner and not seen.backref and _compiles(written, flags):
        found = "native"
    elif seen.backref:
        found = "back-reference"
    elif seen.inner:
        found = "inner lookaround"
    elif not _compiles(written, flags):
        found = "edge guards, refused"
    else:
        found = "edge guards"
    if seen.lazy:
        found += ", lazy"
    if any(name.startswith("v") for name in tree.state.groupdict):
        found += ", secret group"
    return found


#: A recorded call: the shape's kind, its ``match``, the text and where from.
_Call = tuple[str, Callable[..., Any], str, int]


def calls(engine: Redactor, text: str) -> list[_Call]:
    """Each shape's ``re.match`` call one scan of ``text`` makes: its kind, the call, the
    text it matched (``text``, or one read through its escapes) and where from."""
    kinds = {shape.pattern: kind(shape.pattern) for shape in VALUE_PATTERNS}
    made: list[_Call] = []
    ready = finder._Shapes._ready

    def recorded(self: Any, word: str) -> Any:
        plan = ready(self, word)
        tries = []
        for (match, before, secret), shape in zip(plan[0], self._by_word[word], strict=True):

            def call(t: str, at: int, match: Any = match, k: str = kinds[shape.pattern]) -> Any:
                made.append((k, match, t, at))
                return match(t, at)

            tries.append((call, before, secret))
        plan = self._plans[word] = ((*tries,), *plan[1:])  # (each visit's, not the first's)
        return plan

    finder._Shapes._ready = recorded  # type: ignore[method-assign]
    try:
        engine._shapes._plans.clear()
        engine._text(text)
    finally:
        finder._Shapes._ready = ready  # type: ignore[method-assign]
        engine._shapes._plans.clear()
    return made


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kb", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--shapes", action="store_true", help="print each shape's kind")
    args = parser.parse_args()
    shapes: dict[str, list[int]] = {}
    for i, shape in enumerate(VALUE_PATTERNS):
        shapes.setdefault(kind(shape.pattern), []).append(i)
        if args.shapes:
            print(f"{i:4d} {kind(shape.pattern):<45} {', '.join(shape.triggers[:3])}")
    size = args.kb * 1024
    text = bench_redaction.texts(size)["dense"]
    engine = Redactor()
    made = calls(engine, text)

    def best(fn: Callable[[], object]) -> float:
        times = []
        for _ in range(args.repeats):
            start = time.process_time()
            fn()
            times.append(time.process_time() - start)
        return min(times) * 1000

    def scan() -> None:
        engine._long_clean.clear()
        engine._text(text)

    whole = best(scan)
    print(
        f"trigger-dense text, {size // 1024} KB: "
        f"the whole scan {whole:.2f} ms (best of {args.repeats})"
    )
    print(f"{'kind':<45}{'shapes':>7}{'tries':>7}{'matches':>8}{'re.match ms':>12}{'share':>7}")
    for k, members in sorted(shapes.items(), key=lambda kv: -len(kv[1])):
        mine = [(match, t, at) for kk, match, t, at in made if kk == k]
        hits = sum(match(t, at) is not None for match, t, at in mine)

        def rerun(mine: list[tuple[Any, str, int]] = mine) -> None:
            for match, t, at in mine:
                match(t, at)

        ms = best(rerun)
        print(f"{k:<45}{len(members):>7}{len(mine):>7}{hits:>8}{ms:>12.2f}{ms / whole:>7.0%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
