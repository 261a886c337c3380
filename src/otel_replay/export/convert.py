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

Faults in the input are collected as :class:`~otel_replay.store.errors.FormatError`
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

from ..blobs import BlobStore, BlobUnavailable
from ..store import phoenix
from ..store.errors import FormatError, OtherSignal
from ..store.limits import MAX_NESTING
from ..store.otlp_json import JsonShapeError, request_from_json
from ..store.otlp_proto import Request, parse_request
from ..store.reader import ZSTD_MAGIC, Reader, _decompress_zstd
from ..store.records import LogRecord, Record, SpanRecord
from ..store.sources import expand, is_stream, rotated_from
from .file_exporter import COMPRESSIONS, FORMATS, frame
from .json_encoder import request_to_json

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
            body = _decompress_zstd(body, self.path, offset)
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
            raise OtherSignal(
                self.path, offset, "not OTLP trace or log data (metrics?): bad span ids"
            )
        return [request]

    def _from_doc(self, doc: Any, offset: int) -> list[Request]:
        return [request_from_json(doc)]

    def _from_phoenix(self, data: bytes) -> Iterator[Request]:
        from .encoder import encode_request
        from .readable_spans import readable_spans

        spans = list(readable_spans(phoenix.spans_from_response(data, self.path, self._keep)))
        if spans:
            yield parse_request(encode_request(spans), self.path, 0)

    def _from_records(self, records: Iterable[Record]) -> Iterator[Request]:
        from .encoder import encode_request
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


@dataclasses.dataclass
class ConvertSummary:
    requests: int = 0
    spans: int = 0
    log_records: int = 0
    blobs: int = 0
    output: str = ""


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
    sources: Iterable[BlobStore], target: BlobStore, problems: list[FormatError]
) -> int:
    """Copy the blobs of ``sources`` into ``target``; how many were new.

    Each is read as a load reads it (see :mod:`otel_replay.blobs`): a blob
    refused there is reported in ``problems`` and not copied.
    """
    copied = 0
    for source in sources:
        if os.path.realpath(source.root) == os.path.realpath(target.root):
            continue
        try:
            digests = source.digests()
        except BlobUnavailable as exc:
            problems.append(FormatError(exc.path, 0, f"{exc.noun} {exc.reason}"))
            continue
        for digest in digests:
            if target.holds(digest):
                continue  # content-addressed: the same name holds the same bytes
            try:
                data = source.get("sha256:" + digest)
            except BlobUnavailable as exc:
                problems.append(FormatError(exc.path, 0, f"{exc.noun} {exc.reason}"))
                continue
            if data is not None:
                target.put(data)
                copied += 1
    return copied


def convert(
    inputs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str],
    *,
    format: str = "proto",  # the Collector's name for it
    compression: str | None = None,
    problems: list[FormatError] | None = None,
) -> ConvertSummary:
    """Write every request of ``inputs`` to ``output`` (``-``: stdout) in ``format``.

    Input faults are appended to ``problems`` (the conversion goes on with
    the next input); raises ``ValueError`` for unknown settings or an output
    that is also an input, ``OSError`` when the output cannot be written.  A
    file output is written beside itself and renamed into place when done.
    """
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
    summary = ConvertSummary(output=out)
    found = problems if problems is not None else []
    compressor = None
    if compression == "zstd":
        import zstandard

        compressor = zstandard.ZstdCompressor()
    encode: Callable[[Request], bytes] = (
        request_to_json if format == "json" else lambda r: r.SerializeToString()
    )

    def write_all(sink: IO[bytes]) -> None:
        for name in names:
            reader = MessageReader(name)
            for request in reader:
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
        with os.fdopen(fd, "wb") as sink:
            write_all(sink)
        # Blobs first, as the exporter writes them: no reference without its blob.
        summary.blobs = _copy_blobs(
            (b for name in names if not is_stream(name) for b in _blob_sources(name)),
            BlobStore(out),
            found,
        )
        os.chmod(tmp, 0o644)
        os.replace(tmp, out)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return summary
