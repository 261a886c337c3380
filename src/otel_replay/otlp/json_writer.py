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

- :func:`encode_json_request` (:mod:`~otel_replay.otlp.json_spans`) takes SDK
  spans and makes the same choices as
  :func:`~otel_replay.otlp.proto_writer.encode_request` (grouping,
  large payloads to the blob store, attributes skipped): its output is, byte
  for byte, :func:`request_to_json` of the message ``encode_request`` writes.
- :func:`request_to_json` takes a protobuf request of either signal (traces
  or logs, ``Export*ServiceRequest`` or ``*Data``).

The scalars' rules are in :mod:`~otel_replay.otlp.json_scalars`.
``google.protobuf.json_format`` is not used: it writes ids as base64, enums as
names, other field spellings and number formats, and is several times slower.
"""

from __future__ import annotations

from typing import Any

from .json_scalars import _bytes, _kv, _str, _str_legacy, format_double
from .json_spans import encode_json_request

__all__ = ["encode_json_request", "format_double", "request_to_json"]


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
