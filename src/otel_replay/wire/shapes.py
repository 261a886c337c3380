"""What a request body's fields may hold: checked before the body is read.

A client's body is untrusted: the readers (``dialects.bodies``) take what
the providers send and more, and a field of the wrong type (``"tool_calls":
5``), a string no UTF-8 spells (a lone surrogate, ``"\\ud800"``) or a number
no JSON spells (``NaN``, ``1e999``) must be the client's 400 naming the
field, not the server's 500.  Each wire module states the fields it reads
and their types in its API (:class:`Obj`, :class:`Arr`); fields it does not
name may hold anything.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from ..json_text import TooDeep, depth
from ..limits import MAX_NESTING


class BadRequest(ValueError):
    """A request body its API would refuse: the message names the field and what is wrong."""


#: A JSON type a field may have: ``string``, ``number`` (an integer too), ``integer``,
#: ``boolean``, ``null``, ``array``, ``object``; or :class:`Obj`, :class:`Arr`, or a
#: tuple of those (any of them).
Shape = Any


@dataclasses.dataclass(frozen=True)
class Obj:
    """A JSON object whose named fields have these shapes (when present; others any)."""

    fields: Mapping[str, Shape]
    required: tuple[str, ...] = ()

    @functools.cached_property
    def check(self) -> Callable[[Any], None]:
        """Raise :class:`BadRequest` naming the first place a value is not of this shape."""
        checker = _compiled(self)

        def check(value: Any) -> None:
            try:
                checker(value)
            except _Wrong as wrong:
                where = "".join(reversed(wrong.path)).lstrip(".") or "the body"
                raise BadRequest(f"{where}: {wrong.what}") from None

        return check


@dataclasses.dataclass(frozen=True)
class Arr:
    """A JSON array of items of one shape."""

    items: Shape


class _Wrong(Exception):
    """Where a value is not of its shape: the path is gathered as the check unwinds
    (no path is built for the values that are fine)."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.path: list[str] = []


_KINDS: dict[type, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    type(None): "null",
    list: "array",
    dict: "object",
}

_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
    "boolean": (bool,),
    "null": (type(None),),
    "array": (list,),
    "object": (dict,),
}


def _compiled(shape: Shape) -> Callable[[Any], None]:
    """A function raising :class:`_Wrong` where a value is not of ``shape``."""
    options = shape if isinstance(shape, tuple) else (shape,)
    allowed: set[type] = set()
    inner: dict[type, Callable[[Any], None]] = {}
    for option in options:
        types = _TYPES[_name(option)]
        allowed.update(types)
        if not isinstance(option, str):
            inner.update(dict.fromkeys(types, _inner(option)))
    expected = " or ".join(dict.fromkeys(_kind_name(_name(o)) for o in options))

    def check(value: Any) -> None:
        # By exact type: a bool is an int to Python, not a number to JSON.
        kind = type(value)
        if kind not in allowed:
            raise _Wrong(f"expected {expected}, got {_kind(value)}")
        walk = inner.get(kind)
        if walk is not None:
            walk(value)

    return check


def _inner(shape: Obj | Arr) -> Callable[[Any], None]:
    """What checks the inside of an object or array already known to be one."""
    if isinstance(shape, Arr):
        item = _compiled(shape.items)

        def items(value: list[Any]) -> None:
            for i, v in enumerate(value):
                try:
                    item(v)
                except _Wrong as wrong:
                    wrong.path.append(f"[{i}]")
                    raise

        return items
    fields = [(name, _compiled(field)) for name, field in shape.fields.items()]
    required = shape.required

    def members(value: dict[str, Any]) -> None:
        for name in required:
            if name not in value:
                wrong = _Wrong("required")
                wrong.path.append(f".{name}")
                raise wrong
        for name, field in fields:
            if name in value:
                try:
                    field(value[name])
                except _Wrong as wrong:
                    wrong.path.append(f".{name}")
                    raise

    return members


def _name(shape: Shape) -> str:
    return shape if isinstance(shape, str) else "object" if isinstance(shape, Obj) else "array"


#: Request parameters every API takes: their JSON types (null: the SDK's "not given").
PARAMS: dict[str, Shape] = {
    "model": "string",
    "stream": ("boolean", "null"),
    "temperature": ("number", "null"),
    "top_p": ("number", "null"),
    "top_k": ("number", "null"),
    "frequency_penalty": ("number", "null"),
    "presence_penalty": ("number", "null"),
    "max_tokens": ("number", "null"),
    "max_completion_tokens": ("number", "null"),
    "max_output_tokens": ("number", "null"),
    "seed": ("number", "null"),
    "n": ("number", "null"),
    "stop": ("string", Arr("string"), "null"),
    "stop_sequences": (Arr("string"), "null"),
    "stream_options": ("object", "null"),
    "tool_choice": ("string", "object", "null"),
    "previous_response_id": ("string", "null"),
}

