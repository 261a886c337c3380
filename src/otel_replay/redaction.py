"""One redaction engine: secrets never reach an attribute, a file or a blob.

Every string capture writes and every attribute, event and status of every
span our processor or exporters see goes through the one :class:`Redactor`:

* by key: a mapping key, dataclass or model field, attribute or header named
  like a credential has its whole value replaced (header names use a wider
  net; see :mod:`otel_replay.secret_patterns`);
* by value: credential shapes inside any text (provider keys, JWTs,
  ``Bearer``, passwords in URLs, query and connection strings, ``"api_key":
  "..."`` in JSON, Python, YAML, INI or env text, ``--password x`` on a
  command line) are replaced where they stand, so the text still reads;
  bytes and text in UTF-16 are read as such, text escaped once or twice
  (``%2522``, ``&amp;quot;``) is read decoded, and a base64 value or run
  (in prose, YAML or a JSON string) or a hex run (32 digits or more) whose
  decoding is text holding a secret is hidden whole;
* by a user hook ``(path, value) -> value``, and, when asked, personal data
  (e-mail addresses, phone numbers).

A hidden value becomes the stable placeholder ``[REDACTED]`` (the same for
every secret: it says nothing about what it replaced), and its path is
recorded (``otel_replay.redacted``) so that replay knows a value was hidden
rather than empty.  Redaction is idempotent, and replay scrubs what the live
app sends with the same engine before comparing it with the recording, so a
scrubbed recording still replays.

Configure with :func:`configure_redaction` (or make one with
:func:`redactor_from_settings` and :func:`install_redactor` it), the
``ReplaySpanProcessor`` arguments, or the environment: ``OTEL_REPLAY_REDACT_KEYS`` /
``OTEL_REPLAY_REDACT_PATTERNS`` (comma-separated regular expressions) and
``OTEL_REPLAY_REDACT_PERSONAL_DATA=true``.
"""

from __future__ import annotations

import bisect
import dataclasses
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from . import attributes as A
from . import settings
from .limits import PLAIN_DEPTH
from .redaction_prefilter import BASE64, ESCAPE, EVERYTHING, SHAPES
from .redaction_prefilter import Hits as _Hits
from .redaction_prefilter import Prefilter as _Prefilter
from .redaction_prefilter import prefilter as _prefilter
from .secret_patterns import (
    FIELD_KEYS,
    HEADER_KEYS,
    INSIDE_WORDS,
    PERSONAL_DATA_PATTERNS,
    VALUE_PATTERNS,
    Shape,
)
from .secret_patterns import literal_trie as _trie

PLACEHOLDER: Final = A.REDACTED_VALUE

Hook = Callable[[str, Any], Any]
_Name = tuple[bool, str | None, bool]

#: A mapping under a key named like this holds HTTP headers (header names use a wider net).
_HEADERS_KEY = re.compile(r"headers?$", re.IGNORECASE)


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
        starts_of = {t[:i] for t in words for i in range(1, len(t) + 1)}
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
                elif rest in starts_of:
                    places.append((k, frozenset(t[len(rest)] for t in words if t.startswith(rest))))
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
        # Base64 runs in a JSON string (a quick search for '"').
        runs = [m.start() + 1 for m in _QUOTED_BASE64.finditer(text)] if maybe & BASE64 else []
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


#: Texts up to this length are remembered with their scrubbed form (names, ids, short
#: values repeat from span to span).
_MEMO_CHARS: Final = 256
_MEMO_SIZE: Final = 8192
#: Characters of JSON text of values found to hide nothing, remembered at most.
_CLEAN_CHARS: Final = 8 * 1024 * 1024


#: The end of a JSON member's name before its value: ``"pin":`` (``\\"pin\\":`` in JSON
#: text inside a JSON string), looked for just before a hidden value.
_MEMBER_END = re.compile(r'(\\*)"[ \t]*:[ \t]*\Z')
#: How far back a member's name is looked for, and how far a hidden array or object is
#: followed to its end.
_MEMBER_LOOKBACK: Final = 8
_MAX_JSON_VALUE: Final = 65_536


