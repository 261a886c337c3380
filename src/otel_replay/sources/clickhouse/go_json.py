"""JSON as Go's ``encoding/json`` writes it: how the clickhouseexporter spells a list or a map.

pdata's ``Value.AsString`` writes a list or map attribute with
``json.Marshal(value.AsRaw())``: compact, map keys sorted, strings with
``<``, ``>``, ``&`` and the line separators U+2028/U+2029 escaped as
``\\u00XX``, doubles in JavaScript's shortest form.  The reader tells such a
text from a string attribute that spells the same value otherwise by
writing the value again here.
"""

from __future__ import annotations

import base64
import decimal
import math
from typing import Any, Final

__all__ = ["NotFinite", "Raw", "go_float", "go_json", "go_string"]


class Raw(str):
    """A JSON number's text, which :func:`go_json` writes as it is."""


class NotFinite(ValueError):
    """A NaN or infinite double, which ``encoding/json`` refuses."""


def go_float(f: float) -> str:
    """A double as Go's ``encoding/json`` (and pdata's ``float64AsString``) writes it."""
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    if 1e-6 <= abs(f) < 1e21:
        text = format(decimal.Decimal(repr(f)), "f")
        return text[:-2] if text.endswith(".0") else text
    mantissa, exponent = repr(f).split("e")
    sign, digits = exponent[0], exponent[1:].lstrip("0")
    return f"{mantissa}e{sign}{digits}"


_SHORT: Final = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: Since Go 1.22, ``\b`` and ``\f`` too (before, ``\u0008`` and ``\u000c``).
_SHORT_NEW: Final = {**_SHORT, "\b": "\\b", "\f": "\\f"}
#: Escaped as ``\u00XX`` besides the other controls: ``escapeHTML``'s, and the line
#: separators JavaScript reads as line ends.
_HTML: Final = frozenset("<>&\u2028\u2029")


def go_string(text: str, old: bool = False) -> str:
    """``text`` as a JSON string Go writes (``old``: before Go 1.22)."""
    short = _SHORT if old else _SHORT_NEW
    out = ['"']
    for ch in text:
        if ch in short:
            out.append(short[ch])
        elif ch < " " or ch in _HTML:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def go_json(value: Any, old: bool = False) -> str:
    """``json.Marshal(value)`` of a value ``AsRaw`` gives: keys sorted, compact, bytes in
    base64 (``old``: Go before 1.22).  :class:`NotFinite` for a NaN or infinity."""
    if value is None:
        return "null"
    if type(value) is Raw:
        return str(value)
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise NotFinite
        return go_float(value)
    if isinstance(value, (bytes, bytearray)):
        return go_string(base64.b64encode(value).decode(), old)
    if isinstance(value, str):
        return go_string(value, old)
    if isinstance(value, list):
        return "[" + ",".join(go_json(v, old) for v in value) + "]"
    if isinstance(value, dict):
        items = (f"{go_string(k, old)}:{go_json(value[k], old)}" for k in sorted(value))
        return "{" + ",".join(items) + "}"
    raise TypeError(type(value))
