"""Text written otherwise: base64 and hex runs, escapes (URL, JSON, HTML), UTF-16.

Where the engine looks for secrets that an encoding hides: each run or escape is
found here, decoded, and its decoding scanned by the engine.
"""

from __future__ import annotations

import binascii
import re
from typing import Final

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
    # Valid UTF-8 decodes and encodes back to itself; any byte of a sequence that is not
    # is dropped (told without an exception: most decoded runs are binary).
    return len(data.decode("utf-8", "ignore").encode("utf-8")) == len(data)


def _base64_decode(run: str) -> bytes | None:
    """``run`` decoded (standard or URL-safe, padding optional), or None if it is not base64."""
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
