"""Byte-exact payload codec: a Python value <-> (type tag, bytes).

The tag says how to turn the bytes back into a value equal to the original:

``str``     UTF-8 (lone surrogates kept with ``surrogatepass``)
``bytes``   the raw bytes, non-UTF-8 included
``json``    JSON of JSON-native values (None, bool, int, float, str, list, dict[str, ...])
``pyjson``  JSON with tagged objects ``{"$py": kind, ...}`` for what JSON lacks:
            tuple, set, frozenset, bytes, datetime, date, time, timedelta, Decimal,
            UUID, Path, Enum members, dicts with non-str keys, dataclasses and
            pydantic models (recorded by class name; rebuilt only from classes
            :mod:`otel_replay.trusted_types` allows, else given back as plain JSON)
``repr``    anything else: ``repr(value)``; it cannot be restored, so a replay
            stub refuses it instead of returning something that merely looks right

Decoding never imports anything: a class name in a payload comes from the
file, and the file may come from anyone (see :mod:`otel_replay.trusted_types`).
"""

from __future__ import annotations

import binascii
import dataclasses
import datetime as dt
import enum
import json
import json.encoder
import sys
import uuid
from collections.abc import Callable
from typing import Any, Final, NamedTuple

from .. import json_text
from ..bytes_text import to_base64
from ..limits import PLAIN_DEPTH
from ..trusted_types import Kind, TypeResolver, class_path

STR: Final = "str"
BYTES: Final = "bytes"
JSON: Final = "json"
PYJSON: Final = "pyjson"
REPR: Final = "repr"
TAGS: Final = frozenset({STR, BYTES, JSON, PYJSON, REPR})

_TAG_KEY: Final = "$py"


class PayloadError(ValueError):
    """A payload cannot be turned back into the value it was recorded from."""


class Encoded(NamedTuple):
    """A value as recorded: its type tag and exact bytes."""

    type: str
    data: bytes

    @property
    def exact(self) -> bool:
        """True when :func:`decode` gives back a value equal to the original."""
        return self.type != REPR

    @property
    def sha256(self) -> str:
        return sha256(self.data)


def sha256(data: bytes) -> str:
    """The SHA-256 digest of ``data``, as hex."""
    global _hash
    if _hash is None:
        # hashlib (OpenSSL) is imported on the first digest, not with the capture API.
        import hashlib

        _hash = hashlib.sha256
    digest: str = _hash(data).hexdigest()
    return digest


_hash: Any = None


class _NotJson(Exception):
    pass


_SCALARS: Final = (str, int, bool, float, type(None))


def _is_plain_json(value: Any, depth: int = 0) -> bool:
    """True when ``json.dumps`` then ``json.loads`` gives an equal value of equal types."""
    # Loops rather than all(generator), scalars tested inline: on the capture hot path.
    t = type(value)
    if t in _SCALARS:
        return True
    if t is not list and t is not dict:
        return False
    if depth >= PLAIN_DEPTH:  # what it holds would be past the bound
        return not value
    if t is list:
        for v in value:
            if type(v) not in _SCALARS and not _is_plain_json(v, depth + 1):
                return False
        return True
    for k, v in value.items():
        if type(k) is not str or (type(v) not in _SCALARS and not _is_plain_json(v, depth + 1)):
            return False
    return True


def is_plain_json(value: Any) -> bool:
    """True when ``value`` is JSON as it is: :func:`encode` records it as type ``json``."""
    return _is_plain_json(value)


def plain_json_text(value: Any) -> str:
    """The text :func:`encode` writes for a plain JSON value (UTF-8 encoded, its ``data``)."""
    return _plain_text(value)


def encode(value: Any) -> Encoded:
    """Encode ``value`` so that :func:`decode` returns an equal value of the same type."""
    t = type(value)
    if t is str:
        return Encoded(STR, value.encode("utf-8", "surrogatepass"))
    if t is bytes:
        return Encoded(BYTES, value)
    if _is_plain_json(value):
        return Encoded(JSON, plain_json_bytes(value))
    try:
        return Encoded(PYJSON, plain_json_bytes(_to_tagged(value, 0)))
    except (_NotJson, RecursionError, TypeError, ValueError):
        return Encoded(REPR, _safe_repr(value).encode("utf-8", "surrogatepass"))


