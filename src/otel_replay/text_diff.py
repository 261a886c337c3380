"""Two texts shown by where they differ: the changed spans of a long line, with context.

Cutting two long values at a fixed width shows the same prefix twice when
they differ further on.  Here the texts are aligned instead: their common
start and end are trimmed, and what lies between is aligned word by word (on
words, spaces and punctuation): by the fewest words removed and added when the
change is small (Myers' search, however often the words recur), else by their
longest common runs (:class:`difflib.SequenceMatcher`).  Each change is shown
whole with a little unchanged text either side; what is left out is marked
``…``.  Texts too big to align word by word in good time are shown by their
first and last differing characters (the trim alone).

:func:`inline` writes the changes into one line (``…was [-shipped-]{+lost+}
on Monday…``); :func:`sides` gives each text windowed the same way, for a
``-``/``+`` pair of lines; :func:`pieces` gives the aligned pieces, for a page
that marks the changed words itself.
"""

from __future__ import annotations

import difflib
import functools
import re
from typing import Final

#: Characters of unchanged text shown either side of a change.
CONTEXT: Final = 30
#: A changed piece longer than this is shown by its two ends.
SPAN: Final = 160
#: At most this many changes are written out; the others are counted.
MOST: Final = 8
#: Between their common start and end, texts of more tokens than this (both together)
#: are not aligned word by word: they are shown by their first and last differences.
ALIGN_TOKENS: Final = 10_000
#: At most this many token edits are searched for a shortest edit script, and at most
#: this many steps (edits times tokens): more changed texts are aligned by runs.
EDITS: Final = 200
STEPS: Final = 2_000_000
#: Aligning takes time growing with the pairs of equal tokens the two texts hold: above
#: this many, tokens that recur often only extend a match; when the pairs of the others
#: are still above it, the texts are shown by their first and last differences.
ALIGN_PAIRS: Final = 20_000
#: At most this many characters of a changed word are shown before and after its change.
WORD: Final = 24
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
    # Not past a word's start in a long word (base64, a digest): its change stays in view.
    low, high = max(p - WORD, 0), max(s - WORD, 0)
    while p > low and _word(a[p - 1]) and any(p < len(t) - s and _word(t[p]) for t in (a, b)):
        p -= 1
    while s > high and _word(a[-s]) and any(len(t) - s > p and _word(t[-s - 1]) for t in (a, b)):
        s -= 1
    return p, s


def pieces(a: str, b: str) -> list[Piece]:
    """``a`` and ``b`` as aligned pieces in order: unchanged text, and each change (an old
    and a new text, either may be empty).  Equal texts give one equal piece."""
    return list(_pieces(a, b))


# A client that diverged sends the same request again and again (retries, a loop of its
# own), and each answer diffs it against the same recorded one: the last few pairs are
# kept.  Few, since a request's text may be megabytes.
@functools.lru_cache(maxsize=16)
def _pieces(a: str, b: str) -> tuple[Piece, ...]:
    return tuple(_aligned_pieces(a, b))