def _json_member_value(text: str, start: int, end: int) -> tuple[int, int, str]:
    """Where to hide a secret found at ``text[start:end]``, and with what, so that JSON
    stays JSON.

    A secret-named member's value that is no JSON string (``"pin": 1234``, ``"otp":
    true``, ``"password": [1, 2]``) is matched by shapes that end at white space or a
    quote: they took the ``,`` or ``}`` after it, and a bare placeholder is no JSON
    value.  Such a value is hidden whole as the string ``"[REDACTED]"`` (escaped as its
    name's quotes are), its delimiters kept.  Anything else is hidden as it was found.
    """
    first = text[start : start + 1]
    if first in ('"', "\\", "'"):
        return start, end, PLACEHOLDER
    # Most secrets stand after no member's name: a look for the ":" it would end with
    # spares the search (text dense with secrets has one a line).
    lookback = max(0, start - _MEMBER_LOOKBACK)
    if not text[lookback:start].rstrip(" \t").endswith(":"):
        return start, end, PLACEHOLDER
    member = _MEMBER_END.search(text, lookback, start)
    if member is None:
        return start, end, PLACEHOLDER
    if first in "[{":
        end = _json_end(text, start, end)
    else:
        while end > start and text[end - 1] in ",}] \t\r\n":
            end -= 1
    quote = member.group(1) + '"'
    return start, end, quote + PLACEHOLDER + quote


def _json_end(text: str, start: int, end: int) -> int:
    """The end of the JSON array or object opening at ``start`` (strings skipped), or
    ``end`` when it does not close within the bound."""
    depth, inside, escaped = 0, False, False
    for i in range(start, min(len(text), start + _MAX_JSON_VALUE)):
        c = text[i]
        if inside:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                inside = False
        elif c == '"':
            inside = True
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return end


