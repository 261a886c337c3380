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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from .. import attributes as A
from ..blobs import BlobStore

logger = logging.getLogger("otel_replay")

_Q = struct.Struct("<Q").pack
_I = struct.Struct("<I").pack
_D = struct.Struct("<d").pack
_VARINT = [bytes([n]) if n < 128 else bytes([(n & 0x7F) | 0x80, n >> 7]) for n in range(1 << 14)]

# OTLP's SpanKind numbers are the SDK's plus one (0 is UNSPECIFIED).
_KIND = {k: (b"\x30" + _VARINT[k.value + 1]) for k in SpanKind}
_FLAG_LOCAL = b"\x85\x01" + _I(0x100)  # field 16, fixed32: HAS_IS_REMOTE
_FLAG_REMOTE = b"\x85\x01" + _I(0x300)  # ... | IS_REMOTE
_EMPTY_ANY = b"\x12\x00"


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


def _any(value: Any) -> bytes:
    """An ``AnyValue`` message body."""
    t = type(value)
    if t is str:
        return _ld(b"\x0a", value.encode("utf-8"))
    if t is bool:
        return b"\x10\x01" if value else b"\x10\x00"
    if t is int:
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF if value < 0 else value)
    if t is float:
        return b"\x21" + _D(value)
    if t is bytes:
        return _ld(b"\x3a", value)
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _ld(b"\x0a", value.encode("utf-8"))
    if isinstance(value, int):
        return b"\x18" + _varint(value & 0xFFFFFFFFFFFFFFFF if value < 0 else value)
    if isinstance(value, float):
        return b"\x21" + _D(value)
    if isinstance(value, bytes):
        return _ld(b"\x3a", value)
    if isinstance(value, Sequence):
        return _ld(b"\x2a", b"".join([_ld(b"\x0a", _any(v)) for v in value]))
    if isinstance(value, Mapping):
        return _ld(b"\x32", b"".join([_ld(b"\x0a", _kv_body(str(k), v)) for k, v in value.items()]))
    raise TypeError(f"invalid attribute value type {type(value).__name__}")


def _kv_body(key: str, value: Any) -> bytes:
    return _ld(b"\x0a", key.encode("utf-8")) + _ld(b"\x12", _any(value))


class _Encoder:
    """Per-call state; the caches live on the module-level instance."""

    def __init__(self) -> None:
        self.keys: dict[str, bytes] = {}
        self.pairs: dict[tuple[str, type, Any], bytes] = {}
        self.blocks: dict[int, tuple[object, bytes]] = {}
        self.redact_key: Callable[[str], bool] | None = None

    def use_redaction(self, redact_key: Callable[[str], bool] | None) -> None:
        # Cached pairs were encoded under one redaction rule: a new rule starts afresh.
        if redact_key != self.redact_key:
            self.pairs.clear()
            self.redact_key = redact_key

    def attributes(
        self,
        tag: bytes,
        attrs: Mapping[str, Any] | None,
        max_inline: int | None,
        blobs: BlobStore | None,
        redact_key: Callable[[str], bool] | None,
    ) -> bytes:
        """Repeated ``KeyValue`` fields under ``tag``."""
        if not attrs:
            return b""
        # BoundedAttributes iterates under a lock, key by key; its plain dict
        # holds the same items in the same order.
        attrs = getattr(attrs, "_dict", attrs)
        out = []
        keys, pairs = self.keys, self.pairs
        for key, value in attrs.items():
            t = type(value)
            small = (t is str and len(value) <= 64) or t is bool or t is int
            if small:
                cached = pairs.get((key, t, value))
                if cached is not None:
                    out.append(cached)
                    continue
            if redact_key is not None and not key.startswith(A.PREFIX) and redact_key(key):
                value, t, small = A.REDACTED_VALUE, str, False
            elif (
                t is bytes
                and blobs is not None
                and max_inline is not None
                and len(value) > max_inline
                and key.startswith(A.BYTES)
            ):
                key, value, t = A.REF + key[len(A.BYTES) :], blobs.put(value), str
            kb = keys.get(key)
            if kb is None:
                if len(keys) > 8192:
                    keys.clear()
                kb = keys[key] = _ld(b"\x0a", key.encode("utf-8"))
            try:
                body = _any(value)
            except (TypeError, UnicodeEncodeError) as exc:
                logger.warning("otel-replay: cannot encode attribute %s: %s", key, exc)
                continue
            field = _ld(tag, kb + _ld(b"\x12", body))
            if small:
                if len(pairs) > 8192:
                    pairs.clear()
                pairs[(key, t, value)] = field
            out.append(field)
        return b"".join(out)

    def block(self, obj: Any, encode: Callable[[Any], bytes]) -> bytes:
        """A resource or scope block, encoded once per object."""
        hit = self.blocks.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        if len(self.blocks) > 256:
            self.blocks.clear()
        data = encode(obj)
        self.blocks[id(obj)] = (obj, data)  # the reference keeps id() from being reused
        return data


_encoder = _Encoder()


def _resource(resource: Any) -> bytes:
    return _ld(b"\x0a", _encoder.attributes(b"\x0a", resource.attributes, None, None, None))


def _scope(scope: Any) -> bytes:
    if scope is None:
        return b"\x0a\x00"
    body = b""
    if scope.name:
        body += _ld(b"\x0a", scope.name.encode("utf-8"))
    if scope.version:
        body += _ld(b"\x12", scope.version.encode("utf-8"))
    body += _encoder.attributes(b"\x1a", scope.attributes, None, None, None)
    return _ld(b"\x0a", body)


