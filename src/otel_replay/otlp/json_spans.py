"""SDK spans as one OTLP/JSON request, byte for byte what pdata's ``JSONMarshaler``
writes for the request :func:`~otel_replay.otlp.proto_writer.encode_request` makes of
them (the same grouping, large payloads to the blob store, attributes skipped): see
:mod:`otel_replay.otlp.json_writer` for the rules.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from .. import attributes as A
from ..payload.blobs import Blobs
from .json_scalars import _bytes, _int, _kv, _str, format_double
from .proto_writer import _Group, _skip

_KIND = {k: f'"kind":{k.value + 1}' for k in SpanKind}  # OTLP numbers kinds from 1
_FLAGS_LOCAL = '"flags":256'  # HAS_IS_REMOTE
_FLAGS_REMOTE = '"flags":768'  # HAS_IS_REMOTE | IS_REMOTE
_CACHE_MAX = 8192


def _any(value: Any, esc: Callable[[str], str] = _str) -> str:
    """An ``AnyValue`` object, with ``encode_spans``' (and our proto encoder's) type dispatch."""
    t = type(value)
    if t is str:
        return '{"stringValue":' + esc(value) + "}"
    if t is bool:
        return '{"boolValue":true}' if value else '{"boolValue":false}'
    if t is int:
        return _int(value)
    if t is float:
        return '{"doubleValue":' + format_double(value) + "}"
    if t is bytes:
        return '{"bytesValue":' + _bytes(value) + "}"
    if value is None:
        return "{}"
    if isinstance(value, bool):
        return '{"boolValue":true}' if value else '{"boolValue":false}'
    if isinstance(value, str):
        return '{"stringValue":' + esc(value) + "}"
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        return '{"doubleValue":' + format_double(value) + "}"
    if isinstance(value, bytes):
        return '{"bytesValue":' + _bytes(value) + "}"
    if isinstance(value, Sequence):
        if not value:
            return '{"arrayValue":{}}'
        return '{"arrayValue":{"values":[' + ",".join([_any(v, esc) for v in value]) + "]}}"
    if isinstance(value, Mapping):
        if not value:
            return '{"kvlistValue":{}}'
        pairs = [_kv(str(k), _any(v, esc), esc) for k, v in value.items()]
        return '{"kvlistValue":{"values":[' + ",".join(pairs) + "]}}"
    raise TypeError(f"invalid attribute value type {type(value).__name__}")


class _Rule:
    """The encoder's caches (a fresh set checks text the fast path may have cached)."""

    __slots__ = ("blocks", "keys", "pairs")

    def __init__(self) -> None:
        self.pairs: dict[tuple[str, type, Any], str] = {}
        self.keys: dict[str, str] = {}  # key -> '{"key":"...","value":'
        # id(resource or scope) -> (the object, its JSON); holding the object keeps
        # its id from being reused by another.
        self.blocks: dict[int, tuple[object, str]] = {}


_RULE = _Rule()


def _attributes(
    out: list[str],
    attrs: Mapping[str, Any] | None,
    rule: _Rule,
    checked: bool,
    max_inline: int | None = None,
    blobs: Blobs | None = None,
) -> int:
    """Append the ``KeyValue`` objects of ``attrs``, comma-separated; how many.

    A large string value goes in as a fragment of its own, so its bytes are
    copied once more (when the request is joined), not at every level.
    """
    if not attrs:
        return 0
    attrs = getattr(attrs, "_dict", attrs)  # BoundedAttributes: iterate its dict, no lock
    pairs = rule.pairs
    keys = rule.keys
    append = out.append
    n = 0
    for key, value in attrs.items():
        t = type(value)
        small = (
            (t is str and len(value) <= 64)
            or t is bool
            or t is int
            or (t is float and value != 0.0 and value == value)  # -0.0 == 0.0, NaN never hits
        )
        if small:
            hit = pairs.get((key, t, value))
            if hit is not None:
                append("," + hit if n else hit)
                n += 1
                continue
        name = key
        try:
            if t is str:
                body = _str(value)
            elif (
                t is bytes
                and blobs is not None
                and max_inline is not None
                and len(value) > max_inline
                and key.startswith(A.BYTES)
            ):
                name = A.REF + key[len(A.BYTES) :]
                body = '{"stringValue":' + _str(blobs.put(value)) + "}"
            else:
                body = _any(value)
            head = keys.get(name)
            if head is None:
                if len(keys) > _CACHE_MAX:
                    keys.clear()
                head = keys[name] = ('{"key":' + _str(name) + ',"value":') if name else '{"value":'
            if t is str:
                head += '{"stringValue":'
                tail = "}}"
            else:
                tail = "}"
            if checked:
                (head + body).encode("utf-8")  # a lone surrogate: skipped, as encode_spans does
        except (TypeError, ValueError) as exc:
            _skip(key, exc)
            continue
        if n:
            head = "," + head
        n += 1
        if len(body) > 512:
            out += (head, body, tail)
            continue
        field = head + body + tail
        if small:
            if len(pairs) > _CACHE_MAX:
                pairs.clear()
            pairs[(key, t, value)] = field.lstrip(",")
        append(field)
    return n