class Redactor:
    """Scrubs values by key, by pattern and by hook; reports the paths it hid."""

    def __init__(
        self,
        keys: Iterable[str] = (),
        patterns: Iterable[str] = (),
        hook: Hook | None = None,
        *,
        personal_data: bool = False,
        prefilter: bool = True,
    ) -> None:
        """``prefilter``: find where to look with one pass of Hyperscan where the ``fast``
        extra is installed (see :mod:`otel_replay.redaction_prefilter`); off, or without
        it, the pure-Python pass finds the same."""
        keys = list(keys)
        self._key_re = re.compile("|".join(f"(?:{k})" for k in (*FIELD_KEYS, *keys)), re.I)
        self._header_re = re.compile(
            "|".join(f"(?:{k})" for k in (*HEADER_KEYS, *FIELD_KEYS, *keys)), re.I
        )
        shapes = [*VALUE_PATTERNS, *(Shape((), p) for p in patterns)]
        if personal_data:
            shapes += PERSONAL_DATA_PATTERNS
        self._shapes = _Shapes(shapes, INSIDE_WORDS, prefiltered=prefilter)
        self._hook = hook
        self.personal_data = personal_data
        self._keys: dict[str, bool] = {}
        self._headers: dict[str, bool] = {}
        #: Per mapping key, as a field and as a header name: (secret?, the key with its
        #: secrets hidden or None, holds headers?).  Keys repeat endlessly: judged once.
        self._names: tuple[dict[str, _Name], dict[str, _Name]] = ({}, {})
        self._memo: dict[str, str] = {}
        self._clean: set[str] = set()
        self._clean_chars = 0

    # --- names ---------------------------------------------------------------------

    def is_secret_key(self, key: str) -> bool:
        """True when a field named ``key`` holds a secret."""
        return _verdict(self._keys, self._key_re, key)

    def is_secret_header(self, name: str) -> bool:
        """True when an HTTP header named ``name`` holds a secret."""
        return _verdict(self._headers, self._header_re, name)

    # --- text ----------------------------------------------------------------------

    def text(self, text: str) -> str:
        """``text`` with every credential shape in it replaced (the same object if none)."""
        if len(text) > _MEMO_CHARS:
            return self._text(text)
        memo = self._memo
        out = memo.get(text)
        if out is None:
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            out = memo[text] = self._text(text)
        return text if out == text else out

    #: Decode escapes more than once (``%2522``, ``&amp;quot;``) and base64 runs anywhere
    #: (in prose, a YAML value), not only in JSON strings: what the engine finds beyond
    #: its frozen reference (off only to compare with it; see the differential test).
    _deeper = True
    #: Hide a secret-named JSON member's value that is no JSON string as a JSON string,
    #: its delimiters kept (off only to compare with the frozen reference, which broke
    #: such JSON).
    _json_members = True

    def _text(self, text: str) -> str:
        if "\x00" in text:  # maybe UTF-16 bytes read as Latin-1
            text = self._wide(text)
        spans = self._hidden(text)
        if not spans:
            return text
        pieces: list[str] = []
        done = 0
        start, end = spans[0]
        for s, e in [*spans[1:], (len(text) + 1, 0)]:
            if s < end:  # overlapping secrets are hidden as one
                end = max(end, e)
                continue
            if text[start:end] != PLACEHOLDER:  # else hidden before
                placeholder = PLACEHOLDER
                if self._json_members:
                    start, end, placeholder = _json_member_value(text, start, end)
                if start >= done:
                    pieces += (text[done:start], placeholder)
                    done = end
            start, end = s, e
        if not pieces:
            return text
        pieces.append(text[done:])
        return "".join(pieces)

    def _hidden(self, text: str) -> list[tuple[int, int]]:
        """Where the secrets of ``text`` stand, in order (overlaps left to the caller)."""
        if len(text) >= _BASE64_MIN and _BASE64_WHOLE.fullmatch(text) is not None:
            decoded = _base64_decode(text)  # the whole value is base64 (lines and all)
            if decoded is not None and _is_text(decoded) and self.data(decoded) is not decoded:
                return [(0, len(text))]
        spans, runs, maybe = self._shapes.find(text)
        if maybe & ESCAPE and _has_escape(text):
            spans += self._unescaped(text)
        spans.sort()
        hexed: list[tuple[int, int]] = []
        if self._deeper and len(text) >= _BASE64_MIN:
            found = _runs_of(text, _BASE64_BYTES, _RUN_BYTES) if maybe & BASE64 else []
            if found != []:  # (a hex run is a base64 run too: none, no hex either)
                more = _base64_runs(text, found)  # in prose too, not only in JSON strings
                if more:
                    runs = sorted({*runs, *more})
                if len(text) >= _HEX_MIN:
                    hexed = [(s, e) for s, e in _hex_runs(text) if self._hex_secret(text[s:e])]
        if runs:
            spans += self._encoded(text, runs, spans)
            spans.sort()
        if hexed:
            spans += hexed
            spans.sort()
        return spans

    def _hex_secret(self, run: str) -> bool:
        """Whether the hex run ``run`` (of an even length) spells text holding a secret."""
        data = bytes.fromhex(run)
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError:
            return False  # a digest, an id: random bytes, not text
        if not decoded.translate(_LINE_BREAKS).isprintable():
            return False
        return self.data(data) is not data

    def _unescaped(self, text: str, depth: int = 3) -> list[tuple[int, int]]:
        """Where secrets stand in ``text`` read with its escapes decoded (``%3D`` as ``=``,
        ``\\u003d`` as ``=``, ``&quot;`` as ``"``): a URL-encoded token after ``%20`` or a
        name before ``%3D`` is found there, and its escaped span hidden.  Text escaped
        twice or more (``%2522``, ``&amp;quot;``, ``\\\\u0022`` in JSON text in JSON) is
        decoded again, up to ``depth`` times."""
        spans: list[tuple[int, int]] = []
        deeper = self._deeper and depth > 1
        for escape in (_ESCAPE, _ESCAPE_IN_JSON) if deeper and "\\\\" in text else (_ESCAPE,):
            plain, marks, shifts = _unescape(text, escape)
            found, _, maybe = self._shapes.find(plain)
            if deeper and maybe & ESCAPE and _has_escape(plain):
                found += self._unescaped(plain, depth - 1)
            for s, e in found:
                if e <= s:
                    continue
                # Escapes wholly before a place shift it: a secret starting at an escape
                # starts where that escape does, one ending at an escape ends after it.
                i = bisect.bisect_left(marks, s)
                j = bisect.bisect_right(marks, e - 1)
                spans.append((s + (shifts[i - 1] if i else 0), e + (shifts[j - 1] if j else 0)))
        return spans

    def _wide(self, text: str) -> str:
        """``text`` (bytes as Latin-1) scrubbed as UTF-16 where it looks like UTF-16."""
        try:
            data = text.encode("latin-1")
        except UnicodeEncodeError:
            return text
        found = _utf16(data)
        if found is None:
            return text
        codec, start = found
        end = start + (len(data) - start) // 2 * 2
        # surrogatepass: any pair of bytes decodes and encodes back to itself.
        wide = data[start:end].decode(codec, "surrogatepass")
        clean = self._text(wide)
        if clean is wide:
            return text
        return (data[:start] + clean.encode(codec, "surrogatepass") + data[end:]).decode("latin-1")

    def _encoded(
        self, text: str, places: list[int], spans: list[tuple[int, int]]
    ) -> list[tuple[int, int]]:
        """The base64 runs around ``places`` whose decoding holds a secret: hidden whole
        (``spans``, in order, are hidden already)."""
        hidden: list[tuple[int, int]] = []
        seen = -1
        i = 0
        for at in places:
            while i < len(spans) and spans[i][1] <= at:
                i += 1
            if at < seen or (i < len(spans) and spans[i][0] <= at):
                continue  # in a run already decoded, or hidden already
            start, end = _base64_run(text, at)
            seen = end
            decoded = _base64_decode(text[start:end])
            # A secret is written in text: binary (random letters decoded) is not scanned.
            if decoded is not None and _is_text(decoded) and self.data(decoded) is not decoded:
                hidden.append((start, end))
        return hidden

    def data(self, data: bytes) -> bytes:
        """``data`` with every credential shape in it replaced, other bytes kept exactly."""
        # Latin-1 maps each byte to one character and back: non-UTF-8 bytes survive.
        text = data.decode("latin-1")
        out = self.text(text)
        return data if out is text else out.encode("latin-1")

    # --- values --------------------------------------------------------------------

    @property
    def hooked(self) -> bool:
        """Whether a user hook sees every value (it may see each path only as a whole)."""
        return self._hook is not None

    def known_clean(self, json_text: str) -> bool:
        """Whether the plain JSON value spelled ``json_text`` was scrubbed and hid nothing.

        A conversation sends its earlier messages again with every call: each
        is walked once, not once per call.  Never with a hook (it may answer
        differently each time, and is owed every value).
        """
        return json_text in self._clean

    def remember_clean(self, json_text: str) -> None:
        """Note that the plain JSON value spelled ``json_text`` hides nothing (see above)."""
        if self._hook is not None:
            return
        if self._clean_chars + len(json_text) > _CLEAN_CHARS:
            self._clean.clear()
            self._clean_chars = 0
        self._clean.add(json_text)
        self._clean_chars += len(json_text)

    def scrub(self, value: Any, path: str, hidden: list[str]) -> Any:
        """``value`` with secrets replaced; appends each hidden path to ``hidden``.

        Mappings, lists and tuples, dataclasses, pydantic models and named
        tuples are walked (a changed object is a copy; one that cannot be
        copied is hidden whole); strings and bytes are searched.
        """
        return self._scrub(value, _Path((path,)), hidden, False)

    def scrub_json(self, value: Any, path: str, hidden: list[str]) -> tuple[Any, bool]:
        """:meth:`scrub`, and whether ``value`` is plain JSON in the sense of
        :func:`~otel_replay.payload.codec.is_plain_json` (False also where unsure): one walk
        for both, on the capture hot path."""
        stack = _Path((path,))
        return self._scrub(value, stack, hidden, False), stack.plain

    def headers(self, headers: Mapping[str, Any], path: str, hidden: list[str]) -> Any:
        """HTTP ``headers`` (name -> value) with secret ones replaced."""
        return self._scrub(headers, _Path((path,)), hidden, True)

    def _scrub(self, value: Any, path: _Path, hidden: list[str], headers: bool) -> Any:
        # The path is a stack of parts (the root, then keys and indexes) spelled only
        # when something is hidden: most values hide nothing, and spelling paths for
        # them all is waste.
        if self._hook is not None:
            hooked = self._hook(_spelled(path), value)
            if hooked is not value:
                hidden.append(_spelled(path))
                path.plain = False  # not walked: unknown
                return hooked
        t = type(value)
        if t is str:
            out = self.text(value)
            if out is not value:
                hidden.append(_spelled(path))
            return out
        if t is bytes:
            path.plain = False
            data = self.data(value)
            if data is not value:
                hidden.append(_spelled(path))
            return data
        if t is int or t is float or t is bool or value is None:
            return value
        if t is dict:
            return self._mapping(value, path, hidden, headers)
        if t is list or t is tuple:
            return self._sequence(value, path, hidden, headers)
        path.plain = False
        return self._object(value, path, hidden)

    def _sequence(
        self, value: list[Any] | tuple[Any, ...], path: _Path, hidden: list[str], headers: bool
    ) -> Any:
        """A list's or tuple's items scrubbed; a changed one is a copy."""
        if type(value) is tuple or (len(path) > PLAIN_DEPTH and value):
            path.plain = False  # a tuple, or deeper than a payload's JSON may go
        hooked = self._hook is not None
        memo = self._memo
        changed: list[Any] | None = None
        for i, v in enumerate(value):
            tv = type(v)
            # The common items inline, without the walk's dispatch (a hook sees them all).
            if not hooked and (tv is int or tv is float or tv is bool or v is None):
                continue
            new: Any
            if not hooked and tv is str:
                new = memo.get(v)  # self.text(v), its memo read here: the commonest case
                new = self.text(v) if new is None else v if new == v else new
                if new is not v:
                    path.append(i)
                    hidden.append(_spelled(path))
                    path.pop()
            else:
                path.append(i)
                if not hooked and tv is dict:
                    new = self._mapping(v, path, hidden, headers)
                else:
                    new = self._scrub(v, path, hidden, headers)
                path.pop()
            if new is not v:
                if changed is None:
                    changed = list(value)
                changed[i] = new
        return value if changed is None else type(value)(changed)

    def _mapping(
        self,
        value: dict[Any, Any],
        path: _Path,
        hidden: list[str],
        headers: bool,
        *,
        fields: bool = False,
    ) -> dict[Any, Any]:
        """A mapping's values scrubbed, and its keys (text written too: a URL, a header
        line) unless they are an object's ``fields``; a changed mapping is a copy."""
        if len(path) > PLAIN_DEPTH and value:
            path.plain = False  # deeper than a payload's JSON may go
        names = self._names[headers]
        hooked = self._hook is not None
        memo = self._memo
        out: dict[Any, Any] | None = None
        renamed: dict[Any, str] | None = None
        for k, v in value.items():
            if type(k) is str:
                known = names.get(k)
                secret, shown, holds_headers = known or self._name(k, headers)
                name = k
                if shown is not None and not fields:
                    name = shown
                    renamed = renamed or {}
                    renamed[k] = name
                    hidden.append(f"{_spelled(path)}.{name}")
            else:
                secret, name, holds_headers = False, str(k), False
                path.plain = False
            tv = type(v)
            if secret and v is not None:
                new: Any = v if v == PLACEHOLDER else PLACEHOLDER
                if new is not v:
                    hidden.append(f"{_spelled(path)}.{name}")
            elif not hooked and (tv is int or tv is float or tv is bool or v is None):
                continue
            elif not hooked and tv is str:  # the common value, without the walk's dispatch
                new = memo.get(v)  # self.text(v), its memo read here
                new = self.text(v) if new is None else v if new == v else new
                if new is not v:
                    hidden.append(f"{_spelled(path)}.{name}")
            else:
                path.append(name)
                if not hooked and tv is dict:
                    new = self._mapping(v, path, hidden, holds_headers)
                elif not hooked and tv is list:
                    new = self._sequence(v, path, hidden, holds_headers)
                else:
                    new = self._scrub(v, path, hidden, holds_headers)
                path.pop()
            if new is not v:
                if out is None:
                    out = dict(value)
                out[k] = new
        if renamed is not None:
            out = {renamed.get(k, k): v for k, v in (value if out is None else out).items()}
        return value if out is None else out

    def _name(self, key: str, header: bool) -> _Name:
        """How a mapping key is judged (see ``_names``)."""
        secret = self.is_secret_header(key) if header else self.is_secret_key(key)
        shown = self.text(key)
        found = (secret, None if shown is key else shown, _holds_headers(key))
        if len(key) <= _MEMO_CHARS:  # a long key (a text used as a key) is judged each time
            names = self._names[header]
            if len(names) > _MEMO_SIZE:
                names.clear()
            names[key] = found
        return found

    def _object(self, value: Any, path: _Path, hidden: list[str]) -> Any:
        """Dataclasses, pydantic models and named tuples: their fields, by name."""
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = [f.name for f in dataclasses.fields(value) if f.init]
            copy: Callable[[dict[str, Any]], Any] = lambda c: dataclasses.replace(value, **c)  # noqa: E731
        elif hasattr(type(value), "model_fields") and callable(getattr(value, "model_copy", None)):
            names = list(type(value).model_fields)
            copy = lambda c: value.model_copy(update=c)  # noqa: E731
        elif isinstance(value, tuple) and hasattr(value, "_fields"):
            names = list(value._fields)
            copy = lambda c: value._replace(**c)  # type: ignore[attr-defined]  # noqa: E731
        else:
            return value
        fields = {name: getattr(value, name, None) for name in names}
        before = len(hidden)
        clean = self._mapping(fields, path, hidden, False, fields=True)
        if clean is fields:
            return value
        changes = {k: v for k, v in clean.items() if v is not fields[k]}
        try:
            return copy(changes)
        except Exception:  # a class that refuses the copy is hidden whole
            del hidden[before:]
            hidden.append(_spelled(path))
            return PLACEHOLDER


