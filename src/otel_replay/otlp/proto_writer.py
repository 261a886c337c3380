"""Spans to a serialized OTLP ``ExportTraceServiceRequest``, written by hand.

The SDK's ``encode_spans`` builds a protobuf object per span, attribute and
value, then serializes them: it costs far more than making the span, and it
is the export path's bottleneck.  This encoder writes the wire format
directly, with caches for what repeats (resource and scope blocks, attribute
keys, small key/value pairs).  Parsed back, its output equals
``encode_spans(spans)`` field for field (the tests check it), except where it
is asked to move large payloads to the blob store or to hide secret-looking
attributes.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.trace import SpanKind, StatusCode

from .. import attributes as A
from .. import settings
from ..payload.blobs import Blobs
from .sdk_fields import reads_as_sdk

__all__ = ["encode_request"]

logger = logging.getLogger("otel_replay")


_Q = struct.Struct("<Q").pack
_I = struct.Struct("<I").pack
_D = struct.Struct("<d").pack
_VARINT = [bytes([n]) if n < 128 else bytes([(n & 0x7F) | 0x80, n >> 7]) for n in range(1 << 14)]
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_U64 = (1 << 64) - 1

# OTLP's SpanKind numbers are the SDK's plus one (0 is UNSPECIFIED).
_KIND = {k: (b"\x30" + _VARINT[k.value + 1]) for k in SpanKind}
_FLAG_LOCAL = b"\x85\x01" + _I(0x100)  # field 16, fixed32: HAS_IS_REMOTE
_FLAG_REMOTE = b"\x85\x01" + _I(0x300)  # ... | IS_REMOTE
_LINK_FLAG_LOCAL = b"\x35" + _I(0x100)  # Link.flags is field 6
_LINK_FLAG_REMOTE = b"\x35" + _I(0x300)

# Field tags of the repeated KeyValue fields, by enclosing message.
_T_RESOURCE = b"\x0a"  # Resource.attributes
_T_SCOPE = b"\x1a"  # InstrumentationScope.attributes
_T_SPAN = b"\x4a"  # Span.attributes
_T_EVENT = b"\x1a"  # Span.Event.attributes (same bytes as the scope's)
_T_LINK = b"\x22"  # Span.Link.attributes

#: A cache above this many entries starts afresh (high-cardinality values).
_CACHE_MAX = 8192


def _varint(n: int) -> bytes:
    if n < 16384:
        return _VARINT[n]
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _ld(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field."""
    n = len(payload)
    return tag + (_VARINT[n] if n < 16384 else _varint(n)) + payload


def _int(value: int) -> bytes:
    # encode_spans refuses ints outside int64 (the attribute is skipped); a
    # longer varint would make the whole message unparseable.
    if value < 0:
        if value < _INT64_MIN:
            raise ValueError(f"integer {value} does not fit in int64")
        return b"\x18" + _varint(value & _U64)
    if value > _INT64_MAX:
        raise ValueError(f"integer {value} does not fit in int64")
    return b"\x18" + _varint(value)


def _any(value: Any) -> bytes:
    """An ``AnyValue`` message body, with ``encode_spans``' type dispatch."""
    t = type(value)
    if t is str:
        return _ld(b"\x0a", value.encode("utf-8"))
    if t is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if t is int:
        return _int(value)
    if t is float:
        return b"\x21" + _D(value)
    if t is bytes:
        return _ld(b"\x3a", value)
    if t is tuple or t is list:  # (a Sequence, and none of the above)
        return _ld(b"\x2a", b"".join([_ld(b"\x0a", _any(v)) for v in value]))
    # Subclasses and containers, in encode_spans' isinstance order.
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _ld(b"\x0a", value.encode("utf-8"))
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return b"\x21" + _D(value)
    if isinstance(value, bytes):
        return _ld(b"\x3a", value)
    if isinstance(value, Sequence):
        return _ld(b"\x2a", b"".join([_ld(b"\x0a", _any(v)) for v in value]))
    if isinstance(value, Mapping):
        return _ld(
            b"\x32",
            b"".join(
                [
                    _ld(b"\x0a", _ld(b"\x0a", str(k).encode("utf-8")) + _ld(b"\x12", _any(v)))
                    for k, v in value.items()
                ]
            ),
        )
    raise TypeError(f"invalid attribute value type {type(value).__name__}")