def _attributes_field(
    out: list[str],
    sep: str,
    attrs: Mapping[str, Any] | None,
    rule: _Rule,
    checked: bool,
    max_inline: int | None = None,
    blobs: Blobs | None = None,
) -> str:
    """``"attributes":[...]`` after ``sep`` when any attribute is left; the next separator."""
    if not attrs:
        return sep
    mark = len(out)
    out.append(sep + '"attributes":[')
    if _attributes(out, attrs, rule, checked, max_inline, blobs):
        out.append("]")
        return ","
    del out[mark:]
    return sep


def _resource_block(resource: Any, rule: _Rule, checked: bool) -> str:
    hit = rule.blocks.get(id(resource))
    if hit is not None and hit[0] is resource:
        return hit[1]
    out = ['"resource":{']
    _attributes_field(out, "", resource.attributes, rule, checked)
    out.append("}")
    data = "".join(out)
    _remember(rule, resource, data)
    return data


def _scope_block(scope: Any, rule: _Rule, checked: bool) -> str:
    if scope is None:
        return '"scope":{}'
    hit = rule.blocks.get(id(scope))
    if hit is not None and hit[0] is scope:
        return hit[1]
    out = ['"scope":{']
    sep = ""
    if scope.name:
        out.append('"name":' + _str(scope.name))
        sep = ","
    if scope.version:
        out.append(sep + '"version":' + _str(scope.version))
        sep = ","
    _attributes_field(out, sep, scope.attributes, rule, checked)
    out.append("}")
    data = "".join(out)
    if checked:
        data.encode("utf-8")
    _remember(rule, scope, data)
    return data


def _remember(rule: _Rule, obj: object, data: str) -> None:
    if len(rule.blocks) > 256:
        rule.blocks.clear()
    rule.blocks[id(obj)] = (obj, data)