class _Path(list[Any]):
    """The walk's path stack: ``_Path([root])``, then keys and indexes pushed and popped."""

    #: Whether everything walked so far was plain JSON (set on the instance when not).
    plain = True


def _spelled(path: list[Any]) -> str:
    """A path stack as text: ``root.key[2].key``."""
    return str(path[0]) + "".join(f"[{p}]" if type(p) is int else f".{p}" for p in path[1:])


def _holds_headers(key: str) -> bool:
    """A mapping under ``key`` holds HTTP headers (``headers``, ``extra_headers``)."""
    return _HEADERS_KEY.search(key) is not None


def _verdict(cache: dict[str, bool], names: re.Pattern[str], name: str) -> bool:
    # Names repeat endlessly (attribute names, kwarg names): remember the verdict of
    # each, but for long ones (a text used as a key), which would fill memory.
    verdict = cache.get(name)
    if verdict is None:
        verdict = names.search(name) is not None
        if len(name) <= _MEMO_CHARS:
            if len(cache) > _MEMO_SIZE:
                cache.clear()
            cache[name] = verdict
    return verdict


#: A base64 run shorter than this hides no credential worth decoding.
_BASE64_MIN: Final = 16
#: What a base64 run is made of (standard and URL-safe alphabets).
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_BASE64_WHOLE = re.compile(r"[A-Za-z0-9+/_-]+(?:\r?\n[A-Za-z0-9+/_-]+)*={0,2}\s*")
#: A base64 run anywhere: where it starts, after a character not its own.
_BASE64_RUN = re.compile(r"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{" + str(_BASE64_MIN) + "}")
_QUOTED_BASE64 = re.compile(r'"[A-Za-z0-9+/_-]{' + str(_BASE64_MIN) + "}")
_BASE64_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
)