class _Rule:
    """The encoder's caches of encoded attribute pairs and resource / scope blocks."""

    __slots__ = ("blocks", "pairs")

    def __init__(self) -> None:
        # tag -> (key, type, value) -> the whole encoded KeyValue field
        self.pairs: dict[bytes, dict[tuple[str, type, Any], bytes]] = {
            tag: {} for tag in (_T_RESOURCE, _T_SCOPE, _T_SPAN, _T_LINK)
        }
        # id(resource or scope) -> (the object, its encoded block); holding the
        # object keeps its id from being reused by another.
        self.blocks: dict[int, tuple[object, bytes]] = {}


# Module-level so that they survive from one export to the next.
_keys: dict[str, bytes] = {}
#: Attribute names said not exported; bounded, as the names come from the app.
_skipped = settings.Once(logger, most=1024)


_RULE = _Rule()


def _skip(key: str, exc: Exception) -> None:
    _skipped.warn(key, "otel-replay: attribute %r not exported: %s", key, exc)


def _short_texts(value: tuple[Any, ...]) -> bool:
    """Whether every item of ``value`` is a text of at most 64 characters."""
    return all(type(v) is str and len(v) <= 64 for v in value)


def _attributes(
    out: list[bytes],
    tag: bytes,
    attrs: Mapping[str, Any] | None,
    rule: _Rule,
    max_inline: int | None = None,
    blobs: Blobs | None = None,
) -> None:
    """Append repeated ``KeyValue`` fields under ``tag`` to ``out``.

    A large string goes in as a piece of its own after its field header, so
    its bytes are copied once more (when ``out`` is joined), not at every
    level of nesting.
    """
    if not attrs:
        return
    # BoundedAttributes iterates under a lock, key by key; its plain dict
    # holds the same items in the same order.
    attrs = getattr(attrs, "_dict", attrs)
    pairs = rule.pairs[tag]
    keys = _keys
    varints = _VARINT
    append = out.append
    for key, value in attrs.items():
        t = type(value)
        if (
            (t is str and len(value) <= 64)
            or t is bool
            or t is int
            # -0.0 equals 0.0 but is encoded differently; NaN never hits.
            or (t is float and value != 0.0 and value == value)
            # A few short texts (finish reasons): equal tuples of texts encode alike.
            or (t is tuple and len(value) <= 4 and _short_texts(value))
        ):
            pair = (key, t, value)
            hit = pairs.get(pair)
            if hit is not None:
                append(hit)
                continue
            small: tuple[str, type, Any] | None = pair
        else:
            small = None
        name = key
        data: bytes | None = None
        try:
            if t is str:  # the common large value (messages JSON), inlined
                data = value.encode("utf-8")
                n = len(data)
                body = b"\x0a" + (varints[n] if n < 16384 else _varint(n))
                if n <= 512:
                    body += data
                    data = None
            elif (
                t is bytes
                and blobs is not None
                and max_inline is not None
                and len(value) > max_inline
                and key.startswith(A.BYTES)
            ):
                name = A.REF + key[len(A.BYTES) :]
                body = _ld(b"\x0a", blobs.put(value).encode("ascii"))
            else:
                body = _any(value)
            kb = keys.get(name)
            if kb is None:
                if len(keys) > _CACHE_MAX:
                    keys.clear()
                kb = keys[name] = _ld(b"\x0a", name.encode("utf-8"))
        except (TypeError, ValueError) as exc:  # as encode_spans: skip that attribute
            _skip(key, exc)
            continue
        n = len(body) if data is None else len(body) + len(data)
        head = kb + b"\x12" + (varints[n] if n < 16384 else _varint(n))
        n += len(head)
        head = tag + (varints[n] if n < 16384 else _varint(n)) + head
        if data is not None:
            append(head + body)
            append(data)
            continue
        field = head + body
        if small is not None:
            if len(pairs) > _CACHE_MAX:
                pairs.clear()
            pairs[small] = field
        append(field)


def _attributes_bytes(
    tag: bytes,
    attrs: Mapping[str, Any] | None,
    rule: _Rule,
    max_inline: int | None = None,
    blobs: Blobs | None = None,
) -> bytes:
    if not attrs:
        return b""
    out: list[bytes] = []
    _attributes(out, tag, attrs, rule, max_inline, blobs)
    return b"".join(out)