#: Fields of a message every wire reads, whatever its API (a message may come in
#: another API's shape or the GenAI one): ``tool_calls`` and ``parts`` are walked.
MESSAGE_FIELDS: dict[str, Shape] = {
    "role": "string",
    "tool_calls": (Arr(Obj({"function": "object"})), "null"),
    "tool_call_id": ("string", "null"),
    "parts": (Arr("object"), "null"),
    "name": ("string", "null"),
}

#: A tool definition's fields, in the Chat shape (``function``) or the flat one.
TOOL_FIELDS: dict[str, Shape] = {
    "type": "string",
    "name": "string",
    "description": ("string", "null"),
    "parameters": ("object", "null"),
    "function": Obj(
        {"name": "string", "description": ("string", "null"), "parameters": ("object", "null")}
    ),
}


def _kind(value: Any) -> str:
    return _kind_name(_KINDS.get(type(value), type(value).__name__))


def _kind_name(kind: str) -> str:
    return ("an " if kind[0] in "aeiou" else "a ") + kind if kind != "null" else "null"


#: A surrogate in a body, escaped (``\ud800``) or as the bytes UTF-8 would give it.
_ESCAPED = re.compile(rb"\\u[dD][89a-fA-F]")
_ENCODED = re.compile(rb"\xed[\xa0-\xbf]")


def loads(raw: bytes) -> Any:
    """A request body parsed as :func:`~otel_replay.json_text.loads` parses it (nesting
    bounded: :class:`~otel_replay.json_text.TooDeep`), refusing with :class:`BadRequest`
    a string that is not Unicode text (a lone surrogate: ``"\\ud800"`` parses, but no
    UTF-8 spells it) or a number that is not finite (``NaN``, ``1e999``: no JSON spells
    it), and naming where.

    Either would be echoed into an answer no client can read, or break the answer's
    encoding.  Told as the body is parsed (numbers) or from its bytes (surrogates):
    a body is walked only when it holds one.
    """
    encoding = _encoding(raw)
    try:
        # Decoded as json.loads decodes bytes (a surrogate's bytes let through).
        value = _DECODER.decode(raw.decode(encoding, "surrogatepass"))
    except _NotFinite as exc:
        raise _placed(raw, str(exc)) from None
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING} levels") from None
    if raw.count(b"[") + raw.count(b"{") > MAX_NESTING and depth(value) > MAX_NESTING:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING} levels")
    if (
        (b"\\u" in raw and _ESCAPED.search(raw) is not None)
        or (b"\xed" in raw and _ENCODED.search(raw) is not None)
        or encoding != "utf-8"
    ):
        _walk(value)
    return value


def _encoding(raw: bytes) -> str:
    """The encoding :func:`json.detect_encoding` finds, told at once for a body that opens
    an object with a byte no UTF-16 or UTF-32 text begins with (nearly every body)."""
    if raw[:1] == b"{" and raw[1:2] != b"\x00":
        return "utf-8"
    return json.detect_encoding(raw)


def _placed(raw: bytes, number: str) -> BadRequest:
    """The refusal of a body holding ``number`` (not finite), naming where it is."""
    try:
        _walk(json.loads(raw))  # a second parse, for a body refused only
    except BadRequest as placed:
        return placed
    except (ValueError, RecursionError):
        pass
    return BadRequest(f"{number} is not a JSON number")


class _NotFinite(ValueError):
    pass


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        raise _NotFinite(text)
    return value


def _no_constant(name: str) -> float:  # NaN, Infinity, -Infinity
    raise _NotFinite(name)


#: One decoder for every body (json.loads with hooks would make one per call).
_DECODER = json.JSONDecoder(parse_float=_finite, parse_constant=_no_constant)


def _walk(doc: Any) -> None:
    """Raise :class:`BadRequest` at the first string that is not text or number not finite."""
    stack: list[tuple[Any, str]] = [(doc, "")]
    while stack:
        value, where = stack.pop()
        if isinstance(value, str):
            _text(value, where)
        elif isinstance(value, float) and not math.isfinite(value):
            raise BadRequest(f"{where or 'the body'}: {value} is not a JSON number")
        elif isinstance(value, dict):
            for key in value:
                _text(key, where)
            stack.extend((v, f"{where}.{k}" if where else k) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(value))))


def _text(value: str, where: str) -> None:
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        bad = f"U+{ord(value[exc.start]):04X}"
        raise BadRequest(f"{where or 'the body'}: a lone surrogate ({bad}) is not text") from None
