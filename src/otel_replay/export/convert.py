"""Convert stored spans and log records between the Collector's dump formats.

Whatever the reader reads (our files, Collector dumps in either format and
compression, OTLP/JSON documents, protobuf streams, stdin, URLs) goes out as
the Collector's file exporter would have written it: ``proto`` (4-byte
length + request) or ``json`` (one OTLP/JSON request per line, the bytes
pdata writes), each record zstd-compressed inside the length prefix with
``zstd``.  Requests are converted one to one, with everything in them (trace
state, flags, dropped counts, schema URLs): a batch stays a batch, and
converting back gives the same requests.  Payload blobs beside an input are
copied beside the output, so converted recordings still load byte-exact
payloads.

Secrets are hidden on the way, as :class:`~otel_replay.FileSpanExporter`
hides them in spans no processor saw (:mod:`otel_replay.export.scrub`): a
file from elsewhere (a Collector dump, another instrumentation's OTLP/JSON)
may hold them anywhere.  Span and event names, attributes of spans, events,
links, resources and scopes, scope names and versions, schema URLs, trace
states, status descriptions, log bodies; our own payloads and blobs too.  Fields
this version of OTLP does not know (a newer protocol's, or bytes planted in a
protobuf record) are not written: nothing can tell whether they hold a secret,
so a ``proto`` output holds what a ``json`` one does.  A
file our processor wrote is scrubbed again: nothing in a file proves who
wrote it, and redaction is idempotent (a scrubbed file converts to the same
requests).  A payload that changes keeps its companions true to it (the
digest of the bytes kept, a scrubbed blob under its own digest) and its key
goes in ``otel_replay.redacted``, as capture writes a payload it scrubbed.

Faults in the input are collected as :class:`~otel_replay.otlp.errors.FormatError`
(file and byte offset); every good request before a fault is converted, and
JSON lines resume at the next line.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import IO, Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest

from .. import attributes as A
from ..limits import MAX_NESTING
from ..otlp.bounded import decompress_zstd
from ..otlp.errors import FormatError
from ..otlp.framing import frame
from ..otlp.json_reader import JsonShapeError, request_from_json
from ..otlp.json_writer import request_to_json
from ..otlp.proto_reader import Request, any_value, bad_ids, parse_request
from ..otlp.proto_reader import attributes as proto_attributes
from ..otlp.records import LogRecord, Record, SpanRecord
from ..otlp.sniff import ZSTD_MAGIC
from ..payload import codec as payload
from ..payload.blobs import BlobStore, BlobUnavailable
from ..redaction import Redactor, redactor
from ..sources import phoenix
from ..sources.files import expand, is_stream, rotated_from
from ..sources.reader import Reader
from .file_exporter import COMPRESSIONS, FORMATS, format_for
from .scrub import (
    REMOVED,
    STATUS,
    attribute_changes,
    hidden_name,
    hidden_text,
    redacted,
)

__all__ = ["ConvertSummary", "MessageReader", "convert"]


def _int_keeping_sign(text: str) -> int | float:
    # Go writes a negative zero double as -0; int("-0") would lose its sign.
    return -0.0 if text == "-0" else int(text)


def _bad_ids(request: Request) -> bool:
    """Whether any id has a length no span or log record has (metrics parsed as traces)."""
    if isinstance(request, ExportLogsServiceRequest):
        return any(
            len(r.trace_id) not in (0, 16) or len(r.span_id) not in (0, 8)
            for rl in request.resource_logs
            for sl in rl.scope_logs
            for r in sl.log_records
        )
    return any(
        len(s.trace_id) not in (0, 16)
        or len(s.span_id) not in (0, 8)
        or len(s.parent_span_id) not in (0, 8)
        for rs in request.resource_spans
        for ss in rs.scope_spans
        for s in ss.spans
    )


#: Spans per request made from a database's rows.
SPANS_PER_REQUEST = 1000


class MessageReader(Reader[Request]):
    """The protobuf requests of one input, nothing left out (see the module docstring).

    Each framed message, JSON line or JSON document becomes the
    ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest`` it stands
    for; a Phoenix REST answer becomes one request of its spans, a database's records
    requests of at most :data:`SPANS_PER_REQUEST` records.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        super().__init__(path)

    def _loads(self, data: bytes) -> Any:
        return json.loads(data, parse_int=_int_keeping_sign)

    def _from_body(
        self, body: bytes, offset: int, keep: Callable[[str], bool] | None
    ) -> list[Request]:
        if body[:4] == ZSTD_MAGIC:
            body = decompress_zstd(body, self.path, offset)
        if body.lstrip()[:1] == b"{":
            try:
                doc = self._loads(body)
            except ValueError as exc:
                raise FormatError(self.path, offset, f"not JSON ({exc})") from exc
            try:
                return [request_from_json(doc)]
            except JsonShapeError as exc:
                raise FormatError(self.path, offset, str(exc)) from exc
        return self._from_proto(body, offset, keep)

    def _from_proto(
        self, data: bytes, offset: int, keep: Callable[[str], bool] | None
    ) -> list[Request]:
        request = parse_request(data, self.path, offset)
        if _bad_ids(request):
            raise bad_ids(request, self.path, offset)
        return [request]

    def _from_doc(self, doc: Any, offset: int) -> list[Request]:
        return [request_from_json(doc)]

    def _from_phoenix(self, data: bytes) -> Iterator[Request]:
        # The encoder and the SDK's spans only for input that is not OTLP already.
        from ..otlp.proto_writer import encode_request
        from .readable_spans import readable_spans

        spans = list(readable_spans(phoenix.spans_from_response(data, self.path, self._keep)))
        if spans:
            yield parse_request(encode_request(spans), self.path, 0)

    def _from_records(self, records: Iterable[Record]) -> Iterator[Request]:
        # The encoder and the SDK's spans only for input that is not OTLP already.
        from ..otlp.proto_writer import encode_request
        from .readable_spans import readable_spans

        left = iter(records)
        while batch := list(itertools.islice(left, SPANS_PER_REQUEST)):
            spans = [r for r in batch if isinstance(r, SpanRecord)]
            if spans:
                yield parse_request(encode_request(list(readable_spans(spans))), self.path, 0)
            logs = [r for r in batch if isinstance(r, LogRecord)]
            if logs:
                yield logs_request(logs)


