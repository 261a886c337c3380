"""Streaming reader of length-prefixed OTLP trace files.

The framing is the Collector ``fileexporter``'s ``format: proto``: each
record is a 4-byte big-endian length followed by a serialized
``ExportTraceServiceRequest``.  Records are read one at a time, so memory
does not grow with the file.  A torn or corrupt record stops the read; it is
reported (file and byte offset) in :attr:`SpanReader.problems` and every
record before it is kept.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from typing import Any

from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .errors import FormatError
from .records import EventRecord, SpanRecord

_HEADER = struct.Struct(">I")
#: A record larger than this is taken for garbage rather than allocated.
MAX_RECORD = 1 << 30


def iter_records(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, message bytes)``; raises :class:`FormatError` at a bad record."""
    name = os.fspath(path)
    size = os.path.getsize(name)
    with open(name, "rb") as f:
        offset = 0
        while True:
            header = f.read(4)
            if not header:
                return
            if len(header) < 4:
                raise FormatError(name, offset, f"truncated record: {len(header)}-byte header")
            (length,) = _HEADER.unpack(header)
            if length > MAX_RECORD or (
                offset == 0 and length > size - 4 and _looks_like_text(header)
            ):
                raise FormatError(
                    name, offset, f"not an OTLP protobuf trace file (record length {length})"
                )
            body = f.read(length)
            if len(body) < length:
                raise FormatError(
                    name,
                    offset,
                    f"truncated record: header says {length} bytes, {len(body)} present",
                )
            yield offset, body
            offset += 4 + length


def _looks_like_text(header: bytes) -> bool:
    return all(32 <= b < 127 or b in (9, 10, 13) for b in header)


def any_value(v: Any) -> Any:
    """OTLP ``AnyValue`` to a Python value."""
    kind = v.WhichOneof("value")
    if kind == "string_value":
        return v.string_value
    if kind == "int_value":
        return v.int_value
    if kind == "bool_value":
        return v.bool_value
    if kind == "double_value":
        return v.double_value
    if kind == "bytes_value":
        return bytes(v.bytes_value)
    if kind == "array_value":
        return [any_value(x) for x in v.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: any_value(kv.value) for kv in v.kvlist_value.values}
    return None


def attributes(kvs: Any) -> dict[str, Any]:
    return {kv.key: any_value(kv.value) for kv in kvs}


class SpanReader:
    """Iterate the spans of one file; faults land in :attr:`problems`."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.problems: list[FormatError] = []

    def __iter__(self) -> Iterator[SpanRecord]:
        try:
            for offset, body in iter_records(self.path):
                try:
                    request = ExportTraceServiceRequest.FromString(body)
                except DecodeError as exc:
                    raise FormatError(self.path, offset, f"corrupt record ({exc})") from exc
                yield from self._spans(request)
        except FormatError as exc:
            self.problems.append(exc)
        except OSError as exc:
            self.problems.append(FormatError(self.path, 0, f"cannot read ({exc.strerror or exc})"))

    def _spans(self, request: Any) -> Iterator[SpanRecord]:
        for rs in request.resource_spans:
            resource = attributes(rs.resource.attributes)
            for ss in rs.scope_spans:
                scope_name, scope_version = ss.scope.name, ss.scope.version
                for s in ss.spans:
                    yield SpanRecord(
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_span_id=s.parent_span_id.hex() or None,
                        name=s.name,
                        kind=s.kind,
                        start_ns=s.start_time_unix_nano,
                        end_ns=s.end_time_unix_nano,
                        attributes=attributes(s.attributes),
                        events=[
                            EventRecord(e.name, e.time_unix_nano, attributes(e.attributes))
                            for e in s.events
                        ],
                        status_code=s.status.code,
                        status_message=s.status.message,
                        resource=resource,
                        scope_name=scope_name,
                        scope_version=scope_version,
                        source=self.path,
                    )
