"""OTLP/JSON written by hand, byte for byte as the Collector writes it.

The Collector's ``fileexporter`` with ``format: json`` writes what pdata's
``JSONMarshaler`` makes of each request: one compact object, fields in the
order the ``.proto`` files declare them, lowerCamelCase names, trace and span
ids as lowercase hex, 64-bit integers as decimal strings, enums as numbers,
bytes as standard base64, doubles as Go prints them (``"NaN"``,
``"Infinity"``, ``"-Infinity"`` as strings), strings escaped as json-iterator
escapes them (no HTML escaping).  Zero values are left out, except the
messages pdata always writes: a ``resource``, a ``scope``, a span's
``status``, a key/value's ``value`` and a log record's ``body``.

Two front ends share those rules:

- :func:`encode_json_request` takes SDK spans and makes the same choices as
  :func:`~otel_replay.otlp.proto_writer.encode_request` (grouping,
  large payloads to the blob store, attributes skipped): its output is, byte
  for byte, :func:`request_to_json` of the message ``encode_request`` writes.
- :func:`request_to_json` takes a protobuf request of either signal (traces
  or logs, ``Export*ServiceRequest`` or ``*Data``).

``google.protobuf.json_format`` is not used: it writes ids as base64, enums as
names, other field spellings and number formats, and is several times slower.
"""

from __future__ import annotations

import base64
import json.encoder
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from .. import attributes as A
from ..payload.blobs import Blobs
from .proto_writer import _Group, _skip

__all__ = ["encode_json_request", "format_double", "request_to_json"]


_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1
_INF = float("inf")

# --- scalars -------------------------------------------------------------------------

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


# --- SDK spans -----------------------------------------------------------------------------

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


def _int(value: int) -> str:
    if value < _INT64_MIN or value > _INT64_MAX:
        raise ValueError(f"integer {value} does not fit in int64")
    return '{"intValue":"' + str(value) + '"}'


def _kv(key: str, value_json: str, esc: Callable[[str], str] = _str) -> str:
    if key:
        return '{"key":' + esc(key) + ',"value":' + value_json + "}"
    return '{"value":' + value_json + "}"


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


# --- protobuf requests ---------------------------------------------------------------------