def logs_request(records: Sequence[LogRecord]) -> ExportLogsServiceRequest:
    """The OTLP request of ``records``: one ``ResourceLogs`` per resource, one
    ``ScopeLogs`` per scope in it."""
    request = ExportLogsServiceRequest()
    scopes: dict[tuple[str, str, str], Any] = {}
    resources: dict[str, Any] = {}
    for r in records:
        held = repr(sorted(r.resource.items()))
        if held not in resources:
            resources[held] = request.resource_logs.add()
            _fill_attributes(resources[held].resource.attributes, r.resource)
        key = (held, r.scope_name, r.scope_version)
        if key not in scopes:
            scopes[key] = resources[held].scope_logs.add()
            scopes[key].scope.name, scopes[key].scope.version = r.scope_name, r.scope_version
        out = scopes[key].log_records.add()
        out.time_unix_nano = r.time_ns
        out.trace_id = bytes.fromhex(r.trace_id)
        out.span_id = bytes.fromhex(r.span_id)
        out.event_name = r.event_name
        out.severity_number = r.severity_number
        out.severity_text = r.severity_text
        _fill_value(out.body, r.body)
        _fill_attributes(out.attributes, r.attributes)
    return request


def _fill_attributes(target: Any, values: dict[str, Any]) -> None:
    for key, value in values.items():
        kv = target.add()
        kv.key = key
        _fill_value(kv.value, value)


def _fill_value(target: Any, value: Any, depth: int = 0) -> None:
    """An OTLP ``AnyValue`` of a record's plain value (None stays unset)."""
    if isinstance(value, bool):
        target.bool_value = value
    elif isinstance(value, int):
        target.int_value = value
    elif isinstance(value, float):
        target.double_value = value
    elif isinstance(value, str):
        target.string_value = value
    elif isinstance(value, (bytes, bytearray)):
        target.bytes_value = bytes(value)
    elif isinstance(value, list) and depth < MAX_NESTING:
        target.array_value.SetInParent()
        for item in value:
            _fill_value(target.array_value.values.add(), item, depth + 1)
    elif isinstance(value, dict) and depth < MAX_NESTING:
        target.kvlist_value.SetInParent()
        for key, item in value.items():
            kv = target.kvlist_value.values.add()
            kv.key = str(key)
            _fill_value(kv.value, item, depth + 1)


#: Blob references whose blob was scrubbed into another: the new reference and its size.
Moved = dict[str, tuple[str, int]]