def _resource_block(resource: Any, rule: _Rule) -> bytes:
    """``ResourceSpans.resource`` (field 1), encoded once per resource object."""
    hit = rule.blocks.get(id(resource))
    if hit is not None and hit[0] is resource:
        return hit[1]
    data = _ld(b"\x0a", _attributes_bytes(_T_RESOURCE, resource.attributes, rule))
    _remember(rule, resource, data)
    return data


def _scope_block(scope: Any, rule: _Rule) -> bytes:
    """``ScopeSpans.scope`` (field 1), encoded once per scope object."""
    if scope is None:
        return b"\x0a\x00"
    hit = rule.blocks.get(id(scope))
    if hit is not None and hit[0] is scope:
        return hit[1]
    body = b""
    if scope.name:
        body += _ld(b"\x0a", scope.name.encode("utf-8"))
    if scope.version:
        body += _ld(b"\x12", scope.version.encode("utf-8"))
    body += _attributes_bytes(_T_SCOPE, scope.attributes, rule)
    data = _ld(b"\x0a", body)
    _remember(rule, scope, data)
    return data


def _remember(rule: _Rule, obj: object, data: bytes) -> None:
    if len(rule.blocks) > 256:
        rule.blocks.clear()
    rule.blocks[id(obj)] = (obj, data)


#: What ``_span`` reads of a span (a method and properties of the SDK's).
_READ = (
    "get_span_context",
    "parent",
    "name",
    "kind",
    "start_time",
    "end_time",
    "attributes",
    "dropped_attributes",
    "events",
    "dropped_events",
    "links",
    "dropped_links",
    "status",
)


def _dropped(held: Any, bounded: type[Any]) -> int:
    """What the SDK's ``dropped_*`` property says of ``held``."""
    dropped: int = held.dropped if isinstance(held, bounded) else 0
    return dropped


def _span(span: ReadableSpan, rule: _Rule, max_inline: int | None, blobs: Blobs | None) -> bytes:
    """One ``Span`` message, without its field header."""
    if reads_as_sdk(type(span), _READ):
        # Its fields read past the SDK's properties: each is a Python call, and the
        # events and links are copied into a tuple at each read.
        ctx, parent, name, kind = span._context, span._parent, span._name, span._kind
        start_time, end_time, status = span._start_time, span._end_time, span._status
        attrs, events, links = span._attributes, span._events, span._links
        dropped_attributes = _dropped(attrs, BoundedAttributes)
        dropped_events = _dropped(events, BoundedList)
        dropped_links = _dropped(links, BoundedList)
    else:
        ctx, parent, name, kind = span.get_span_context(), span.parent, span.name, span.kind
        start_time, end_time, status = span.start_time, span.end_time, span.status
        attrs, events, links = span.attributes, span.events, span.links
        dropped_attributes = span.dropped_attributes
        dropped_events, dropped_links = span.dropped_events, span.dropped_links
    if ctx is None:
        raise ValueError(f"span {name!r} has no span context")
    parts = [
        b"\x0a\x10" + ctx.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + ctx.span_id.to_bytes(8, "big"),
    ]
    if ctx.trace_state:
        parts.append(
            _ld(b"\x1a", ",".join([f"{k}={v}" for k, v in ctx.trace_state.items()]).encode())
        )
    if parent:
        parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
    if name:
        parts.append(_ld(b"\x2a", name.encode("utf-8")))
    parts.append(_KIND[kind])
    if start_time:
        parts.append(b"\x39" + _Q(start_time))
    if end_time:
        parts.append(b"\x41" + _Q(end_time))
    _attributes(parts, _T_SPAN, attrs, rule, max_inline, blobs)
    if dropped_attributes:
        parts.append(b"\x50" + _varint(dropped_attributes))
    for event in events:
        if type(event) is Event:  # its fields, past its properties
            timestamp, event_name, event_attrs = event._timestamp, event._name, event._attributes
            dropped = _dropped(event_attrs, BoundedAttributes)
        else:
            timestamp, event_name, event_attrs = event.timestamp, event.name, event.attributes
            dropped = event.dropped_attributes
        body = b"\x09" + _Q(timestamp) if timestamp else b""
        if event_name:
            body += _ld(b"\x12", event_name.encode("utf-8"))
        body += _attributes_bytes(_T_EVENT, event_attrs, rule, max_inline, blobs)
        if dropped:
            body += b"\x20" + _varint(dropped)
        parts.append(_ld(b"\x5a", body))
    if dropped_events:
        parts.append(b"\x60" + _varint(dropped_events))
    for link in links:
        lc = link.context
        body = (
            b"\x0a\x10"
            + lc.trace_id.to_bytes(16, "big")
            + b"\x12\x08"
            + lc.span_id.to_bytes(8, "big")
            + _attributes_bytes(_T_LINK, link.attributes, rule)
        )
        if link.dropped_attributes:
            body += b"\x28" + _varint(link.dropped_attributes)
        body += _LINK_FLAG_REMOTE if lc.is_remote else _LINK_FLAG_LOCAL
        parts.append(_ld(b"\x6a", body))
    if dropped_links:
        parts.append(b"\x70" + _varint(dropped_links))
    if status is not None:
        description = status.description
        code = status.status_code
        if not description and code is StatusCode.UNSET:  # (most spans)
            parts.append(b"\x7a\x00")
        else:
            body = _ld(b"\x12", description.encode("utf-8")) if description else b""
            if code.value:
                body += b"\x18" + _VARINT[code.value]
            parts.append(_ld(b"\x7a", body))
    parts.append(_FLAG_REMOTE if parent is not None and parent.is_remote else _FLAG_LOCAL)
    return b"".join(parts)


