"""Two texts shown by where they differ: the changed spans of a long line, with context.

Cutting two long values at a fixed width shows the same prefix twice when
they differ further on.  Here the texts are aligned instead: their common
start and end are trimmed, what lies between is aligned word by word
(:class:`difflib.SequenceMatcher` on words, spaces and punctuation), and each
change is shown whole with a little unchanged text either side; what is left
out is marked ``…``.  Texts too big to align word by word in good time are
shown by their first and last differing characters (the trim alone).

:func:`inline` writes the changes into one line (``…was [-shipped-]{+lost+}
on Monday…``); :func:`sides` gives each text windowed the same way, for a
``-``/``+`` pair of lines; :func:`pieces` gives the aligned pieces, for a page
that marks the changed words itself.
"""

from __future__ import annotations

import difflib
import re
from typing import Final

#: Characters of unchanged text shown either side of a change.
CONTEXT: Final = 30
#: A changed piece longer than this is shown by its two ends.
SPAN: Final = 160
#: At most this many changes are written out; the others are counted.
MOST: Final = 8
#: Between their common start and end, texts of more words than this (both together)
#: are not aligned word by word: the alignment's time grows with the square of it.
ALIGN_TOKENS: Final = 3000
#: Unchanged text this short between two changes joins them into one.
JOIN: Final = 3
ELLIPSIS: Final = "…"

_TOKEN: Final = re.compile(r"\w+|\s+|[^\w\s]")
_WORD: Final = re.compile(r"\w")

#: One aligned piece: ("equal", text, text), or ("change", old text, new text).
Piece = tuple[str, str, str]


def _word(c: str) -> bool:
    return _WORD.match(c) is not None


def _trim(a: str, b: str) -> tuple[int, int]:
    """The lengths of the common start and end of ``a`` and ``b``, drawn back to word
    boundaries so that a changed word shows whole."""
    most = min(len(a), len(b))
    p = 0
    while p < most and a[p] == b[p]:
        p += 1
    s = 0
    while s < most - p and a[-1 - s] == b[-1 - s]:
        s += 1
    while p > 0 and _word(a[p - 1]) and any(p < len(t) - s and _word(t[p]) for t in (a, b)):
        p -= 1
    while s > 0 and _word(a[-s]) and any(len(t) - s > p and _word(t[-s - 1]) for t in (a, b)):
        s -= 1
    return p, s


def pieces(a: str, b: str) -> list[Piece]:
    """``a`` and ``b`` as aligned pieces in order: unchanged text, and each change (an old
    and a new text, either may be empty).  Equal texts give one equal piece."""
    if a == b:
        return [("equal", a, b)] if a else []
    p, s = _trim(a, b)
    mid_a, mid_b = a[p : len(a) - s], b[p : len(b) - s]
    out: list[Piece] = []
    if p:
        out.append(("equal", a[:p], b[:p]))
    ta, tb = _TOKEN.findall(mid_a), _TOKEN.findall(mid_b)
    if len(ta) + len(tb) > ALIGN_TOKENS:
        out.append(("change", mid_a, mid_b))
    else:
        matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            x, y = "".join(ta[i1:i2]), "".join(tb[j1:j2])
            out.append(("equal" if op == "equal" else "change", x, y))
    if s:
        out.append(("equal", a[len(a) - s :], b[len(b) - s :]))
    return _joined(out)


def _joined(found: list[Piece]) -> list[Piece]:
    """Two changes with only a few unchanged characters between them made one (``[-quick
    brown-]{+slow red+}`` reads better than a change per word)."""
    out: list[Piece] = []
    for n, piece in enumerate(found):
        op, x, y = piece
        between = 0 < n < len(found) - 1 and op == "equal" and len(x) <= JOIN
        if out and out[-1][0] == "change" and (op == "change" or between):
            _, px, py = out[-1]
            out[-1] = ("change", px + x, py + y)
        else:
            out.append(piece)
    return out


def _around(text: str, first: bool, last: bool, context: int, keep: int) -> str:
    """Unchanged text as shown between changes: its ends near a change, ``…`` for the rest
    (and the first ``keep`` characters of the text, which name what it is)."""
    if first and last:
        return _ends(text, 2 * context)
    if first:
        if len(text) <= keep + context + 1:
            return text
        return text[:keep] + ELLIPSIS + text[-context:]
    if last:
        return text if len(text) <= context else text[:context] + ELLIPSIS
    return text if len(text) <= 2 * context + 1 else text[:context] + ELLIPSIS + text[-context:]


def _ends(text: str, limit: int) -> str:
    """``text``, or its two ends with ``…`` between when it is longer than ``limit``."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return text[:half] + ELLIPSIS + text[-half:]


def _shown(
    found: list[Piece], context: int, most: int, keep: int = 0
) -> list[tuple[str, str, str]]:
    """The pieces as shown: unchanged text cut to its context, long changes to their ends,
    the changes after the ``most``-th dropped (the last entry then says how many)."""
    changes = sum(1 for op, _, _ in found if op == "change")
    out: list[tuple[str, str, str]] = []
    seen = 0
    for n, (op, x, y) in enumerate(found):
        if op == "equal":
            last = n == len(found) - 1 or seen == most
            text = _around(x, n == 0, last, context, keep)
            out.append(("equal", text, text))
            continue
        if seen == most:
            more = changes - most
            out.append(("more", f" ({more} more change{'s' if more > 1 else ''})", ""))
            break
        seen += 1
        out.append(("change", _ends(x, SPAN), _ends(y, SPAN)))
    return out


def inline(a: str, b: str, *, context: int = CONTEXT, most: int = MOST) -> str:
    """One line showing each change of ``a`` into ``b`` as ``[-old-]{+new+}`` between a
    little unchanged text (``context`` characters either side), ``…`` for what is left
    out; at most ``most`` changes, the rest counted."""
    out = []
    for op, x, y in _shown(pieces(a, b), context, most):
        if op == "change":
            out.append((f"[-{x}-]" if x else "") + (f"{{+{y}+}}" if y else ""))
        else:
            out.append(x)
    return "".join(out)


def sides(
    a: str, b: str, *, context: int = CONTEXT, most: int = MOST, keep: int = 0
) -> tuple[str, str]:
    """``a`` and ``b`` each cut to the same windows around their changes (as :func:`inline`
    shows them, without the marks): the two lines of a ``-``/``+`` pair.  Their first
    ``keep`` characters are kept when common (a line's indent and key, say)."""
    left, right = [], []
    for op, x, y in _shown(pieces(a, b), context, most, keep):
        left.append(x)
        right.append(y if op != "more" else x)
    return "".join(left), "".join(right)
