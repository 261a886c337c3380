"""The redaction engine's text scan as it stood before it was made fast: a frozen reference.

``tests/test_redaction_differential.py`` checks that the engine finds exactly what
this finds, for every input drawn.  Only ``Redactor.text`` and ``Redactor.data`` (and
what they call) are kept; the patterns are the package's own.  Do not edit: it is
the meaning the fast engine keeps.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final

from otel_replay.redaction import PLACEHOLDER
from otel_replay.secret_patterns import INSIDE_WORDS, PERSONAL_DATA_PATTERNS, VALUE_PATTERNS, Shape


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

    def __init__(self, shapes: Iterable[Shape], inside: Iterable[str] = ()) -> None:
        self._everywhere: list[_Compiled] = []
        words: dict[str, list[_Compiled]] = {}
        for shape in shapes:
            compiled = _Compiled(shape)
            if shape.triggers:
                for trigger in shape.triggers:
                    words.setdefault(trigger, []).append(compiled)
            else:
                compiled.compile()
                self._everywhere.append(compiled)
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
        self._inner = {
            word: tuple(
                k
                for k in range(1, len(word))
                if word[k - 1].isalnum()
                and (
                    word[k:] in starts_of
                    or any(word[k:i] in words for i in range(k + 1, len(word) + 1))
                )
            )
            for word in words
        }
        self._any = re.compile(_trie(words)) if words else None
        # The pass is entered only at a character not a letter or digit (a quick test in C
        # everywhere else), and takes only that character: the next place is tried too.
        # There it looks ahead for one trie: of the triggers starting with a letter or
        # digit, and of the rest of those starting with such a character (the one the
        # pass entered on); which of them stand there is told from the longest found.
        alnum = {w for w in words if w[0].isalnum()}
        tails = {w[1:] for w in words if not w[0].isalnum()}
        starts = {w[0] for w in words if not w[0].isalnum()}
        self._after: dict[tuple[str, str], tuple[str | None, str | None]] = {}
        for x in {*alnum, *tails}:
            here = _longest(x, alnum)
            for c in (*starts, ""):
                before = _longest(c + x, words) if c else None
                if here is not None or before is not None:
                    self._after[c, x] = (here, before)
        # A secret's name inside a word (userPassword, clientsecret): each of ``inside``
        # looked for alone (a search for a literal: fast), kept where a word goes on
        # before it.
        self._inside = [re.compile(re.escape(w)) for w in inside]
        # After \n in JSON text (compiled when first needed).
        self._escaped = _Compiled(Shape((), r"\\(?:[ntr]|u[0-9a-f]{4})(?=(" + _trie(alnum) + "))"))
        self._scan = re.compile(r"[^a-z0-9](?=(?P<w>" + _trie({*alnum, *tails}) + "))")

    def find(self, text: str) -> tuple[list[tuple[int, int]], list[int]]:
        """Where each match hides its secret (overlaps are left to the caller), and where
        base64 runs in JSON strings start."""
        spans: list[tuple[int, int]] = []
        any_ = self._any
        if any_ is not None:
            lower = " " + text.lower()  # the space: a word starts at 0 too
            if len(lower) != len(text) + 1:  # a character lowered to two: keep the places
                lower = " " + "".join(c if len(c.lower()) != 1 else c.lower() for c in text)
            visit, after = self._visit, self._after
            for m in self._scan.finditer(lower):
                at = m.start("w")
                x = m.group("w")
                here, before = after.get((lower[at - 1], x)) or after.get(("", x), _NEITHER)
                if here is not None:
                    visit(text, lower, at, here, spans)
                if before is not None:
                    visit(text, lower, at - 1, before, spans)
            if "\\" in text:  # JSON text: a word starts after \n and \u00e9 too
                for m in self._escaped.compile().finditer(lower):
                    visit(text, lower, m.end(), m.group(1), spans)
            for rx in self._inside:  # userPassword, clientsecret: a name inside a word
                for m in rx.finditer(lower):
                    at = m.start()
                    if lower[at - 1] in _SMALL:
                        found = any_.match(lower, at)
                        if found is not None:
                            visit(text, lower, at, found.group(), spans)
        # Base64 runs in a JSON string (a quick search for '"').
        runs = [m.start() + 1 for m in _QUOTED_BASE64.finditer(text)]
        for shape in self._everywhere:
            spans += (_hidden_span(m, shape.secret) for m in shape.compile().finditer(text))
        return spans, runs

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
        for shape in self._by_word[found]:
            if shape.back < at:
                m = (shape.rx or shape.compile()).match(text, at - 1 - shape.back)
                if m is not None:
                    spans.append(_hidden_span(m, shape.secret))
        any_ = self._any
        assert any_ is not None
        for k in self._inner[found]:
            other = any_.match(lower, at + k)
            if other is not None:
                self._visit(text, lower, at + k, other.group(), spans)


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


def _longest(text: str, words: Iterable[str]) -> str | None:
    """The longest of ``words`` ``text`` starts with."""
    return next((text[:i] for i in range(len(text), 0, -1) if text[:i] in words), None)


_NEITHER: Final = (None, None)
#: Before a name inside a word: a letter or a digit (lower-cased).
_SMALL: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _trie(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words``, common prefixes merged (fast in ``re``)."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alternatives = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:{body})?" if "" in node else body

    return emit(root)


class ReferenceRedactor:
    """``Redactor.text`` and ``Redactor.data`` as they were (no memo)."""

    def __init__(self, patterns: Iterable[str] = (), *, personal_data: bool = False) -> None:
        shapes = [*VALUE_PATTERNS, *(Shape((), p) for p in patterns)]
        if personal_data:
            shapes += PERSONAL_DATA_PATTERNS
        self._shapes = _Shapes(shapes, INSIDE_WORDS)

    def text(self, text: str) -> str:
        out = self._text(text)
        return text if out == text else out

    def _text(self, text: str) -> str:
        if "\x00" in text:  # maybe UTF-16 bytes read as Latin-1
            text = self._wide(text)
        if len(text) >= _BASE64_MIN and _BASE64_WHOLE.fullmatch(text) is not None:
            decoded = _base64_decode(text)  # the whole value is base64 (lines and all)
            if decoded is not None and _is_text(decoded) and self.data(decoded) is not decoded:
                return PLACEHOLDER
        spans, runs = self._shapes.find(text)
        spans += self._unescaped(text)
        spans.sort()
        if runs:
            spans += self._encoded(text, runs, spans)
            spans.sort()
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
                pieces += (text[done:start], PLACEHOLDER)
                done = end
            start, end = s, e
        if not pieces:
            return text
        pieces.append(text[done:])
        return "".join(pieces)

    def _unescaped(self, text: str) -> list[tuple[int, int]]:
        """Secrets found in ``text`` with its escapes (``%3D``, ``\\u003d``, ``&quot;``)
        decoded, each as the span of ``text`` it was decoded from."""
        chars: list[str] = []
        where: list[tuple[int, int]] = []  # per decoded character, its span in text
        at = 0
        while at < len(text):
            m = _ESCAPE.match(text, at)
            ch = _decoded(m.group()) if m is not None else None
            if m is None or ch is None:
                chars.append(text[at])
                where.append((at, at + 1))
                at += 1
            else:
                chars.append(ch)
                where.append(m.span())
                at = m.end()
        if len(chars) == len(text):
            return []
        found, _ = self._shapes.find("".join(chars))
        return [(where[s][0], where[e - 1][1]) for s, e in found if e > s]

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


#: A base64 run shorter than this hides no credential worth decoding.
_BASE64_MIN: Final = 16
#: What a base64 run is made of (standard and URL-safe alphabets).
_BASE64 = re.compile(r"[A-Za-z0-9+/_-]*={0,2}")
_BASE64_WHOLE = re.compile(r"[A-Za-z0-9+/_-]+(?:\r?\n[A-Za-z0-9+/_-]+)*={0,2}\s*")
_QUOTED_BASE64 = re.compile(r'"[A-Za-z0-9+/_-]{' + str(_BASE64_MIN) + "}")
_BASE64_CHARS: Final = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
)


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
    import binascii

    if len(run) < _BASE64_MIN:
        return None
    body = "".join(run.split()).rstrip("=").replace("-", "+").replace("_", "/")
    body = body[: len(body) - len(body) % 4] if len(body) % 4 == 1 else body
    try:
        return binascii.a2b_base64(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        return None


_ESCAPE = re.compile(
    r"%[0-9A-Fa-f]{2}|\\u(?:00[0-7][0-9A-Fa-f]|00[aA]0|20[0-6][0-9A-Fa-f])"
    r"|&(?:#[0-9]{1,7}|#[xX][0-9A-Fa-f]{1,6}|[A-Za-z]{2,6});"
)
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


def _decoded(escape: str) -> str | None:
    """The character ``escape`` stands for, or None."""
    if escape.startswith("%"):
        return chr(int(escape[1:], 16))
    if escape.startswith("\\u"):
        return chr(int(escape[2:], 16))
    if escape.startswith("&#x") or escape.startswith("&#X"):
        code = int(escape[3:-1], 16)
    elif escape.startswith("&#"):
        code = int(escape[2:-1])
    else:
        return _ENTITIES.get(escape[1:-1].lower())
    return chr(code) if code <= 0x10FFFF else None


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