def _span(
    span: ReadableSpan,
    rule: _Rule,
    checked: bool,
    max_inline: int | None,
    blobs: Blobs | None,
) -> list[str]:
    """One span object, as fragments, with the fields ``encode_request`` writes for it."""
    ctx = span.get_span_context()
    if ctx is None:
        raise ValueError(f"span {span.name!r} has no span context")
    head = []
    if ctx.trace_id:
        head.append(f'"traceId":"{ctx.trace_id:032x}"')
    if ctx.span_id:
        head.append(f'"spanId":"{ctx.span_id:016x}"')
    if ctx.trace_state:
        head.append(
            '"traceState":' + _str(",".join([f"{k}={v}" for k, v in ctx.trace_state.items()]))
        )
    parent = span.parent
    if parent and parent.span_id:
        head.append(f'"parentSpanId":"{parent.span_id:016x}"')
    head.append(_FLAGS_REMOTE if parent is not None and parent.is_remote else _FLAGS_LOCAL)
    if span.name:
        head.append('"name":' + _str(span.name))
    head.append(_KIND[span.kind])
    if span.start_time:
        head.append(f'"startTimeUnixNano":"{span.start_time}"')
    if span.end_time:
        head.append(f'"endTimeUnixNano":"{span.end_time}"')
    if checked:
        ",".join(head).encode("utf-8")  # a name with a lone surrogate: the span cannot go
    out = ["{" + ",".join(head)]
    attrs = getattr(span, "_attributes", None)  # the mapping ReadableSpan.attributes wraps
    if attrs is None:
        attrs = span.attributes
    _attributes_field(out, ",", attrs, rule, checked, max_inline, blobs)
    if span.dropped_attributes:
        out.append(f',"droppedAttributesCount":{span.dropped_attributes}')
    if span.events:
        sep = ',"events":['
        for event in span.events:
            out.append(sep + "{")
            sep = ","
            inner = ""
            if event.timestamp:
                out.append(f'"timeUnixNano":"{event.timestamp}"')
                inner = ","
            if event.name:
                if checked:
                    event.name.encode("utf-8")
                out.append(inner + '"name":' + _str(event.name))
                inner = ","
            inner = _attributes_field(
                out, inner, event.attributes, rule, checked, max_inline, blobs
            )
            if event.dropped_attributes:
                out.append(f'{inner}"droppedAttributesCount":{event.dropped_attributes}')
            out.append("}")
        out.append("]")
    if span.dropped_events:
        out.append(f',"droppedEventsCount":{span.dropped_events}')
    if span.links:
        sep = ',"links":['
        for link in span.links:
            lc = link.context
            ids = []
            if lc.trace_id:
                ids.append(f'"traceId":"{lc.trace_id:032x}"')
            if lc.span_id:
                ids.append(f'"spanId":"{lc.span_id:016x}"')
            out.append(sep + "{" + ",".join(ids))
            sep = ","
            inner = _attributes_field(out, "," if ids else "", link.attributes, rule, checked)
            if link.dropped_attributes:
                out.append(f'{inner}"droppedAttributesCount":{link.dropped_attributes}')
                inner = ","
            out.append(inner + (_FLAGS_REMOTE if lc.is_remote else _FLAGS_LOCAL) + "}")
        out.append("]")
    if span.dropped_links:
        out.append(f',"droppedLinksCount":{span.dropped_links}')
    status = span.status
    parts = []
    if status is not None:
        if status.description:
            if checked:
                status.description.encode("utf-8")
            parts.append('"message":' + _str(status.description))
        if status.status_code.value:
            parts.append(f'"code":{status.status_code.value}')
    out.append(',"status":{' + ",".join(parts) + "}}")
    return out


def encode_json_request(
    spans: Sequence[ReadableSpan],
    *,
    max_inline: int | None = None,
    blobs: Blobs | None = None,
) -> bytes:
    """``spans`` as one OTLP/JSON ``ExportTraceServiceRequest``, without a newline.

    The same request :func:`~otel_replay.otlp.proto_writer.encode_request` writes
    in protobuf (see there for ``max_inline`` and ``blobs``),
    in the bytes pdata's ``JSONMarshaler`` would write for it.
    """
    try:
        return "".join(_encode(spans, max_inline, blobs, checked=False)).encode()
    except UnicodeEncodeError:
        # A lone surrogate somewhere: find it, skip that attribute (or raise for a
        # name), as the protobuf encoder does.  Rare, so the common path never checks.
        return "".join(_encode(spans, max_inline, blobs, checked=True)).encode()


def _encode(
    spans: Sequence[ReadableSpan],
    max_inline: int | None,
    blobs: Blobs | None,
    checked: bool,
) -> list[str]:
    # The fast path may have cached text that cannot be encoded: check with fresh caches.
    rule = _Rule() if checked else _RULE
    root = _Group(None)
    for span in spans:
        fragments = _span(span, rule, checked, max_inline, blobs)
        group = root.child(span.resource).child(span.instrumentation_scope or None)
        group.pieces.append(fragments)
    out = ['{"resourceSpans":[']
    for i, rg in enumerate(root.subgroups):
        resource = rg.key
        out.append(("{" if i == 0 else ",{") + _resource_block(resource, rule, checked))
        for j, sg in enumerate(rg.subgroups):
            scope = sg.key
            out.append(
                (',"scopeSpans":[{' if j == 0 else ",{") + _scope_block(scope, rule, checked)
            )
            for k, fragments in enumerate(sg.pieces):
                out.append(',"spans":[' if k == 0 else ",")
                out += fragments
            out.append("]")
            if scope is not None and scope.schema_url:
                out.append(',"schemaUrl":' + _str(scope.schema_url))
            out.append("}")
        out.append("]")
        if resource.schema_url:
            out.append(',"schemaUrl":' + _str(resource.schema_url))
        out.append("}")
    out.append("]}")
    return out