def _span(
    span: ReadableSpan,
    max_inline: int | None,
    blobs: BlobStore | None,
    redact_key: Callable[[str], bool] | None,
) -> bytes:
    ctx = span.context
    assert ctx is not None
    parts = [
        b"\x0a\x10" + ctx.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + ctx.span_id.to_bytes(8, "big"),
    ]
    if ctx.trace_state:
        parts.append(
            _ld(b"\x1a", ",".join(f"{k}={v}" for k, v in ctx.trace_state.items()).encode("utf-8"))
        )
    parent = span.parent
    if parent:
        parts.append(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
    if span.name:
        parts.append(_ld(b"\x2a", span.name.encode("utf-8")))
    parts.append(_KIND[span.kind])
    if span.start_time:
        parts.append(b"\x39" + _Q(span.start_time))
    if span.end_time:
        parts.append(b"\x41" + _Q(span.end_time))
    # ReadableSpan.attributes wraps the same mapping in a read-only proxy.
    attrs = getattr(span, "_attributes", None)
    if attrs is None:
        attrs = span.attributes
    parts.append(_encoder.attributes(b"\x4a", attrs, max_inline, blobs, redact_key))
    if span.dropped_attributes:
        parts.append(b"\x50" + _varint(span.dropped_attributes))
    for event in span.events:
        body = b"\x09" + _Q(event.timestamp) if event.timestamp else b""
        if event.name:
            body += _ld(b"\x12", event.name.encode("utf-8"))
        body += _encoder.attributes(b"\x1a", event.attributes, max_inline, blobs, redact_key)
        if event.dropped_attributes:
            body += b"\x20" + _varint(event.dropped_attributes)
        parts.append(_ld(b"\x5a", body))
    if span.dropped_events:
        parts.append(b"\x60" + _varint(span.dropped_events))
    for link in span.links:
        lc = link.context
        body = (
            b"\x0a\x10"
            + lc.trace_id.to_bytes(16, "big")
            + b"\x12\x08"
            + lc.span_id.to_bytes(8, "big")
        )
        body += _encoder.attributes(b"\x22", link.attributes, None, None, redact_key)
        if link.dropped_attributes:
            body += b"\x28" + _varint(link.dropped_attributes)
        body += b"\x35" + _I(0x300 if lc.is_remote else 0x100)
        parts.append(_ld(b"\x6a", body))
    if span.dropped_links:
        parts.append(b"\x70" + _varint(span.dropped_links))
    status = span.status
    if status is not None:
        body = b""
        if status.description:
            body += _ld(b"\x12", status.description.encode("utf-8"))
        if status.status_code.value:
            body += b"\x18" + _VARINT[status.status_code.value]
        parts.append(_ld(b"\x7a", body))
    parts.append(_FLAG_REMOTE if parent is not None and parent.is_remote else _FLAG_LOCAL)
    return _ld(b"\x12", b"".join(parts))


def encode_request(
    spans: Sequence[ReadableSpan],
    *,
    max_inline: int | None = None,
    blobs: BlobStore | None = None,
    redact_key: Callable[[str], bool] | None = None,
) -> bytes:
    """Serialize ``spans`` as one ``ExportTraceServiceRequest``.

    With ``blobs`` and ``max_inline``, exact-payload attributes
    (``otel_replay.bytes.*``) larger than ``max_inline`` are written to the
    blob store and encoded as ``otel_replay.ref.*`` references; attributes
    whose key ``redact_key`` flags are encoded as ``[REDACTED]``.
    """
    # Group as encode_spans does: by resource, then scope, in first-seen order.
    # Grouping by object identity first is cheap; equal-but-distinct objects
    # (rare) are then merged the way dict keys would merge them.
    _encoder.use_redaction(redact_key)
    groups: dict[int, tuple[Any, dict[int, tuple[Any, list[bytes]]]]] = {}
    for span in spans:
        resource = span.resource
        rg = groups.get(id(resource))
        if rg is None:
            rg = groups[id(resource)] = (resource, {})
        scope = span.instrumentation_scope
        sg = rg[1].get(id(scope))
        if sg is None:
            sg = rg[1][id(scope)] = (scope, [])
        sg[1].append(_span(span, max_inline, blobs, redact_key))
    out = []
    for resource, scopes in _merge_equal(groups.values()):
        body = [_encoder.block(resource, _resource)]
        for scope, encoded in _merge_equal(scopes.values()):
            sbody = _encoder.block(scope, _scope) if scope is not None else b"\x0a\x00"
            sbody += b"".join(encoded)
            if scope is not None and scope.schema_url:
                sbody += _ld(b"\x1a", scope.schema_url.encode("utf-8"))
            body.append(_ld(b"\x12", sbody))
        if resource.schema_url:
            body.append(_ld(b"\x1a", resource.schema_url.encode("utf-8")))
        out.append(_ld(b"\x0a", b"".join(body)))
    return b"".join(out)


def _merge_equal(items: Any) -> list[tuple[Any, Any]]:
    merged: list[tuple[Any, Any]] = []
    for obj, value in items:
        for other, existing in merged:
            if other is not obj and other == obj:
                if isinstance(existing, list):
                    existing.extend(value)
                else:
                    for key, (scope, encoded) in value.items():
                        existing.setdefault(key, (scope, []))[1].extend(encoded)
                break
        else:
            merged.append((obj, value))
    return merged