def hide_in_request(request: Request, moved: Moved | None = None) -> None:
    """Hide the secrets of ``request`` in place (see the module docstring); ``moved``
    maps the reference of each blob scrubbed to its new one."""
    r = redactor()
    moves = moved or {}
    # What no field of this OTLP names is kept by protobuf as raw bytes and would be
    # written again as it came, unscrubbed: left out, at every depth.
    request.DiscardUnknownFields()
    logs = isinstance(request, ExportLogsServiceRequest)
    hide_in_item = _hide_in_log if logs else _hide_in_span
    for group in request.resource_logs if logs else request.resource_spans:
        _hide_in_attributes(group.resource.attributes, r, [], "", moves)
        group.schema_url = hidden_text(group.schema_url, r)
        for inner in group.scope_logs if logs else group.scope_spans:
            scope = inner.scope
            scope.name = hidden_text(scope.name, r)
            scope.version = hidden_text(scope.version, r)
            _hide_in_attributes(scope.attributes, r, [], "", moves)
            inner.schema_url = hidden_text(inner.schema_url, r)
            for item in inner.log_records if logs else inner.spans:
                hide_in_item(item, r, moves)


def _hide_in_span(span: Any, r: Redactor, moved: Moved) -> None:
    hidden: list[str] = []
    name = hidden_name(span.name, r, hidden)
    if name is not None:
        span.name = name
    span.trace_state = hidden_text(span.trace_state, r)
    for kind, items in (("events", span.events), ("links", span.links)):
        for i, item in enumerate(items):
            where = f"{kind}[{i}]"
            if kind == "events":
                clean = hidden_text(item.name, r)
                if clean is not item.name:
                    item.name = clean
                    hidden.append(where + " name")
            else:
                item.trace_state = hidden_text(item.trace_state, r)
            _hide_in_attributes(item.attributes, r, hidden, where + ".", moved)
    message = span.status.message
    clean = hidden_text(message, r)
    if clean is not message:
        span.status.message = clean
        hidden.append(STATUS)
    _hide_in_attributes(span.attributes, r, hidden, "", moved, mark=True)


def _hide_in_log(record: Any, r: Redactor, moved: Moved) -> None:
    hidden: list[str] = []
    record.event_name = hidden_text(record.event_name, r)
    record.severity_text = hidden_text(record.severity_text, r)
    if record.HasField("body"):
        body = any_value(record.body)
        clean = r.scrub(body, "body", hidden)
        if clean is not body and clean != body:
            record.body.Clear()
            _fill_value(record.body, clean)
    _hide_in_attributes(record.attributes, r, hidden, "", moved, mark=True)


def _hide_in_attributes(
    kvs: Any, r: Redactor, hidden: list[str], path: str, moved: Moved, mark: bool = False
) -> None:
    """Hide the secrets of OTLP attributes in place; with ``mark``, the paths ``hidden``
    so far and here are listed in their ``otel_replay.redacted``."""
    if not kvs and not (mark and hidden):
        return
    held = proto_attributes(kvs)
    changes = attribute_changes(held, r, hidden, path, stored=True, moved=moved)
    if mark and hidden:
        changes[A.REDACTED] = redacted(held, hidden, changes)
    if not changes:
        return
    for i in reversed(range(len(kvs))):
        kv = kvs[i]
        if kv.key in changes:
            value = changes[kv.key]
            if value is REMOVED:
                del kvs[i]
            else:
                kv.value.Clear()
                _fill_value(kv.value, value)
    for key, value in changes.items():
        if key not in held and value is not REMOVED:
            kv = kvs.add()
            kv.key = key
            _fill_value(kv.value, value)


@dataclasses.dataclass
class ConvertSummary:
    requests: int = 0
    spans: int = 0
    log_records: int = 0
    blobs: int = 0
    output: str = ""
    format: str = "proto"


def _counts(request: Request) -> tuple[int, int]:
    if isinstance(request, ExportLogsServiceRequest):
        return 0, sum(len(sl.log_records) for rl in request.resource_logs for sl in rl.scope_logs)
    return sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans), 0


def _blob_sources(name: str) -> list[BlobStore]:
    """Blob stores an input's references may point into: its own, and its live name's."""
    stores = [BlobStore(name)]
    live = rotated_from(name)
    if live is not None:
        stores.append(BlobStore(live))
    return stores