#: Each byte as ``a`` if it is a base64 character, else a space (see ``_base64_runs``).
_BASE64_BYTES: Final = bytes(97 if chr(b) in _BASE64_CHARS else 32 for b in range(256))
_RUN_BYTES: Final = b"a" * _BASE64_MIN


def _base64_runs(text: str, found: list[tuple[int, int]] | None) -> list[int]:
    """Where the base64 runs long enough to decode start in ``text``, of those mixing upper
    and lower case (base64 of text always does; AWS_SECRET_ACCESS_KEY, a hex digest or
    a lower-case token already hidden do not, and are not decoded).

    ``found``: what ``_runs_of`` found of them (None: the text is not ASCII; search it).
    Its bytes translated (base64 characters to ``a``) and searched for a literal: a
    fraction of what a regular expression costs, and most text holds no run at all.
    """
    spans = found
    if spans is None:
        places = [m.start() for m in _BASE64_RUN.finditer(text)]
        spans = [(at, _base64_run(text, at)[1]) for at in places]
    return [s for s, e in spans if not (run := text[s:e]).islower() and not run.isupper()]


def _runs_of(text: str, table: bytes, least: bytes) -> list[tuple[int, int]] | None:
    """Where the runs of the characters ``table`` marks (as ``a``), ``least`` long or more,
    stand in ``text``: its bytes translated and searched for a literal.  None where the text
    is not ASCII and holds one (the bytes' offsets are not the text's: the caller searches
    the text itself)."""
    plain = text.isascii()
    data = text.encode("ascii" if plain else "utf-8", "surrogatepass").translate(table)
    at = data.find(least)
    if at < 0:
        return []
    if not plain:
        return None
    spans = []
    while at >= 0:
        end = data.find(b" ", at)
        end = len(data) if end < 0 else end
        spans.append((at, end))
        at = data.find(least, end)
    return spans