#: What a corrupt or hostile payload can raise while it is rebuilt (not a crash: a PayloadError).
_BAD_PAYLOAD: Final = (
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    AttributeError,
    ArithmeticError,
    RecursionError,
)


def decode(type_: str, data: bytes, types: TypeResolver | None = None) -> Any:
    """Rebuild the value recorded as ``(type_, data)``; raises :class:`PayloadError`.

    Objects recorded by class name are rebuilt only with the classes ``types``
    allows (by default: stdlib value types and registered classes); any other
    comes back as its plain JSON value, and ``types.refused`` names it.
    """
    try:
        if type_ == STR:
            return data.decode("utf-8", "surrogatepass")
        if type_ == BYTES:
            return bytes(data)
        if type_ == JSON:
            return json.loads(data)
        if type_ == PYJSON:
            return _from_tagged(json.loads(data), types if types is not None else TypeResolver())
    except PayloadError:
        raise
    except _BAD_PAYLOAD as exc:
        raise PayloadError(f"corrupt {type_} payload: {exc}") from exc
    if type_ == REPR:
        raise PayloadError(
            "the value was recorded as repr() only (its type has no exact encoding): "
            + data[:200].decode("utf-8", "replace")
        )
    raise PayloadError(f"unknown payload type {type_!r}")


def plain(value: Any) -> Any:
    """The value as plain JSON types, for display attributes and ``show --json``."""
    if _is_plain_json(value):
        return value
    try:
        return _plainify(_to_tagged(value, 0))
    except (_NotJson, RecursionError, TypeError, ValueError):
        return _safe_repr(value)


def plain_from(type_: str, data: bytes | str) -> Any:
    """The plain JSON form of a recorded payload (its bytes, or those bytes as text),
    without rebuilding its objects.

    For display: a ``pyjson`` dataclass or model whose class is not importable
    here (the CLI does not import the agent's code) still shows its fields.
    """
    if isinstance(data, str):
        if type_ == STR:
            return data
        if type_ not in (PYJSON, JSON):
            data = data.encode("utf-8", "surrogatepass")
    if type_ in (PYJSON, JSON):
        try:
            # Parsed JSON is plain already, and bounded in depth as every recorded text is.
            value = json_text.loads(data)
            return _plainify(value) if type_ == PYJSON else value
        except _BAD_PAYLOAD as exc:
            raise PayloadError(f"corrupt {type_} payload: {exc}") from exc
    assert isinstance(data, bytes)
    if type_ == STR:
        return decode(type_, data)
    return plain(decode(type_, data))


def display_text(value: Any) -> str:
    """The semconv display form: a str as itself, anything else as JSON."""
    if type(value) is str:
        return value
    if type(value) is bytes:
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + to_base64(value)
    return json.dumps(plain(value), ensure_ascii=False, default=str)


def canonical(value: Any) -> str:
    """Key-order-independent JSON text, for matching (not for storage)."""
    try:
        return _canonical_text(value)
    except (TypeError, ValueError, RecursionError):
        # (Not plain JSON; or a cycle, which the encoder made once does not look for.)
        return json.dumps(plain(value), sort_keys=True, separators=(",", ":"), default=str)


#: What :func:`canonical` writes with (``json.dumps`` with options builds one per call).
_CANONICAL: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)

