"""Finds credential shapes in text: literal triggers first, each expression only there."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from typing import Final

from .encodings import _QUOTED_BASE64
from .prefilter import BASE64, EVERYTHING, SHAPES
from .prefilter import Hits as _Hits
from .prefilter import Prefilter as _Prefilter
from .prefilter import prefilter as _prefilter
from .shape import Shape
from .shape import literal_trie as _trie


class _Shapes:
    """Finds credential shapes in text: literal triggers first, each expression only there.

    One pass of a trie of every trigger over the lower-cased text finds where
    a shape may start; only those shapes are tried, and only there.  Most
    text holds no trigger, and costs that one pass.  The pass looks for
    triggers where a word starts (after a character not a letter or digit,
    or after ``\\n`` in JSON text): inside words it never enters the trie,
    and that keeps it fast.  The few secret names written inside words
    (``userPassword``, ``clientsecret``) are searched for on their own.
    Every such place is tried, also inside or right after a trigger found,
    and where one trigger's word holds another (``token`` in
    ``accesstoken``) both are: no shape hides another.
    """

    def __init__(
        self, shapes: Iterable[Shape], inside: Iterable[str] = (), *, prefiltered: bool = True
    ) -> None:
        self._everywhere: list[_Compiled] = []
        everywhere: list[Shape] = []
        words: dict[str, list[_Compiled]] = {}
        for shape in shapes:
            compiled = _Compiled(shape)
            if shape.triggers:
                for trigger in shape.triggers:
                    words.setdefault(trigger, []).append(compiled)
            else:
                compiled.compile()
                self._everywhere.append(compiled)
                everywhere.append(shape)
        # The trie finds the longest trigger at a place: it stands for the shorter
        # triggers it starts with too.
        self._by_word = {
            word: tuple(x for i in range(1, len(word) + 1) for x in words.get(word[:i], ()))
            for word in words
        }
        # Where, inside a word of a trigger, another one may start (contained in it, or
        # running on): "token" in "accesstoken".  (After a separator, "key" in
        # "access_key", the pass finds it.)
        # Per proper start of a trigger, the characters that follow it in some trigger
        # (one pass over the triggers: a look per place and trigger costs seconds per
        # finder built, with the hundreds of triggers of the catalogue).
        follows: dict[str, set[str]] = {}
        for t in words:
            for i in range(1, len(t)):
                follows.setdefault(t[:i], set()).add(t[i])
        #: Per word: those places, each with the characters one of them needs right after
        #: the word where no trigger stands whole inside it from there (it must run on
        #: past the word), and the union of those (None: some place needs no look).  A
        #: look at that character spares the trie's match: most such places hold none
        #: ("ey" in "key" starts only "eyj").
        self._inner: dict[str, tuple[frozenset[str] | None, _Inner]] = {}
        for word in words:
            places: list[tuple[int, frozenset[str] | None]] = []
            for k in range(1, len(word)):
                rest = word[k:]
                if not word[k - 1].isalnum():
                    continue
                if any(rest[:i] in words for i in range(1, len(rest) + 1)):
                    places.append((k, None))  # one stands whole inside it
                elif rest in follows:
                    places.append((k, frozenset(follows[rest])))
            inner = tuple(places)
            gate = None
            if all(needed is not None for _, needed in inner):
                gate = frozenset(c for _, needed in inner for c in needed or ())
            self._inner[word] = (gate, inner)
        self._any = re.compile(_trie(words)) if words else None
        #: Per trigger word, its shapes ready to try and the triggers inside it (made when
        #: the word is first found: most never are).  The tuples save the attribute reads
        #: of a visit, which cost as much as a failed match where a trigger stands every
        #: few words.
        self._plans: dict[str, _Plan] = {}
        # The pass is entered only at a character not a letter or digit (a quick test in C
        # everywhere else), and takes only that character: the next place is tried too.
        # There it looks ahead for one trie: of the triggers starting with a letter or
        # digit, and of the rest of those starting with such a character (the one the
        # pass entered on); which of them stand there is told from the longest found.
        alnum = {w for w in words if w[0].isalnum()}
        tails = {w[1:] for w in words if not w[0].isalnum()}
        starts = {w[0] for w in words if not w[0].isalnum()}
        # Per word found: (here, before) after any character, and after those that start
        # a trigger of their own.
        self._after: dict[str, tuple[_Pair, dict[str, _Pair]]] = {}
        for x in {*alnum, *tails}:
            here = _longest(x, alnum)
            self._after[x] = (
                (here, None),
                {
                    c: (here, before)
                    for c in starts
                    if (before := _longest(c + x, words)) is not None or here is not None
                },
            )
        # A secret's name inside a word (userPassword, clientsecret): each of ``inside``
        # looked for alone (a search for a literal: fast), kept where a word goes on
        # before it.
        self._inside = [re.compile(re.escape(w)) for w in inside]
        # After \n in JSON text (compiled when first needed).
        self._escaped = _Compiled(Shape((), r"\\(?:[ntr]|u[0-9a-f]{4})(?=(" + _trie(alnum) + "))"))
        self._scan = re.compile(r"[^a-z0-9](?=(" + _trie({*alnum, *tails}) + "))")
        # What the prefilter finds in one pass, where its package is installed: the places
        # where the pass above visits a word (its character, then a trigger starting with
        # a letter or digit; or a trigger starting with its character), and the names
        # inside words.  (Where the pass stops and visits nothing, the prefilter may not.)
        # (Short words stand inside many words: those only after such a character.  A word
        # that starts with another word is left out: where it stands, so does that one.)
        # Each reported where the pass's character stands: one before a word of a letter
        # or digit, the first of the others.
        others = {w for w in words if not w[0].isalnum()}
        self._words = [
            *((w, "[^a-z0-9]" if len(w) <= 3 else "", 1) for w in _shortest(alnum)),
            *((w, "", 0) for w in _shortest(others)),
        ]
        self._inside_words = [(w, "[a-z0-9]", 0) for w in inside]  # (where a word goes on)
        self._conditions = tuple(shape.prefilter for shape in everywhere)
        self._prefilter: _Prefilter | None = None
        self._asked = False  # whether the prefilter was made (or found missing) yet
        #: Whether the prefilter is used where its package is installed (off: the pure
        #: pass alone; the results are the same).
        self.prefiltered = prefiltered

    def find(self, text: str) -> tuple[list[tuple[int, int]], list[int], int]:
        """Where each match hides its secret (overlaps are left to the caller), where
        base64 runs in JSON strings start, and what else the text may hold (the
        prefilter's flags: all set where it did not run)."""
        spans: list[tuple[int, int]] = []
        any_ = self._any
        maybe = EVERYTHING
        if any_ is not None:
            lower = " " + text.lower()  # the space: a word starts at 0 too
            if len(lower) != len(text) + 1:  # a character lowered to two: keep the places
                lower = " " + "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
            prefilter = self._prefilter if self._asked else self._made()
            hits = None if prefilter is None else prefilter.scan(lower)
            places: Iterable[re.Match[str]]
            inside: Iterable[int]
            if hits is None:  # the pure pass
                places = self._scan.finditer(lower)
                inside = (m.start() for rx in self._inside for m in rx.finditer(lower))
            else:  # the same places, where the prefilter found a word (most text: none)
                maybe = hits.flags
                if not hits.ids and "\\" not in text:
                    if not maybe:
                        return spans, [], 0  # nothing anywhere (most text): said at once
                    return self._everywhere_found(text, spans, maybe)  # no word to visit
                places = self._places(lower, hits) if hits.ids else ()
                n = len(self._words)
                last = n + len(self._inside)
                inside = [at for i, at in zip(hits.ids, hits.at, strict=True) if n <= i < last]
            visit, after = self._visit, self._after
            for m in places:
                at = m.start(1)
                anywhere, by_start = after[m.group(1)]
                here, before = by_start.get(lower[at - 1], anywhere)
                if here is not None:
                    visit(text, lower, at, here, spans)
                if before is not None:
                    visit(text, lower, at - 1, before, spans)
            if "\\" in text:  # JSON text: a word starts after \n and \u00e9 too
                for m in self._escaped.compile().finditer(lower):
                    visit(text, lower, m.end(), m.group(1), spans)
            for at in inside:  # userPassword, clientsecret: a name inside a word
                if lower[at - 1] in _SMALL:
                    found = any_.match(lower, at)
                    if found is not None:
                        visit(text, lower, at, found.group(), spans)
        return self._everywhere_found(text, spans, maybe)

    def _everywhere_found(
        self, text: str, spans: list[tuple[int, int]], maybe: int
    ) -> tuple[list[tuple[int, int]], list[int], int]:
        """``find``'s answer, with base64 runs in JSON strings and the shapes searched for
        everywhere added to the ``spans`` found by their words (where ``maybe`` says they
        may be)."""
        # Base64 runs in a JSON string: none without a quote (an id, a URL), told without
        # starting the expression (a span's short texts mostly come here).
        runs = (
            [m.start() + 1 for m in _QUOTED_BASE64.finditer(text)]
            if maybe & BASE64 and '"' in text
            else []
        )
        if maybe >> SHAPES:  # (no shape flagged: most text; the loop not run)
            for i, shape in enumerate(self._everywhere):
                if maybe >> (SHAPES + i) & 1:
                    spans += (_hidden_span(m, shape.secret) for m in shape.compile().finditer(text))
        return spans, runs, maybe

    def _made(self) -> _Prefilter | None:
        """The prefilter, made when first asked for (None: the pure pass, where it is
        turned off, its package missing or failing, or a word empty)."""
        made = None
        if self.prefiltered and all(w for w, _, _ in self._words):
            made = _prefilter([*self._words, *self._inside_words], self._conditions)
        self._prefilter = made
        self._asked = True
        return made

    def _places(self, lower: str, hits: _Hits) -> Iterator[re.Match[str]]:
        """The pure pass's matches, tried only where the prefilter found a word."""
        n = len(self._words)
        places = sorted({at for i, at in zip(hits.ids, hits.at, strict=True) if i < n})
        match = self._scan.match
        for at in places:
            m = match(lower, at)
            if m is not None:
                yield m

    def _visit(
        self,
        text: str,
        lower: str,
        at: int,
        found: str,
        spans: list[tuple[int, int]],
    ) -> None:
        """Tries the shapes of trigger ``found`` at ``lower[at]`` (``text[at - 1]``), then
        the triggers inside it."""
        tries, gate, inner = self._plans.get(found) or self._ready(found)
        for match, before, secret in tries:
            if before <= at:
                m = match(text, at - before)
                if m is not None:
                    span = m.span()
                    for group in secret:  # where the secret stands: as _hidden_span says
                        if (found_at := m.span(group))[0] >= 0:
                            span = found_at
                            break
                    spans.append(span)
        if inner:
            end = at + len(found)
            after = lower[end : end + 1]
            if gate is not None and after not in gate:
                return
            any_ = self._any
            assert any_ is not None
            for k, needed in inner:
                if needed is not None and after not in needed:
                    continue
                other = any_.match(lower, at + k)
                if other is not None:
                    self._visit(text, lower, at + k, other.group(), spans)

    def _ready(self, word: str) -> _Plan:
        """What ``_visit`` does where trigger ``word`` stands: its shapes, compiled (each
        with how far before the word's place it is matched from), and the places of the
        triggers inside the word."""
        tries = tuple(
            (shape.compile().match, shape.back + 1, shape.secret) for shape in self._by_word[word]
        )
        plan = self._plans[word] = (tries, *self._inner[word])
        return plan


class _Compiled:
    """A shape's expression, compiled when first tried: most of them never are."""

    __slots__ = ("back", "pattern", "rx", "secret")

    def __init__(self, shape: Shape) -> None:
        self.pattern = shape.pattern
        self.back = shape.back
        self.rx: re.Pattern[str] | None = None
        #: The groups where the secret stands (``v``, ``v2``...).
        self.secret: tuple[int, ...] = ()

    def compile(self) -> re.Pattern[str]:
        rx = self.rx
        if rx is None:
            rx = re.compile(self.pattern)
            self.secret = tuple(i for name, i in rx.groupindex.items() if name.startswith("v"))
            self.rx = rx
        return rx


def _shortest(words: set[str]) -> list[str]:
    """Those of ``words`` no other of them starts, in order."""
    return sorted(w for w in words if not any(w[:i] in words for i in range(1, len(w))))


def _longest(text: str, words: Iterable[str]) -> str | None:
    """The longest of ``words`` ``text`` starts with."""
    return next((text[:i] for i in range(len(text), 0, -1) if text[:i] in words), None)


#: Where triggers may start inside a trigger's word, each with the characters one needs
#: right after the word (None: any, one stands whole inside it).
_Inner = tuple[tuple[int, frozenset[str] | None], ...]
#: What ``_visit`` does where a trigger stands: its shapes, each as its ``match``, how far
#: before the place it matches from (its ``back`` and the character before the word),
#: its secret groups; then the union of the characters the word's inner places need
#: after it (None: some place needs none), and those places.
_Plan = tuple[
    tuple[tuple[Callable[[str, int], "re.Match[str] | None"], int, tuple[int, ...]], ...],
    frozenset[str] | None,
    _Inner,
]
#: The trigger standing at a place, and the one starting a character before (or None).
_Pair = tuple[str | None, str | None]
#: Before a name inside a word: a letter or a digit (lower-cased).
_SMALL: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _hidden_span(m: re.Match[str], secret: tuple[int, ...]) -> tuple[int, int]:
    """Where the secret of a match stands: the first of its ``secret`` groups (named ``v``,
    ``v2``...) that matched, else all of it."""
    for group in secret:
        if m.start(group) >= 0:
            return m.span(group)
    return m.span()