def _base64_run(text: str, at: int) -> tuple[int, int]:
    """Where the base64 run holding ``text[at]`` starts and ends."""
    start = at
    while start > 0 and text[start - 1] in _BASE64_CHARS:  # where a run is first found,
        start -= 1  # it starts after a character not its own: no step back
    m = _BASE64.match(text, at)
    return start, m.end() if m is not None else at


def _is_text(data: bytes) -> bool:
    """Whether decoded base64 is text (ASCII or UTF-8: "café", "✓"), not binary."""
    if data.isascii():
        return True
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _base64_decode(run: str) -> bytes | None:
    """``run`` decoded (standard or URL-safe, padding optional), or None if it is not base64."""
    import binascii  # lazy: only base64 text that may hide a key needs it

    if len(run) < _BASE64_MIN:
        return None
    body = "".join(run.split()).rstrip("=").replace("-", "+").replace("_", "/")
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        return binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


#: A hex run shorter than this hides no credential worth decoding (16 bytes of text).
_HEX_MIN: Final = 32
#: Each byte as ``a`` if it is a hex digit, else a space (see ``_hex_runs``).
_HEX_BYTES: Final = bytes(97 if chr(b) in "0123456789abcdefABCDEF" else 32 for b in range(256))
_HEX_RUN_BYTES: Final = b"a" * _HEX_MIN
_HEX_RUN = re.compile(r"(?<![0-9A-Fa-f])[0-9A-Fa-f]{" + str(_HEX_MIN) + ",}")
#: Line breaks and tabs, taken out before asking whether decoded text is printable.
_LINE_BREAKS: Final = str.maketrans("", "", "\r\n\t")