class _Group:
    """Spans sharing a resource (or, nested, a scope), in first-seen order."""

    __slots__ = ("by_id", "key", "pieces", "size", "subgroups")

    def __init__(self, key: Any) -> None:
        self.key = key
        self.pieces: list[Any] = []  # encoded spans (bytes after their field header, or JSON)
        self.size = 0
        self.subgroups: list[_Group] = []
        self.by_id: dict[int, _Group] = {}

    def child(self, key: Any) -> _Group:
        # By identity first (cheap); a new object joins an equal one's group,
        # as a dict keyed by it would in encode_spans.
        group = self.by_id.get(id(key))
        if group is None:
            for other in self.subgroups:
                if other.key == key:
                    group = other
                    break
            else:
                group = _Group(key)
                self.subgroups.append(group)
            self.by_id[id(key)] = group
        return group


def encode_request(
    spans: Sequence[ReadableSpan],
    *,
    max_inline: int | None = None,
    blobs: Blobs | None = None,
) -> bytes:
    """Serialize ``spans`` as one ``ExportTraceServiceRequest``.

    Parsed back it equals ``encode_spans(spans)``, except that with ``blobs``
    and ``max_inline``, exact-payload attributes (``otel_replay.bytes.*``)
    larger than ``max_inline`` go to the blob store and are encoded as
    ``otel_replay.ref.*`` references.  An attribute that
    cannot be encoded (a lone surrogate, an int beyond int64) is skipped, as
    ``encode_spans`` skips it; anything else wrong with a span raises.
    """
    rule = _RULE
    root = _Group(None)
    for span in spans:
        body = _span(span, rule, max_inline, blobs)
        scope = span.instrumentation_scope or None
        group = root.child(span.resource).child(scope)
        header = b"\x12" + _varint(len(body))  # ScopeSpans.spans
        group.pieces += (header, body)
        group.size += len(header) + len(body)
    # Lengths are summed rather than nested messages joined level by level,
    # so the span bytes are copied once more, into the result.
    out: list[bytes] = []
    for rg in root.subgroups:
        resource = rg.key
        res = _resource_block(resource, rule)
        pieces = [res]
        size = len(res)
        for sg in rg.subgroups:
            scope = sg.key
            block = _scope_block(scope, rule)
            tail = (
                _ld(b"\x1a", scope.schema_url.encode("utf-8"))
                if scope is not None and scope.schema_url
                else b""
            )
            n = len(block) + sg.size + len(tail)
            header = b"\x12" + _varint(n)  # ResourceSpans.scope_spans
            pieces += (header, block, *sg.pieces, tail)
            size += len(header) + n
        if resource.schema_url:
            tail = _ld(b"\x1a", resource.schema_url.encode("utf-8"))
            pieces.append(tail)
            size += len(tail)
        out += (b"\x0a" + _varint(size), *pieces)  # ExportTraceServiceRequest.resource_spans
    return b"".join(out)