class _Writer:
    """Walks a protobuf request; ``legacy`` writes as pdata did through gogo/jsonpb.

    That older marshaler (Collector releases before pdata's generated JSON
    code) wrote an empty trace, span or parent span id as ``""`` instead of
    leaving it out, and escaped strings as Go's encoding/json does (``<``,
    ``>``, ``&``, U+2028 and U+2029 too).  Everything else is the same.
    """

    def __init__(self, legacy: bool = False) -> None:
        self.legacy = legacy
        self.str = _str_legacy if legacy else _str

    def id_field(self, name: str, value: bytes) -> str | None:
        if value.strip(b"\0"):
            return f'"{name}":"{value.hex()}"'
        return f'"{name}":""' if self.legacy else None

    def any(self, v: Any) -> str:
        kind = v.WhichOneof("value")
        if kind == "string_value":
            return '{"stringValue":' + self.str(v.string_value) + "}"
        if kind == "int_value":
            return '{"intValue":"' + str(v.int_value) + '"}'
        if kind == "bool_value":
            return '{"boolValue":true}' if v.bool_value else '{"boolValue":false}'
        if kind == "double_value":
            return '{"doubleValue":' + format_double(v.double_value) + "}"
        if kind == "bytes_value":
            return '{"bytesValue":' + _bytes(v.bytes_value) + "}"
        if kind == "array_value":
            values = v.array_value.values
            if not values:
                return '{"arrayValue":{}}'
            return '{"arrayValue":{"values":[' + ",".join([self.any(x) for x in values]) + "]}}"
        if kind == "kvlist_value":
            kvs = v.kvlist_value.values
            if not kvs:
                return '{"kvlistValue":{}}'
            return '{"kvlistValue":{"values":[' + self.kvs(kvs) + "]}}"
        return "{}"

    def kvs(self, kvs: Any) -> str:
        esc = self.str
        return ",".join([_kv(kv.key, self.any(kv.value), esc) for kv in kvs])

    def attributes(self, fields: list[str], kvs: Any, dropped: int) -> None:
        if kvs:
            fields.append('"attributes":[' + self.kvs(kvs) + "]")
        if dropped:
            fields.append(f'"droppedAttributesCount":{dropped}')

    def resource(self, r: Any) -> str:
        fields: list[str] = []
        self.attributes(fields, r.attributes, r.dropped_attributes_count)
        refs = getattr(r, "entity_refs", ())
        if refs:
            fields.append('"entityRefs":[' + ",".join([self.entity_ref(e) for e in refs]) + "]")
        return '"resource":{' + ",".join(fields) + "}"

    def entity_ref(self, e: Any) -> str:
        fields = []
        if e.schema_url:
            fields.append('"schemaUrl":' + self.str(e.schema_url))
        if e.type:
            fields.append('"type":' + self.str(e.type))
        for name, values in (("idKeys", e.id_keys), ("descriptionKeys", e.description_keys)):
            if values:
                fields.append(f'"{name}":[' + ",".join([self.str(s) for s in values]) + "]")
        return "{" + ",".join(fields) + "}"

    def scope(self, s: Any) -> str:
        fields = []
        if s.name:
            fields.append('"name":' + self.str(s.name))
        if s.version:
            fields.append('"version":' + self.str(s.version))
        self.attributes(fields, s.attributes, s.dropped_attributes_count)
        return '"scope":{' + ",".join(fields) + "}"

    def span(self, s: Any) -> str:
        fields: list[str] = []
        add = fields.append
        for name, value in (("traceId", s.trace_id), ("spanId", s.span_id)):
            field = self.id_field(name, value)
            if field:
                add(field)
        if s.trace_state:
            add('"traceState":' + self.str(s.trace_state))
        field = self.id_field("parentSpanId", s.parent_span_id)
        if field:
            add(field)
        if s.flags:
            add(f'"flags":{s.flags}')
        if s.name:
            add('"name":' + self.str(s.name))
        if s.kind:
            add(f'"kind":{s.kind}')
        if s.start_time_unix_nano:
            add(f'"startTimeUnixNano":"{s.start_time_unix_nano}"')
        if s.end_time_unix_nano:
            add(f'"endTimeUnixNano":"{s.end_time_unix_nano}"')
        self.attributes(fields, s.attributes, s.dropped_attributes_count)
        if s.events:
            add('"events":[' + ",".join([self.event(e) for e in s.events]) + "]")
        if s.dropped_events_count:
            add(f'"droppedEventsCount":{s.dropped_events_count}')
        if s.links:
            add('"links":[' + ",".join([self.link(lk) for lk in s.links]) + "]")
        if s.dropped_links_count:
            add(f'"droppedLinksCount":{s.dropped_links_count}')
        status = []
        if s.status.message:
            status.append('"message":' + self.str(s.status.message))
        if s.status.code:
            status.append(f'"code":{s.status.code}')
        add('"status":{' + ",".join(status) + "}")
        return "{" + ",".join(fields) + "}"

    def event(self, e: Any) -> str:
        fields = []
        if e.time_unix_nano:
            fields.append(f'"timeUnixNano":"{e.time_unix_nano}"')
        if e.name:
            fields.append('"name":' + self.str(e.name))
        self.attributes(fields, e.attributes, e.dropped_attributes_count)
        return "{" + ",".join(fields) + "}"

    def link(self, lk: Any) -> str:
        fields = []
        for name, value in (("traceId", lk.trace_id), ("spanId", lk.span_id)):
            field = self.id_field(name, value)
            if field:
                fields.append(field)
        if lk.trace_state:
            fields.append('"traceState":' + self.str(lk.trace_state))
        self.attributes(fields, lk.attributes, lk.dropped_attributes_count)
        if lk.flags:
            fields.append(f'"flags":{lk.flags}')
        return "{" + ",".join(fields) + "}"

    def log_record(self, r: Any) -> str:
        fields: list[str] = []
        add = fields.append
        if r.time_unix_nano:
            add(f'"timeUnixNano":"{r.time_unix_nano}"')
        if r.observed_time_unix_nano:
            add(f'"observedTimeUnixNano":"{r.observed_time_unix_nano}"')
        if r.severity_number:
            add(f'"severityNumber":{r.severity_number}')
        if r.severity_text:
            add('"severityText":' + self.str(r.severity_text))
        add('"body":' + self.any(r.body))
        self.attributes(fields, r.attributes, r.dropped_attributes_count)
        if r.flags:
            add(f'"flags":{r.flags}')
        for name, value in (("traceId", r.trace_id), ("spanId", r.span_id)):
            field = self.id_field(name, value)
            if field:
                add(field)
        if r.event_name:
            add('"eventName":' + self.str(r.event_name))
        return "{" + ",".join(fields) + "}"

    def groups(
        self, groups: Any, scopes_name: str, scopes_attr: str, items_name: str, items_attr: str
    ) -> str:
        item = self.span if items_attr == "spans" else self.log_record
        out = []
        for group in groups:
            fields = [self.resource(group.resource)]
            scopes = []
            for sg in getattr(group, scopes_attr):
                parts = [self.scope(sg.scope)]
                items = getattr(sg, items_attr)
                if items:
                    parts.append(f'"{items_name}":[' + ",".join([item(x) for x in items]) + "]")
                if sg.schema_url:
                    parts.append('"schemaUrl":' + self.str(sg.schema_url))
                scopes.append("{" + ",".join(parts) + "}")
            if scopes:
                fields.append(f'"{scopes_name}":[' + ",".join(scopes) + "]")
            if group.schema_url:
                fields.append('"schemaUrl":' + self.str(group.schema_url))
            out.append("{" + ",".join(fields) + "}")
        return ",".join(out)


def request_to_json(request: Any, *, legacy: bool = False) -> bytes:
    """A protobuf OTLP request (traces or logs) as pdata's ``JSONMarshaler`` writes it.

    Takes ``ExportTraceServiceRequest``, ``TracesData``,
    ``ExportLogsServiceRequest`` or ``LogsData``; no newline is added.  With
    ``legacy``, as pdata wrote it before its generated JSON code (see
    :class:`_Writer`).
    """
    writer = _Writer(legacy)
    fields = request.DESCRIPTOR.fields_by_name
    if "resource_spans" in fields:
        groups = request.resource_spans
        if not groups:
            return b"{}"
        body = writer.groups(groups, "scopeSpans", "scope_spans", "spans", "spans")
        return ('{"resourceSpans":[' + body + "]}").encode("utf-8")
    if "resource_logs" in fields:
        groups = request.resource_logs
        if not groups:
            return b"{}"
        body = writer.groups(groups, "scopeLogs", "scope_logs", "logRecords", "log_records")
        return ('{"resourceLogs":[' + body + "]}").encode("utf-8")
    raise TypeError(f"not an OTLP traces or logs request: {request.DESCRIPTOR.full_name}")
