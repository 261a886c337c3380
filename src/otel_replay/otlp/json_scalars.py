"""The scalars of OTLP/JSON as the Collector writes them: strings escaped as
json-iterator escapes them (or, for the older marshaler, as Go's encoding/json
does), doubles as Go prints them, bytes as standard base64, 64-bit integers as
decimal strings, a key/value pair.  Shared by both front ends of
:mod:`otel_replay.otlp.json_writer`.
"""

from __future__ import annotations

import base64
import json.encoder
from collections.abc import Callable

_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_INF = float("inf")

#: ``json.dumps``' escaping with ``ensure_ascii=False`` (the C version when there is one).
_basestring: Callable[[str], str] = json.encoder.encode_basestring

# json-iterator (pdata's current writer) escapes ", \ and control characters; \n, \r
# and \t by name, every other control character as \u00XX -- \b and \f included.
_JSONITER = {c: f"\\u{c:04x}" for c in range(0x20)}
_JSONITER.update({ord('"'): '\\"', ord("\\"): "\\\\", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t"})
# Go's encoding/json (pdata's writer before json-iterator, through gogo/jsonpb) also
# escapes <, > and & and the two JavaScript line terminators.
_GO_HTML = {**_JSONITER, ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
_GO_HTML.update({0x2028: "\\u2028", 0x2029: "\\u2029"})


_CONTROL = bytes(range(0x20))
#: Below this length the C escaper is quicker; above, byte replaces are (a JSON message
#: text full of quotes escapes about five times faster).
_LONG = 256


def _str(text: str) -> str:
    """A JSON string as json-iterator writes it."""
    if len(text) < _LONG:
        if "\b" in text or "\f" in text:  # json.dumps names these two, json-iterator not
            return '"' + text.translate(_JSONITER) + '"'
        return _basestring(text)
    # surrogatepass: a lone surrogate comes back as is, for the caller's final encode to find
    data = text.encode("utf-8", "surrogatepass").replace(b"\\", b"\\\\").replace(b'"', b'\\"')
    if len(data.translate(None, _CONTROL)) != len(data):
        data = data.replace(b"\n", b"\\n").replace(b"\r", b"\\r").replace(b"\t", b"\\t")
        if len(data.translate(None, _CONTROL)) != len(data):  # other control characters
            return '"' + text.translate(_JSONITER) + '"'
    return '"' + data.decode("utf-8", "surrogatepass") + '"'


def _str_legacy(text: str) -> str:
    return '"' + text.translate(_GO_HTML) + '"'


def format_double(value: float) -> str:
    """A double as pdata writes it (Go's ``strconv.AppendFloat``, as encoding/json uses it).

    Shortest digits that read back to the same double; positional between
    1e-6 and 1e21, exponent form outside (``1e-7``, ``1e+21``); NaN and the
    infinities as the strings protobuf's JSON mapping names them.
    """
    if value != value:
        return '"NaN"'
    if value == _INF:
        return '"Infinity"'
    if value == -_INF:
        return '"-Infinity"'
    text = repr(value)  # the shortest round-trip digits, as Go's -1 precision
    magnitude = abs(value)
    if magnitude != 0.0 and (magnitude < 1e-6 or magnitude >= 1e21):
        # repr uses exponent form here too; Go drops a two-digit exponent's leading 0.
        mantissa, _, exponent = text.partition("e")
        if len(exponent) == 3 and exponent[:2] == "-0":
            exponent = "-" + exponent[2]
        return f"{mantissa}e{exponent}"
    if "e" in text:  # repr's exponent form below 1e-4 and from 1e16: spell it out
        mantissa, _, exponent = text.partition("e")
        sign = "-" if mantissa[0] == "-" else ""
        whole, _, fraction = mantissa.lstrip("-").partition(".")
        digits = whole + fraction
        point = len(whole) + int(exponent)
        if point <= 0:
            return f"{sign}0.{'0' * -point}{digits}"
        if point >= len(digits):
            return sign + digits + "0" * (point - len(digits))
        return f"{sign}{digits[:point]}.{digits[point:]}"
    if text.endswith(".0"):
        return text[:-2]
    return text


def _bytes(data: bytes) -> str:
    return '"' + base64.b64encode(data).decode("ascii") + '"'


def _int(value: int) -> str:
    if value < _INT64_MIN or value > _INT64_MAX:
        raise ValueError(f"integer {value} does not fit in int64")
    return '{"intValue":"' + str(value) + '"}'


def _kv(key: str, value_json: str, esc: Callable[[str], str] = _str) -> str:
    if key:
        return '{"key":' + esc(key) + ',"value":' + value_json + "}"
    return '{"value":' + value_json + "}"