def _hex_runs(text: str) -> list[tuple[int, int]]:
    """Where the hex runs long enough to decode stand in ``text``, of an even length (hex
    of text; ``0x`` and an odd digit out are something else): found as base64 runs are,
    by a byte translation and a literal search."""
    spans = _runs_of(text, _HEX_BYTES, _HEX_RUN_BYTES)
    if spans is None:
        spans = [m.span() for m in _HEX_RUN.finditer(text)]
    return [(s, e) for s, e in spans if (e - s) % 2 == 0]


#: An escape a character is written as in URLs (``%3D``), JSON text (``\\u003d``) and
#: HTML (``&quot;``, ``&#34;``, ``&#x22;``).
_ESCAPE = re.compile(
    r"%[0-9A-Fa-f]{2}|\\u(?:00[0-7][0-9A-Fa-f]|00[aA]0|20[0-6][0-9A-Fa-f])"
    r"|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,6});"
)
#: Those, and ``\\\\`` (a backslash in JSON text): JSON text in JSON, read once.
_ESCAPE_IN_JSON = re.compile(r"\\\\|" + _ESCAPE.pattern)
#: The HTML entities of the characters around a credential.
_ENTITIES: Final = {
    "quot": '"',
    "apos": "'",
    "amp": "&",
    "lt": "<",
    "gt": ">",
    "equals": "=",
    "colon": ":",
    "sol": "/",
    "quest": "?",
    "num": "#",
    "percnt": "%",
    "nbsp": " ",
    "newline": "\n",
    "tab": "\t",
}


#: Each kind of escape alone: a literal first (searched for fast).
_ESCAPES: Final = (
    ("%", re.compile(r"%[0-9A-Fa-f]{2}")),
    ("\\u", re.compile(r"\\u(?:00[0-7][0-9A-Fa-f]|00[aA]0|20[0-6][0-9A-Fa-f])")),
    ("&", re.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,6});")),
)


def _has_escape(text: str) -> bool:
    """Whether ``text`` holds an escape (most text holds none of their first characters)."""
    return any(first in text and rx.search(text) is not None for first, rx in _ESCAPES)