#: ensure_ascii=False keeps a payload small and readable.  One encoder for every
#: payload: ``json.dumps`` with options builds a new one per call.
_ENCODER: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def text_encoder(encoder: json.JSONEncoder) -> Callable[[Any], str]:
    """``encoder.encode`` for plain JSON values, without its per-call set-up.

    The encoder builds its C encoder anew for every call, with a cycle check a
    plain value (bounded depth, no cycle) does not need: a third of the cost
    of a small payload.  The C encoder is made once here, as the encoder makes
    it; where it is missing or differs, the encoder itself is used.  (A value
    that is not plain JSON fails as with the encoder, a cycle as a RecursionError.)
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None or encoder.indent is not None:
        return encoder.encode
    strings = json.encoder.encode_basestring_ascii if encoder.ensure_ascii else None
    made = make(
        None,
        None,
        strings or json.encoder.encode_basestring,
        None,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        encoder.allow_nan,
    )

    def text(value: Any) -> str:
        return "".join(made(value, 0))

    probe: dict[str, Any] = {"b": [1, 2.5, None, True, 'é\n"', {"": []}], "a": -0.0}
    if encoder.allow_nan:
        probe["n"] = float("inf")
    try:
        same = text(probe) == encoder.encode(probe)
    except Exception:
        same = False
    return text if same else encoder.encode


_plain_text: Final = text_encoder(_ENCODER)
_canonical_text: Final = text_encoder(_CANONICAL)


def plain_json_bytes(value: Any) -> bytes:
    """The bytes :func:`encode` records for a plain JSON value (its ``data``)."""
    # surrogatepass keeps lone surrogates (valid in Python str) encodable.
    return plain_json_text(value).encode("utf-8", "surrogatepass")


def _from_b64(text: str) -> bytes:
    return binascii.a2b_base64(text)


def _safe_repr(value: Any) -> str:
    try:
        return repr(value)
    except Exception as exc:  # a broken __repr__ must not break recording
        return f"<{type(value).__qualname__} (repr failed: {type(exc).__name__})>"


def _to_tagged(value: Any, depth: int) -> Any:
    if depth > 200:
        raise _NotJson("too deep")
    d = depth + 1
    t = type(value)
    if value is None or t is str or t is int or t is bool or t is float:
        return value
    if t is list:
        return [_to_tagged(v, d) for v in value]
    if t is dict:
        if all(type(k) is str for k in value) and _TAG_KEY not in value:
            return {k: _to_tagged(v, d) for k, v in value.items()}
        return {
            _TAG_KEY: "dict",
            "items": [[_to_tagged(k, d), _to_tagged(v, d)] for k, v in value.items()],
        }
    if t is tuple:
        return {_TAG_KEY: "tuple", "v": [_to_tagged(v, d) for v in value]}
    if t is set or t is frozenset:
        items = [_to_tagged(v, d) for v in value]
        items.sort(key=lambda x: json.dumps(x, sort_keys=True))
        return {_TAG_KEY: t.__name__, "v": items}
    if t is bytes or t is bytearray:
        return {_TAG_KEY: t.__name__, "b64": to_base64(value)}
    if t is dt.datetime:
        return {_TAG_KEY: "datetime", "v": value.isoformat(), "fold": value.fold}
    if t is dt.date:
        return {_TAG_KEY: "date", "v": value.isoformat()}
    if t is dt.time:
        return {_TAG_KEY: "time", "v": value.isoformat(), "fold": value.fold}
    if t is dt.timedelta:
        return {_TAG_KEY: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if t.__name__ == "Decimal" and t.__module__ == "decimal":  # decimal imported only to read
        return {_TAG_KEY: "decimal", "v": str(value)}
    if t is uuid.UUID:
        return {_TAG_KEY: "uuid", "v": str(value)}
    # pathlib is not imported for this: a value cannot be a path unless it was.
    pathlib = sys.modules.get("pathlib")
    if pathlib is not None and isinstance(value, pathlib.PurePath):
        return {_TAG_KEY: "path", "cls": class_path(t), "v": str(value)}
    if isinstance(value, enum.Enum):
        return {_TAG_KEY: "enum", "cls": class_path(t), "name": value.name}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: _to_tagged(getattr(value, f.name), d)
            for f in dataclasses.fields(value)
            if f.init
        }
        return {_TAG_KEY: "dataclass", "cls": class_path(t), "v": fields}
    dump = getattr(value, "model_dump", None)
    if callable(dump) and hasattr(t, "model_validate"):
        return {
            _TAG_KEY: "pydantic",
            "cls": class_path(t),
            "v": _to_tagged(dump(mode="python"), d),
        }
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # NamedTuple
        return {
            _TAG_KEY: "namedtuple",
            "cls": class_path(t),
            "v": [_to_tagged(v, d) for v in value],
        }
    raise _NotJson(t.__qualname__)


def _from_tagged(node: Any, types: TypeResolver) -> Any:
    if type(node) is list:
        return [_from_tagged(v, types) for v in node]
    if type(node) is not dict:
        return node
    kind = node.get(_TAG_KEY)
    if kind is None:
        return {k: _from_tagged(v, types) for k, v in node.items()}
    if kind == "dict":
        return {_hashable(_from_tagged(k, types)): _from_tagged(v, types) for k, v in node["items"]}
    if kind == "tuple":
        return tuple(_from_tagged(v, types) for v in node["v"])
    if kind == "set":
        return {_hashable(_from_tagged(v, types)) for v in node["v"]}
    if kind == "frozenset":
        return frozenset(_hashable(_from_tagged(v, types)) for v in node["v"])
    if kind == "bytes":
        return _from_b64(node["b64"])
    if kind == "bytearray":
        return bytearray(_from_b64(node["b64"]))
    if kind == "datetime":
        return dt.datetime.fromisoformat(node["v"]).replace(fold=node.get("fold", 0))
    if kind == "date":
        return dt.date.fromisoformat(node["v"])
    if kind == "time":
        return dt.time.fromisoformat(node["v"]).replace(fold=node.get("fold", 0))
    if kind == "timedelta":
        days, seconds, micros = node["v"]
        return dt.timedelta(days=days, seconds=seconds, microseconds=micros)
    if kind == "decimal":
        # lazy: only a recorded Decimal needs it
        import decimal

        return decimal.Decimal(node["v"])
    if kind == "uuid":
        return uuid.UUID(node["v"])
    if kind in _CLASS_KINDS:
        cls = types.resolve(str(node["cls"]), kind)
        if cls is None:
            return _plainify(node)  # not a class this replay may use: its plain value
        if kind == "path":
            return cls(str(node["v"]))
        if kind == "enum":
            return cls[node["name"]]  # type: ignore[index]
        if kind == "dataclass":
            return cls(**{k: _from_tagged(v, types) for k, v in node["v"].items()})
        if kind == "pydantic":
            return cls.model_validate(_from_tagged(node["v"], types))  # type: ignore[attr-defined]
        return cls(*(_from_tagged(v, types) for v in node["v"]))
    raise PayloadError(f"unknown tagged kind {kind!r}")


_CLASS_KINDS: Final[frozenset[Kind]] = frozenset(
    {"path", "enum", "dataclass", "pydantic", "namedtuple"}
)


def _hashable(value: Any) -> Any:
    if type(value) is list:
        return tuple(_hashable(v) for v in value)
    if type(value) is dict:
        return tuple((k, _hashable(v)) for k, v in value.items())
    return value


def _plainify(node: Any) -> Any:
    if type(node) is list:
        return [_plainify(v) for v in node]
    if type(node) is not dict:
        return node
    kind = node.get(_TAG_KEY)
    if kind is None:
        return {k: _plainify(v) for k, v in node.items()}
    if kind == "dict":
        return {str(_plainify(k)): _plainify(v) for k, v in node["items"]}
    if kind in ("tuple", "set", "frozenset", "namedtuple"):
        return [_plainify(v) for v in node["v"]]
    if kind in ("bytes", "bytearray"):
        raw = _from_b64(node["b64"])
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + node["b64"]
    if kind == "timedelta":
        days, seconds, micros = node["v"]
        return days * 86400 + seconds + micros / 1e6
    if kind in ("dataclass", "pydantic"):
        return _plainify(node["v"])
    if kind == "enum":
        return node["name"]
    return node.get("v")