def _aligned_pieces(a: str, b: str) -> list[Piece]:
    if a == b:
        return [("equal", a, b)] if a else []
    p, s = _trim(a, b)
    mid_a, mid_b = a[p : len(a) - s], b[p : len(b) - s]
    out: list[Piece] = []
    if p:
        out.append(("equal", a[:p], b[:p]))
    ta, tb = _TOKEN.findall(mid_a), _TOKEN.findall(mid_b)
    # A few edits (the usual case) are found exactly, however often the words recur.
    edits = max(0, min(EDITS, STEPS // max(len(ta) + len(tb), 1)))
    found = _fewest_edits(ta, tb, edits)
    if found is not None:
        out += found
    else:
        out += _aligned(ta, tb, mid_a, mid_b)
    if s:
        out.append(("equal", a[len(a) - s :], b[len(b) - s :]))
    return _joined(out)


def _aligned(ta: list[str], tb: list[str], mid_a: str, mid_b: str) -> list[Piece]:
    """Texts of many changes aligned by their longest common runs of tokens."""
    # Spaces only extend a match.  Where many tokens recur (commas, a repeated phrase)
    # aligning on each pair of them takes seconds: popular tokens then only extend a
    # match too (coarser pieces, in milliseconds).
    popular = _pairs(ta, tb, None) > ALIGN_PAIRS
    if len(ta) + len(tb) > ALIGN_TOKENS or (
        popular and _pairs(ta, tb, len(tb) // 100 + 1) > ALIGN_PAIRS
    ):
        return [("change", mid_a, mid_b)]
    matcher = difflib.SequenceMatcher(str.isspace, ta, tb, autojunk=popular)
    return [
        ("equal" if op == "equal" else "change", "".join(ta[i1:i2]), "".join(tb[j1:j2]))
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
    ]


def _fewest_edits(ta: list[str], tb: list[str], most: int) -> list[Piece] | None:
    """The pieces of the shortest edit script from ``ta`` to ``tb`` (tokens removed and
    added, Myers' O(ND) search), or None when it takes more than ``most`` edits."""
    n, m = len(ta), len(tb)
    v = {1: 0}
    trace: list[dict[int, int]] = []
    for d in range(min(most, n + m) + 1):
        trace.append(dict(v))
        for k in range(-d, d + 1, 2):
            # Down (a token of tb added) from diagonal k+1, or right (a token of ta
            # removed) from k-1: whichever has come further.
            down = k == -d or (k != d and v[k - 1] < v[k + 1])
            x = v[k + 1] if down else v[k - 1] + 1
            y = x - k
            while x < n and y < m and ta[x] == tb[y]:
                x, y = x + 1, y + 1
            v[k] = x
            if x >= n and y >= m:
                return _script(ta, tb, trace)
    return None


def _script(ta: list[str], tb: list[str], trace: list[dict[int, int]]) -> list[Piece]:
    """Walk the search of :func:`_fewest_edits` back from its end into pieces."""
    x, y = len(ta), len(tb)
    steps: list[tuple[str, int, int]] = []  # ("=", "-" or "+", index in ta, index in tb)
    for d in range(len(trace) - 1, -1, -1):
        v = trace[d]
        k = x - y
        down = k == -d or (k != d and v.get(k - 1, -1) < v.get(k + 1, -1))
        pk = k + 1 if down else k - 1
        px = v.get(pk, 0)
        py = px - pk
        while x > px and y > py:
            x, y = x - 1, y - 1
            steps.append(("=", x, y))
        if d > 0:
            if down:
                y -= 1
                steps.append(("+", x, y))
            else:
                x -= 1
                steps.append(("-", x, y))
    steps.reverse()
    out: list[Piece] = []
    for op, i, j in steps:
        kind = "equal" if op == "=" else "change"
        x_tok = ta[i] if op in "=-" else ""
        y_tok = tb[j] if op in "=+" else ""
        if out and out[-1][0] == kind:
            _, px_, py_ = out[-1]
            out[-1] = (kind, px_ + x_tok, py_ + y_tok)
        else:
            out.append((kind, x_tok, y_tok))
    return out


def _pairs(ta: list[str], tb: list[str], most: int | None) -> int:
    """How many pairs of equal tokens ``ta`` and ``tb`` hold, spaces apart, and tokens
    found more than ``most`` times in ``tb`` (when given) apart."""
    counts: dict[str, int] = {}
    for t in tb:
        counts[t] = counts.get(t, 0) + 1
    if most is not None:
        counts = {t: n for t, n in counts.items() if n <= most}
    return sum(counts.get(t, 0) for t in ta if not t.isspace())


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
        return text[:keep] + ELLIPSIS + _tail(text, context)
    if last:
        return text if len(text) <= context else _head(text, context) + ELLIPSIS
    if len(text) <= 2 * context + 1:
        return text
    return _head(text, context) + ELLIPSIS + _tail(text, context)


def _head(text: str, n: int) -> str:
    """The first ``n`` characters of ``text``, ended at a space when one is near."""
    cut = text.rfind(" ", n - n // 3, n)
    return text[: cut if cut > 0 else n]


def _tail(text: str, n: int) -> str:
    """The last ``n`` characters of ``text``, begun after a space when one is near."""
    start = len(text) - n
    cut = text.find(" ", start, start + n // 3)
    return text[cut + 1 if cut >= 0 else start :]


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