def _unescape(text: str, escapes: re.Pattern[str] = _ESCAPE) -> tuple[str, list[int], list[int]]:
    """``text`` with its ``escapes`` decoded, where each escape decoded stands in it, and
    how far the text after each has moved (``shifts[i]``: the characters the escapes up
    to the i-th took beyond the one each became)."""
    pieces: list[str] = []
    marks: list[int] = []
    shifts: list[int] = []
    done = shift = 0
    for m in escapes.finditer(text):
        escape = m.group()
        head = escape[0]
        if head == "%":
            ch = chr(int(escape[1:], 16))
        elif escape == "\\\\":
            ch = "\\"
        elif head == "\\":
            ch = chr(int(escape[2:], 16))
        elif escape[1] == "#":
            code = int(escape[3:-1], 16) if escape[2] in "xX" else int(escape[2:-1])
            if code > 0x10FFFF:
                continue
            ch = chr(code)
        else:
            found = _ENTITIES.get(escape[1:-1].lower())
            if found is None:
                continue
            ch = found
        start = m.start()
        pieces += (text[done:start], ch)
        marks.append(start - shift)
        shift += len(escape) - 1
        shifts.append(shift)
        done = m.end()
    pieces.append(text[done:])
    return "".join(pieces), marks, shifts


def _utf16(data: bytes) -> tuple[str, int] | None:
    """The UTF-16 codec ``data`` is written in and where its text starts, or None."""
    if data[:2] == b"\xff\xfe":
        return "utf-16-le", 2
    if data[:2] == b"\xfe\xff":
        return "utf-16-be", 2
    if len(data) < 16:
        return None
    sample = data[:4096]
    # ASCII text in UTF-16: every other byte is zero.
    odd, even, half = sample[1::2].count(0), sample[0::2].count(0), len(sample) // 2
    if odd * 4 >= half and odd > 2 * even:
        return "utf-16-le", 0
    if even * 4 >= half and even > 2 * odd:
        return "utf-16-be", 0
    return None


def _hidden_span(m: re.Match[str], secret: tuple[int, ...]) -> tuple[int, int]:
    """Where the secret of a match stands: the first of its ``secret`` groups (named ``v``,
    ``v2``...) that matched, else all of it."""
    for group in secret:
        if m.start(group) >= 0:
            return m.span(group)
    return m.span()


def redactor_from_settings(
    keys: Iterable[str] = (),
    patterns: Iterable[str] = (),
    hook: Hook | None = None,
    personal_data: bool | None = None,
) -> Redactor:
    """A new :class:`Redactor`: the ``OTEL_REPLAY_REDACT_*`` settings plus these.

    ``keys`` and ``patterns`` are added to those of the environment; ``personal_data``
    None takes ``OTEL_REPLAY_REDACT_PERSONAL_DATA``.  Nothing is installed: pass it
    where it is to be used (``RedactionProcessor(redactor=...)``), or make it the
    process's with :func:`install_redactor`.
    """
    env = settings.current()
    return Redactor(
        [*env.redact_keys, *keys],
        [*env.redact_patterns, *patterns],
        hook,
        personal_data=env.redact_personal_data if personal_data is None else personal_data,
    )


# Made on first use: compiling the patterns costs more than importing the OTel SDK.
_active: Redactor | None = None


def configure_redaction(
    keys: Iterable[str] = (),
    patterns: Iterable[str] = (),
    hook: Hook | None = None,
    *,
    personal_data: bool | None = None,
) -> Redactor:
    """Add key patterns, value patterns, a hook ``(path, value) -> value``, personal data.

    ``keys`` and ``patterns`` are regular expressions added to the defaults
    (:mod:`otel_replay.secret_patterns`); a value pattern with a group named
    ``v`` hides only that group.  The hook returns the value unchanged (the
    same object) to keep it, or a replacement to hide it.  ``personal_data``
    also hides e-mail addresses and phone numbers.  Settings from the
    environment are kept.
    """
    made = redactor_from_settings(keys, patterns, hook, personal_data)
    install_redactor(made)
    return made


def install_redactor(r: Redactor | None) -> Redactor | None:
    """Make ``r`` the process's redactor; return the one it replaces.

    One redactor is shared on purpose: the capture helpers hide secrets before
    a value becomes an attribute, the exporters hide them in what they write or
    resend, and replay hides them in what the live app sends before comparing it
    with the recording, so all must hide the same.  ``None`` goes back to the one
    made from the environment on next use.  Reversible: installing the returned
    value puts back what was in force (None: nothing had been made yet).
    """
    global _active
    previous, _active = _active, r
    return previous


def redactor() -> Redactor:
    """The redactor every capture path and exporter uses."""
    global _active
    active = _active
    if active is None:
        active = _active = redactor_from_settings()
    return active