def _copy_blobs(
    sources: Iterable[BlobStore], target: BlobStore, problems: list[FormatError], moved: Moved
) -> int:
    """Copy the blobs of ``sources`` into ``target``, scrubbed; how many were new.

    Each is read as a load reads it (see :mod:`otel_replay.payload.blobs`): a blob
    refused there is reported in ``problems`` and not copied.  A blob that
    held a secret is kept scrubbed, under its own digest: ``moved`` maps its
    reference to the new one (and its size) for the spans that name it.
    """
    r = redactor()
    copied = 0
    for source in sources:
        if os.path.realpath(source.root) == os.path.realpath(target.root):
            continue
        try:
            digests = source.digests()
        except BlobUnavailable as exc:
            problems.append(FormatError.whole(exc.path, f"{exc.noun} {exc.reason}"))
            continue
        for digest in digests:
            # Read even when the target holds one of its name: a blob that held a secret
            # is not there, but the spans naming it must name the scrubbed one.
            try:
                data = source.get("sha256:" + digest)
            except BlobUnavailable as exc:
                problems.append(FormatError.whole(exc.path, f"{exc.noun} {exc.reason}"))
                continue
            if data is None:
                continue
            clean = r.data(data)
            if clean is not data:
                moved["sha256:" + digest] = ("sha256:" + payload.sha256(clean), len(clean))
            elif target.holds(digest):
                continue  # content-addressed: the same name holds the same bytes
            if not target.holds(payload.sha256(clean)):
                target.put(clean)
                copied += 1
    return copied


def convert(
    inputs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    format: str | None = None,  # the Collector's name for it; None: as the output's name says
    compression: str | None = None,
    problems: list[FormatError] | None = None,
) -> ConvertSummary:
    """Write every request of ``inputs`` to ``output`` (``-``: stdout) in ``format``
    (by default the one the output's name says: JSON lines for ``runs.json``, else proto).

    Input faults are appended to ``problems`` (the conversion goes on with
    the next input); raises ``ValueError`` for unknown settings or an output
    that is also an input, ``OSError`` when the output cannot be written.  A
    file output is written beside itself and renamed into place when done.
    """
    named = format_for(output) if os.fspath(output) != "-" else None
    if format is None:
        format = named or "proto"
    elif named is not None and named != format:
        raise ValueError(f"{os.fspath(output)} names {named.upper()}, not --format {format}")
    if format not in FORMATS:
        raise ValueError(f"unknown format {format!r} (use {' or '.join(FORMATS)})")
    if compression is not None and compression not in COMPRESSIONS:
        raise ValueError(f"unknown compression {compression!r} (use zstd)")
    out = os.fspath(output)
    names = expand(inputs)
    if out != "-":
        real = os.path.realpath(out)
        for name in names:
            if not is_stream(name) and os.path.realpath(name) == real:
                raise ValueError(f"{out} is also an input; write the conversion elsewhere")
    summary = ConvertSummary(output=out, format=format)
    found = problems if problems is not None else []
    compressor = None
    if compression == "zstd":
        # lazy: only a zstd-compressed file needs it
        import zstandard

        compressor = zstandard.ZstdCompressor()
    encode: Callable[[Request], bytes] = (
        request_to_json if format == "json" else lambda r: r.SerializeToString()
    )

    moved: Moved = {}

    def write_all(sink: IO[bytes]) -> None:
        for name in names:
            reader = MessageReader(name)
            for number, request in enumerate(reader):
                try:
                    hide_in_request(request, moved)
                except Exception as exc:  # never written unscrubbed: it costs only itself
                    why = f"left out, its secrets could not be hidden ({type(exc).__name__})"
                    found.append(FormatError(name, number, why, unit="request"))
                    continue
                sink.write(frame(encode(request), format, compression, compressor))
                spans, logs = _counts(request)
                summary.requests += 1
                summary.spans += spans
                summary.log_records += logs
            found.extend(reader.problems)

    if out == "-":
        write_all(sys.stdout.buffer)
        sys.stdout.buffer.flush()
        return summary
    directory = os.path.dirname(out) or "."
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(out)}.", dir=directory)
    try:
        # Blobs first, as the exporter writes them: no reference without its blob (and
        # the references of blobs scrubbed are known before the spans are written).
        summary.blobs = _copy_blobs(
            (b for name in names if not is_stream(name) for b in _blob_sources(name)),
            BlobStore(out),
            found,
            moved,
        )
        with os.fdopen(fd, "wb") as sink:
            write_all(sink)
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return summary
