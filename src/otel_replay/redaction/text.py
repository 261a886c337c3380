"""Secrets hidden in one text: the shapes found, escapes and encodings read through."""

from __future__ import annotations

import bisect
import re
from typing import Final

from .encodings import (
    _BASE64_BYTES,
    _BASE64_MIN,
    _BASE64_WHOLE,
    _ESCAPE,
    _ESCAPE_IN_JSON,
    _HEX_MIN,
    _LINE_BREAKS,
    _RUN_BYTES,
    _base64_decode,
    _base64_run,
    _base64_runs,
    _has_escape,
    _hex_runs,
    _is_text,
    _runs_of,
    _unescape,
    _utf16,
)
from .finder import _Shapes
from .json_members import _json_member_value
from .prefilter import BASE64, ESCAPE
from .shape import PLACEHOLDER

#: Texts up to this length are remembered with their scrubbed form (names, ids, short
#: values repeat from span to span).
_MEMO_CHARS: Final = 256
_MEMO_SIZE: Final = 8192
#: Characters of JSON text of values found to hide nothing, remembered at most (and of
#: long texts found to hide nothing).
_CLEAN_CHARS: Final = 8 * 1024 * 1024
#: A text longer than this is not remembered (it would crowd out the others).
_LONG_CHARS: Final = _CLEAN_CHARS // 16


#: A run of UTF-16 text of Latin-1 characters (bytes read as Latin-1), long enough to hold
#: a secret's name or shape, per byte order.
_UTF16_RUNS: Final = (
    ("utf-16-le", re.compile("(?:[\t\n\r\x20-\x7e\xa0-\xff]\x00){8,}")),
    ("utf-16-be", re.compile("(?:\x00[\t\n\r\x20-\x7e\xa0-\xff]){8,}")),
)


class TextRedactor:
    """The text half of :class:`~otel_replay.redaction.Redactor`: ``text`` and ``data``."""

    #: The shapes searched for (made by the redactor).
    _shapes: _Shapes
    #: Texts up to ``_MEMO_CHARS`` long, each with its scrubbed form.
    _memo: dict[str, str]
    #: Longer texts found to hide nothing (a conversation sent again with every call, on
    #: every span), and the characters they hold (at most ``_CLEAN_CHARS``).
    _long_clean: set[str]
    _long_chars: int

    def text(self, text: str) -> str:
        """``text`` with every credential shape in it replaced (the same object if none)."""
        if len(text) > _MEMO_CHARS:
            # Hashing a text costs a fraction of scanning it: a long text seen clean
            # before is not scanned again.
            long_clean = self._long_clean
            if text in long_clean:
                return text
            scanned = self._text(text)
            if scanned is text and len(text) <= _LONG_CHARS:
                if self._long_chars + len(text) > _CLEAN_CHARS:
                    long_clean.clear()
                    self._long_chars = 0
                long_clean.add(text)
                self._long_chars += len(text)
            return scanned
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
            if self._deeper:
                text = self._wide_runs(text)
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
        if not maybe and not spans and not runs:
            return spans  # the prefilter found nothing that may be there (most text)
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

    def _wide_runs(self, text: str) -> str:
        """``text`` (bytes as Latin-1) with each run of UTF-16 text inside it scrubbed,
        wherever it starts: a UTF-16 file in a multipart upload, after a binary header,
        at an odd offset.  (:meth:`_wide` reads the whole as UTF-16 only when it starts
        so or mostly is.)  Read in both byte orders, one after the other: a run of one
        read a byte early or late looks like a run of the other, a character longer."""
        for codec, runs in _UTF16_RUNS:
            pieces: list[str] = []
            done = 0
            for run in runs.finditer(text):
                start, end = run.span()
                wide = text[start:end].encode("latin-1").decode(codec)
                clean = self._text(wide)
                if clean is not wide:
                    pieces += (text[done:start], clean.encode(codec).decode("latin-1"))
                    done = end
            if pieces:
                pieces.append(text[done:])
                text = "".join(pieces)
        return text

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
