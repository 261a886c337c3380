"""Read stored spans and log records, whatever the file: the format is detected per file.

Framings of OTLP ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest``
messages (a file may mix the two signals; each message says which it is):

``be32``    4-byte big-endian length + message: our files, the Collector
            ``fileexporter`` with ``format: proto``
``varint``  varint length + message (protobuf's ``writeDelimitedTo``)
``single``  one bare message holding everything
``jsonl``   one OTLP/JSON request per line: the Collector's ``format: json``,
            the specification's file exporter
``json``    one pretty-printed OTLP/JSON document

Compression: gzip, or zstd as the Collector writes it — each framed message
compressed on its own (the default), or the whole file one zstd stream (the
``exporter.file.nativeCompression`` gate).  Records are read one at a time,
so memory does not grow with a plain file.  A fault is reported in
:attr:`RecordReader.problems` as a :class:`FormatError` naming the file and
byte offset (offsets inside a decompressed whole-file stream count
decompressed bytes).  A record or JSON line that cannot be read costs only
itself: reading resumes at the next one.  A fault in the framing (a torn
record, a length past the end) ends the read; every good record before it
is kept.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import zlib
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, Generic, TypeVar, cast

from google.protobuf.message import DecodeError

from .. import limits
from ..otlp import bounded, index
from ..otlp import envelopes as backends
from ..otlp.errors import FormatError, NoTraceData, OtherSignal
from ..otlp.json_reader import JsonShapeError, NotOtlpError, OtherSignalError, records_from_json
from ..otlp.proto_reader import records_from_proto
from ..otlp.records import LogRecord, Record
from ..otlp.sniff import (
    BINARY_KINDS,
    HEAD,
    UNFORESEEN,
    UTF8_BOM,
    ZSTD_MAGIC,
    Prefixed,
    decode_body,
    error_reason,
    first_line,
    iter_be32,
    iter_varint,
    looks_like_text,
    not_json_reason,
    parse_json,
    sniff,
)
from . import phoenix, progress

if TYPE_CHECKING:
    from .source import Source


T = TypeVar("T")


class Reader(Generic[T]):
    """Iterate what one :class:`~otel_replay.sources.source.Source` holds.

    The format of its bytes is detected and the framing undone here; what each
    message becomes (records, or the protobuf request itself) is up to the
    subclass.  A source that gives records itself (a database) gives them as
    they are.  Faults land in :attr:`problems`; :attr:`format` says what was
    detected.
    """

    def __init__(
        self,
        source: Source,
        trace_ids: Iterable[str] | None = None,
        index_as_of: tuple[int, int] | None = None,
    ) -> None:
        self.source = source
        self.path = source.name
        #: Read through the index of this stamp even if the dump grew since (see index.load).
        self.index_as_of = index_as_of
        self.problems: list[FormatError] = []
        self.format = ""
        #: Only spans of these traces (full ids or prefixes); a 4-byte framed file
        #: is then read through its trace index (built on first use).
        self.trace_ids = None if trace_ids is None else {t.lower() for t in trace_ids}
        self.used_index = False

    def _keep(self, trace_id: str) -> bool:
        wanted = self.trace_ids
        return wanted is None or trace_id in wanted or any(trace_id.startswith(w) for w in wanted)

    # --- what a message becomes --------------------------------------------------------

    def _from_body(
        self, body: bytes, offset: int, keep: Callable[[str], bool] | None
    ) -> Iterable[T]:
        """A framed message (protobuf or OTLP/JSON, maybe zstd-compressed)."""
        raise NotImplementedError

    def _from_proto(
        self, data: bytes, offset: int, keep: Callable[[str], bool] | None
    ) -> Iterable[T]:
        """One bare protobuf message."""
        raise NotImplementedError

    def _from_doc(self, doc: Any, offset: int) -> Iterable[T]:
        """One parsed OTLP/JSON document (raises :class:`JsonShapeError`)."""
        raise NotImplementedError

    def _from_phoenix(self, data: bytes) -> Iterable[T]:
        """A Phoenix REST answer."""
        raise NotImplementedError

    def _from_records(self, records: Iterable[Record]) -> Iterable[T]:
        """Span and log records a database gave (see :mod:`.clickhouse_spans`)."""
        raise NotImplementedError

    def _loads(self, data: bytes) -> Any:
        return json.loads(data)

    # --- reading ---------------------------------------------------------------------------

    def __iter__(self) -> Iterator[T]:
        source = self.source
        if not source.holds_bytes:
            yield from self._given()
            return
        try:
            file, size = source.open()
        except FormatError as exc:
            if not source.finds_nothing(exc.reason):  # else: a search that matched none
                self.problems.append(exc)
            return
        except OSError as exc:
            reason = f"cannot read ({exc.strerror or exc})"
            self.problems.append(FormatError.whole(self.path, reason))
            return
        try:
            yield from self._read(file, size)
        except OtherSignal as exc:
            self.problems.append(self._other_signal(exc))
        except FormatError as exc:
            self.problems.append(exc)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            self.problems.append(FormatError.whole(self.path, f"bad gzip stream ({exc})"))
        except OSError as exc:
            reason = f"cannot read ({exc.strerror or exc})"
            self.problems.append(FormatError.whole(self.path, reason))
        except UNFORESEEN as exc:
            # Input shaped in a way no check above foresaw: still the user's data
            # that is wrong, so it is reported, never raised.
            self.problems.append(
                FormatError.whole(self.path, f"unreadable input ({type(exc).__name__}: {exc})")
            )
        finally:
            file.close()

    def _other_signal(self, exc: OtherSignal) -> FormatError:
        """A file whose first record is another signal (metrics) holds that signal only: a
        fault of the file as a whole, no byte meant, and one a folder held beside the traces
        is passed over as any file holding no trace data is.  Met past the first record, it
        is said where."""
        if exc.offset != 0:
            return exc
        fault = NoTraceData if self.source.found else OtherSignal
        return fault.whole(self.path, exc.reason)

    def _given(self) -> Iterator[T]:
        """The records a source gives itself (a ClickHouse table: the traces asked for
        only, chosen by ClickHouse)."""
        try:
            yield from self._from_records(self.source.read_records(self.trace_ids, self.problems))
        except FormatError as exc:
            self.problems.append(exc)

    def _read(self, f: IO[bytes], size: int | None) -> Iterator[T]:
        # A dump's index lives beside it: only a plain file (not stdin or a URL) has one.
        file_size = size if self.source.local else None
        if self.trace_ids is not None and file_size is not None:
            # A current index means a 4-byte framed dump: no need to sniff it again.
            idx = index.load(self.path, self.index_as_of)
            if idx is not None and (yield from self._through_index(idx)):
                return
        head = first_line(f.read(HEAD) if size is None else f.read(min(HEAD, size)), f)
        if size is not None:
            kind = sniff(head, f, size)
            f.seek(0)
        else:
            kind = sniff(head, None, None)
            f = io.BufferedReader(Prefixed(head, f), buffer_size=HEAD)
        self.format = (self.format + "+" if self.format else "") + kind
        name = self.path
        if kind == "empty":
            return
        if kind in BINARY_KINDS and self.source.found and looks_like_text(head):
            # A folder's LICENSE starts with a line end: 0x0a, protobuf field 1's tag.
            raise NoTraceData.whole(name, "text, not OTLP trace or log data")
        if kind in ("json", "jsonl") and phoenix.looks_like(head):  # a backend's REST answer
            yield from self._from_phoenix(self._whole(f, size, "answer"))
            return
        if kind == "gzip":
            unzipped = gzip.GzipFile(fileobj=f)
            try:
                yield from self._read(cast(IO[bytes], unzipped), None)
            except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
                reason = f"bad gzip stream ({exc})"
                raise FormatError(name, _position(unzipped), reason) from exc
        elif kind == "zstd":
            # lazy: only a zstd-compressed file needs it
            import zstandard

            stream = zstandard.ZstdDecompressor().stream_reader(f, read_across_frames=True)
            try:
                yield from self._read(stream, None)
            except zstandard.ZstdError as exc:
                raise FormatError(name, _position(stream), f"bad zstd stream ({exc})") from exc
        elif kind == "jsonl":
            yield from self._json_lines(f, size)
        elif kind == "json":
            data = self._whole(f, size, "JSON document")
            try:
                doc = parse_json(data, self._loads)
            except ValueError as exc:
                pos = getattr(exc, "pos", 0)
                raise FormatError(name, pos, not_json_reason(exc)) from exc
            docs = doc if isinstance(doc, list) else [doc]
            for i, d in enumerate(docs):  # a document that is not OTLP costs only itself
                try:
                    records = self._whole_doc(d, 0)
                except OtherSignalError as exc:
                    raise OtherSignal.whole(name, str(exc)) from exc
                except NotOtlpError as exc:
                    if i == 0:
                        self._pass_over_json(exc)
                    self.problems.append(FormatError.whole(name, error_reason(exc)))
                    continue
                except (JsonShapeError, *UNFORESEEN) as exc:
                    self.problems.append(FormatError.whole(name, error_reason(exc)))
                    continue
                yield from records
        elif kind in ("be32", "varint"):
            keep = None if self.trace_ids is None else self._keep
            if kind == "be32" and keep is not None and file_size is not None:  # a plain file
                idx = _build_index(f, self.path, file_size)
                if idx is not None and (yield from self._through_index(idx)):
                    return
                f.seek(0)  # a torn or corrupt dump: scan it, and report the fault
            framed = iter_be32 if kind == "be32" else iter_varint
            frames = framed(f, name, size, skipped=self.problems)
            for offset, body in progress.track(frames, size, f"reading {name}"):
                yield from self._record(offset, self._from_body, body, keep)
        elif kind == "single":
            keep = None if self.trace_ids is None else self._keep
            data = self._whole(f, size, "record")
            cut = None
            if backends.wraps_protobuf(name):
                try:
                    data, cut = backends.tempo_v2_trace(data)
                except DecodeError as exc:
                    raise FormatError.whole(name, f"not a Tempo trace answer ({exc})") from None
                if not data:
                    raise FormatError.whole(name, "the backend answered with no trace (not found?)")
            yield from self._record(0, self._from_proto, data, keep)
            if cut is not None:  # its runs are not whole, and say so
                self.problems.append(FormatError.whole(name, cut))
        else:
            # A file a folder held beside the traces is passed over; one named is an error.
            fault = NoTraceData if self.source.found else FormatError
            raise fault.whole(name, "not an OTLP trace or log file (no known format)")

    def _whole_doc(self, doc: Any, offset: int) -> list[T]:
        """What one JSON document holds; a backend's answer holding part of its trace
        is noted as a fault, so that its runs are not taken for whole ones."""
        records = list(self._from_doc(doc, offset))
        cut = backends.partial(doc)
        if cut is not None:
            self.problems.append(FormatError(self.path, offset, cut))
        return records

    def _through_index(self, idx: index.TraceIndex) -> Generator[T, None, bool]:
        """The wanted traces through ``idx``; False (nothing read) when it does not hold."""
        assert self.trace_ids is not None
        looked = index.lookup(self.path, idx, self.trace_ids, _index_facts)
        if looked is None:
            return False
        self.used_index = True
        found, records = looked
        for offset, body in records:
            yield from self._record(offset, self._from_body, body, found.__contains__)
        return True

    def _record(
        self,
        offset: int,
        decode: Callable[[bytes, int, Callable[[str], bool] | None], Iterable[T]],
        body: bytes,
        keep: Callable[[str], bool] | None,
    ) -> list[T]:
        """What the record at ``offset`` holds, all of it or nothing.

        A record that cannot be read is reported and costs only itself: the
        framing says where the next one starts.
        """
        try:
            return list(decode(body, offset, keep))
        except OtherSignal:
            raise
        except FormatError as exc:
            self.problems.append(exc)
        except (DecodeError, *UNFORESEEN) as exc:
            # Shaped in a way no check foresaw: still this record's fault only.
            reason = f"unreadable record ({type(exc).__name__}: {exc})"
            self.problems.append(FormatError(self.path, offset, reason))
        return []

    def _whole(self, f: IO[bytes], size: int | None, what: str) -> bytes:
        """The rest of ``f``: one record, document or answer, so no more than the record limit."""
        data = bounded.read_at_most(f, limits.MAX_RECORD_BYTES.bytes(), size)
        if data is None:
            limit = limits.MAX_RECORD_BYTES.text()
            raise FormatError.whole(self.path, f"{what} larger than {limit}")
        return data

    def _pass_over_json(self, exc: NotOtlpError) -> None:
        """Raise :class:`NoTraceData` when the source was found in a folder and its first
        JSON value is another program's JSON (a log in JSON lines, a settings file): the
        file is passed over as any file holding no trace data is.  A file named itself is
        read on, each value that is not OTLP costing only itself."""
        if self.source.found:
            raise NoTraceData.whole(self.path, f"JSON, not OTLP trace or log data ({exc})")

    def _json_lines(self, f: IO[bytes], size: int | None) -> Iterator[T]:
        others = _others_only(self.trace_ids)
        first = True
        # How far into a big file the lines are, on a terminal, as for framed dumps.
        for _, (start, line) in progress.track_bytes(_lines(f), size, f"reading {self.path}"):
            if not line:
                too_long = f"line longer than {limits.MAX_RECORD_BYTES.text()}"
                self.problems.append(FormatError(self.path, start, too_long))
                continue
            if start == 0 and line[:3] == UTF8_BOM:
                line = line[3:]
            if not line.strip() or (others is not None and others(line)):
                continue
            try:
                doc: Any = parse_json(line, self._loads)
                records = self._whole_doc(doc, start)  # all of the line or none
            except (ValueError, JsonShapeError, *UNFORESEEN) as exc:
                if isinstance(exc, OtherSignalError):
                    raise OtherSignal(self.path, start, str(exc)) from exc
                if first and isinstance(exc, NotOtlpError):
                    self._pass_over_json(exc)
                first = False
                # One bad line costs that line only.
                reason = f"bad JSON line ({error_reason(exc)})"
                self.problems.append(FormatError(self.path, start, reason))
                continue
            first = False
            yield from records


def _lines(f: IO[bytes]) -> Iterator[tuple[int, tuple[int, bytes]]]:
    """``(end, (start, line))`` for each line of ``f``: where it ends and starts, and its
    bytes (empty for a line over the record limit, which is not kept)."""
    limit = limits.MAX_RECORD_BYTES.bytes()
    offset = 0
    while True:
        line, length = bounded.read_line(f, limit)
        if not length:
            return
        start, offset = offset, offset + length
        yield offset, (start, line)


#: A line of OTLP/JSON spans, its trace ids (and the keys that may hold one), and an
#: escape that spells a letter or "_" (a key so spelled is read as its letters).
_SPANS_LINE = re.compile(rb'\s*\{\s*"resource(?:Spans|_spans)"')
_TRACE_ID = re.compile(rb'"(?:traceId|trace_id)"\s*:\s*"([0-9a-fA-F]{32})"')
_TRACE_ID_KEY = re.compile(rb'"(?:traceId|trace_id)"')
_LETTER_ESCAPE = re.compile(rb"\\u00(?:[46][1-9a-fA-F]|[57][0-9aA]|5[fF])")
#: A whole trace id as the reader keeps it (not a prefix of one).
_FULL_ID = re.compile("[0-9a-f]{32}")


def _others_only(wanted: set[str] | None) -> Callable[[bytes], bool] | None:
    """For reading only the traces ``wanted`` (full ids) from JSON lines: whether a line
    holds spans of other traces alone, told from its bytes, so it need not be parsed.

    Only a line of spans whose every trace id key reads as 32 hex digits is told so;
    any other (log records, a backend's answer, ids in base64, a key spelled with
    escapes) is parsed.  None when ``wanted`` has prefixes: every line is parsed.
    """
    if wanted is None or not all(_FULL_ID.fullmatch(t) for t in wanted):
        return None
    ids = {t.encode("ascii") for t in wanted}

    def others_only(line: bytes) -> bool:
        if not _SPANS_LINE.match(line) or _LETTER_ESCAPE.search(line):
            return False
        found = _TRACE_ID.findall(line)
        if len(found) != len(_TRACE_ID_KEY.findall(line)):
            return False  # an id that is not plain hex: the parser reads it
        return ids.isdisjoint(t.lower() for t in found)

    return others_only


def _position(stream: Any) -> int:
    """How far a decompressing stream got, in decompressed bytes: where it broke."""
    try:
        return int(stream.tell())
    except (OSError, ValueError):
        return 0


def trace_index(path: str) -> index.TraceIndex | None:
    """The trace index of a 4-byte framed file: the saved one while current, else built and saved.

    None for any other format, and for a dump that cannot be indexed (torn or
    corrupt: reading it reports the fault).
    """
    idx = index.load(path)
    if idx is not None:
        return idx
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            if sniff(f.read(min(HEAD, size)), f, size) != "be32":
                return None
            f.seek(0)
            return _build_index(f, path, size)
    except OSError:
        return None


def appended_traces(
    path: str, start: int, size: int, most: int, *, logs_before: bool
) -> set[str] | None:
    """The trace ids of the records in bytes ``start`` to ``size`` of the file ``path``
    (what was appended to it once ``start`` bytes long): through the trace index of a
    4-byte framed file, or read from a file of JSON lines (at most ``most`` bytes).

    None when that cannot be told (another format, a torn or bad record), or when the
    file may have log records that name no span (they join runs by time): a 4-byte
    framed file, anywhere in it; JSON lines, any log record among those bytes, or any
    before them (``logs_before``).
    """
    idx = trace_index(path)
    if idx is not None:
        return None if idx.spanless_logs or idx.size < size else idx.traces_from(start)
    if logs_before or size - start > most:
        return None
    try:
        with open(path, "rb") as f:
            if sniff(first_line(f.read(HEAD), f), None, None) != "jsonl":
                return None
            f.seek(max(start - 1, 0))
            if start and f.read(1) != b"\n":
                return None  # the file did not end with a whole line: one was cut there
            data = f.read(size - start)
    except OSError:
        return None
    found: set[str] = set()
    offset = start
    for line in data.split(b"\n"):
        if line.strip():
            try:
                records = list(decode_body(line, path, offset))
            except (FormatError, DecodeError, *UNFORESEEN):
                return None
            if any(isinstance(r, LogRecord) for r in records):
                return None
            found.update(r.trace_id for r in records)
        offset += len(line) + 1
    return found


def _index_facts(body: bytes, source: str, offset: int) -> tuple[Iterable[bytes], int]:
    """Trace ids and span-less log records of a framed body: protobuf or JSON, maybe zstd."""
    if body[:4] == ZSTD_MAGIC:
        body = bounded.decompress_zstd(body, source, offset)
    # A protobuf request starts with a field tag, never with "{" or whitespace.
    if body[:1] not in b"{ \t\r\n" or body.lstrip()[:1] != b"{":
        return index.proto_facts(body, source, offset)
    ids: set[bytes] = set()
    spanless = 0
    for record in decode_body(body, source, offset):
        if len(record.trace_id) == 32:
            ids.add(bytes.fromhex(record.trace_id))
        spanless += isinstance(record, LogRecord) and not record.span_id
    return ids, spanless


def _build_index(f: IO[bytes], path: str, size: int) -> index.TraceIndex | None:
    try:
        frames = progress.track(iter_be32(f, path), size, f"indexing {path}")
        idx = index.build(path, frames, _index_facts)
    except (FormatError, DecodeError):
        return None
    index.save(path, idx)
    return idx


class RecordReader(Reader[Record]):
    """Iterate the span and log records of one :class:`~otel_replay.sources.source.Source`.

    Faults land in :attr:`problems`; :attr:`format` says what was detected.
    """

    #: Whether log records are wanted; when not, they are skipped and reported once.
    logs = True

    def __init__(
        self,
        source: Source,
        trace_ids: Iterable[str] | None = None,
        index_as_of: tuple[int, int] | None = None,
        *,
        lazy: bool = False,
    ) -> None:
        """``lazy``: spans read from protobuf decode their fields past ids, times,
        resource and scope when first read (see
        :func:`~otel_replay.otlp.proto_reader.records_from_proto`)."""
        super().__init__(source, trace_ids, index_as_of)
        self._skipped_logs = False
        self.lazy = lazy

    def _through_index(self, idx: index.TraceIndex) -> Generator[Record, None, bool]:
        # Each record decoded once, checked by what it holds; else looked up as by any reader,
        # this reader as it was (its problems and state: the lookup reports them).
        state, problems = dict(vars(self)), list(self.problems)
        decode = lambda at, body, keep: self._record(at, self._from_body, body, keep)  # noqa: E731
        records = index.decoded_lookup(self.path, idx, self.trace_ids or set(), decode)
        if records is None or len(self.problems) > len(problems):
            vars(self).update(state)
            self.problems[:] = problems
            return (yield from super()._through_index(idx))
        self.used_index = True
        yield from records
        return True

    def _select(self, records: Iterable[Record], offset: int) -> Iterator[Record]:
        """The wanted ones of the records of one message at ``offset``."""
        for record in records:
            if not self.logs and isinstance(record, LogRecord):
                if not self._skipped_logs:
                    self._skipped_logs = True
                    self.problems.append(
                        FormatError(self.path, offset, "OTLP logs data, not traces")
                    )
                return  # a message holds one signal: the rest are log records too
            if self.trace_ids is None or self._keep(record.trace_id):
                yield record

    def _from_body(
        self, body: bytes, offset: int, keep: Callable[[str], bool] | None
    ) -> Iterator[Record]:
        return self._select(decode_body(body, self.path, offset, keep, lazy=self.lazy), offset)

    def _from_proto(
        self, data: bytes, offset: int, keep: Callable[[str], bool] | None
    ) -> Iterator[Record]:
        records = records_from_proto(data, self.path, offset, keep, lazy=self.lazy)
        return self._select(records, offset)

    def _from_doc(self, doc: Any, offset: int) -> Iterator[Record]:
        return self._select(records_from_json(doc, self.path), offset)

    def _from_phoenix(self, data: bytes) -> Iterator[Record]:
        return phoenix.spans_from_response(data, self.path, self._keep)

    def _from_records(self, records: Iterable[Record]) -> Iterable[Record]:
        return records
