"""Where to hide a secret in JSON text so that it stays JSON."""

from __future__ import annotations

import re
from typing import Final

from .shape import PLACEHOLDER

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
