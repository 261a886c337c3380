"""Where the redaction engine need look in a text, told by one pass of Hyperscan.

The engine (:mod:`otel_replay.redaction.finder`) finds credential shapes by their
trigger words, then tries each shape only where its word stands.  In pure
Python the pass that finds the words is a regular expression entered at every
character that is not a letter or a digit: some 1 ms per 64 KB of prose,
most of what text with no secret costs.  With the optional ``fast`` extra
(the ``hyperscan`` package) one Hyperscan pass over the lower-cased text
finds every trigger word, every name written inside a word, and whether the
text may hold an escape, a base64 run, or the shape of a credential searched
for everywhere, at some gigabytes a second.  The engine then does exactly
what it did, only at those places: a place where the pure pass would stop is
always among them (each is a literal, or a necessary condition of what the
engine looks for), and the places that are not are passed over by the
engine's own test, so the result is the same to the character.

Without the package, or where Hyperscan fails (another platform, a
database it will not build), the pure pass runs as before.
"""

from __future__ import annotations

import importlib
import operator
import threading
from collections.abc import Iterable
from typing import Any, Final

#: Whether the text may hold: an escape (``%3D``, ``\\u0022``, ``&quot;``)...
ESCAPE: Final = 1
#: ...a run of 16 base64 characters (in a JSON string or not).
BASE64: Final = 2
#: The first flag of the shapes searched for everywhere, one each (``1 << (SHAPES + i)``).
SHAPES: Final = 2
#: Every flag set: the pure pass says nothing, so everything may be there.
EVERYTHING: Final = -1

#: Necessary conditions, on the lower-cased text (Hyperscan's syntax; a character that
#: is not ASCII reads as ``?``), of what the engine looks for everywhere.
_ESCAPE = (
    r"%[0-9a-f]{2}",
    r"\\u(?:00[0-7][0-9a-f]|00a0|20[0-6][0-9a-f])",
    r"&(?:#[0-9]{1,7}|#x[0-9a-f]{1,6}|[a-z]{2,6});",
)
_BASE64 = r"[a-z0-9+/_\-]{16}"

#: Hyperscan's ids: the words first (their index), then these.
_FLAG_IDS: Final = 1 << 20


def _literal(word: str) -> str:
    """``word`` as a Hyperscan literal (every byte escaped: no character means more)."""
    return "".join(f"\\x{b:02x}" for b in word.encode("ascii"))


class Hits:
    """What one pass found: the words (each with where it was found) and the flags."""

    __slots__ = ("at", "flags", "ids")

    def __init__(self, flags: int, ids: list[int], at: list[int]) -> None:
        #: The words found, by index, in the order Hyperscan reported them (where they
        #: end), and where each was found (where it starts, less its ``back``); no flags.
        self.ids = ids
        self.at = at
        self.flags = flags


class Prefilter:
    """One Hyperscan database of ``words`` and of the flags' conditions.

    ``words``: literals, each occurrence of ``(word, before, back)`` reported
    ``back`` characters before where the word starts, only where ``before``
    (a class of one character, or "") matches the character before it.  (A
    class costs the database's build: it is given where it spares many
    reports, to short words.)
    ``shapes``: one necessary condition per shape searched for everywhere, or
    None where it has none and always runs.
    """

    def __init__(self, words: Iterable[tuple[str, str, int]], shapes: Iterable[str | None]) -> None:
        # Imported here, when the engine first scans: an optional package, untyped.
        hyperscan: Any = importlib.import_module("hyperscan")
        self._hs = hyperscan
        self.words = tuple(words)
        expressions = [before + _literal(w) for w, before, _ in self.words]
        ids = list(range(len(self.words)))
        flags = [0] * len(self.words)
        conditions = [(ESCAPE, e) for e in _ESCAPE]
        conditions.append((BASE64, _BASE64))
        #: The flags always set: those of shapes with no condition.
        self.always = 0
        for i, condition in enumerate(shapes):
            if condition is None:
                self.always |= 1 << (SHAPES + i)
            else:
                conditions.append((1 << (SHAPES + i), condition))
        for flag, condition in conditions:
            expressions.append(condition)
            ids.append(_FLAG_IDS | flag)
            flags.append(hyperscan.HS_FLAG_SINGLEMATCH)
        self._db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        self._db.compile(expressions=[e.encode("ascii") for e in expressions], ids=ids, flags=flags)
        #: Per id, how far before where a match ends it is reported (a flag's: nothing).
        self._lengths = {i: len(w) + back for i, (w, _, back) in enumerate(self.words)}
        self._lengths.update((i, 0) for i in ids[len(self.words) :])
        self._local = threading.local()
        #: Scans Hyperscan failed (the pure pass ran instead).
        self.failures = 0
        #: What a scan that found nothing says.
        self._nothing = Hits(self.always, [], [])

    def scan(self, lower: str) -> Hits | None:
        """The words and flags of ``lower`` (None if Hyperscan failed: the caller
        searches as without it)."""
        data = lower.encode("ascii", "replace")  # one byte a character: offsets kept
        found: list[int] = []
        try:
            scratch = self._local.scratch
        except AttributeError:  # one per thread: a scratch serves one scan at a time
            scratch = None
        try:
            if scratch is None:
                scratch = self._local.scratch = self._hs.Scratch(self._db)
            self._db.scan(data, match_event_handler=_seen, context=found, scratch=scratch)
        except Exception:  # a failing library never fails the scrub: the pure pass runs
            self.failures += 1
            return None
        if not found:
            return self._nothing  # (most text; never changed by the caller)
        if len(found) == 2 and found[0] >= _FLAG_IDS:  # one flag alone (an id: base64)
            return Hits(self.always | (found[0] ^ _FLAG_IDS), [], [])
        # Text dense with words has thousands: told apart in C (slices, maps), not in a
        # loop of Python's.
        ids = found[0::2]
        at = list(map(operator.sub, found[1::2], map(self._lengths.__getitem__, ids)))
        flags = self.always
        if max(ids) >= _FLAG_IDS:
            # The flags' reports taken out of the words' (each reported once): a text
            # whose only report is a flag (an id of 16 letters and digits: a base64 run)
            # has no words to visit.
            for i in [i for i in set(ids) if i >= _FLAG_IDS]:
                flags |= i ^ _FLAG_IDS
                k = ids.index(i)
                del ids[k], at[k]
        return Hits(flags, ids, at)


def _seen(i: int, _start: int, end: int, _flags: int, found: list[int]) -> None:
    """Hyperscan's report of a match: its id and where it ends, kept in turn."""
    found.append(i)
    found.append(end)


#: Made on first use (None: Hyperscan is not installed or fails here).
_Key = tuple[tuple[tuple[str, str, int], ...], tuple[str | None, ...]]
_made: dict[_Key, Prefilter | None] = {}
_lock = threading.Lock()


def prefilter(
    words: Iterable[tuple[str, str, int]], shapes: Iterable[str | None]
) -> Prefilter | None:
    """The prefilter of ``words`` and ``shapes``, or None where Hyperscan is missing or
    fails to build it (the pure pass is then the engine's)."""
    key: _Key = (tuple(words), tuple(shapes))
    with _lock:
        if key not in _made:
            try:
                _made[key] = Prefilter(*key)
            except Exception:  # ImportError, or a database this platform cannot build
                _made[key] = None
        return _made[key]
