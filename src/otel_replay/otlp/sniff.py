"""What an input holds, and its records one at a time: the sniffer, the framings' readers
and the decoding of one framed message.

Framings of OTLP ``ExportTraceServiceRequest`` or ``ExportLogsServiceRequest``
messages: ``be32`` (4-byte big-endian length + message: our files, the
Collector's ``fileexporter`` with ``format: proto``), ``varint`` (varint length +
message, protobuf's ``writeDelimitedTo``), ``single`` (one bare message),
``jsonl`` (one OTLP/JSON request per line) and ``json`` (one OTLP/JSON document);
gzip or zstd compressed.  :func:`sniff` tells them apart from a file's head;
:mod:`otel_replay.sources.reader` reads an input with them.
"""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from typing import IO, Any

from .. import limits
from ..json_text import may_hold_surrogates, without_lone_surrogates
from . import bounded, framing
from .errors import FormatError
from .json_reader import JsonShapeError, records_from_json
from .proto_reader import records_from_proto
from .records import Record

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
GZIP_MAGIC = b"\x1f\x8b"
#: The byte order mark some editors and Windows tools put before UTF-8 text: not part of
#: the JSON after it.
UTF8_BOM = b"\xef\xbb\xbf"
#: What input shaped in a way no check foresaw raises while it is read: still the
#: input's fault, so it is reported, never raised.
UNFORESEEN = (ValueError, TypeError, KeyError, AttributeError, OverflowError, RecursionError)
#: What the sniffer looks at (and, for JSON, on to the end of the first line).
HEAD = 64 * 1024


_decompress_zstd = bounded.decompress_zstd


#: A JSON string (skipped whole) or a bracket.
_JSON_NESTING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


class NestedTooDeep(ValueError):
    """JSON nested deeper than the parser can follow; :attr:`pos` is where it is deepest."""

    def __init__(self, data: bytes) -> None:
        depth = deepest = self.pos = 0
        for m in _JSON_NESTING.finditer(data):
            c = data[m.start()]
            if c in b"[{":
                depth += 1
                if depth > deepest:
                    deepest, self.pos = depth, m.start()
            elif c in b"]}":
                depth -= 1
        limit = sys.getrecursionlimit()
        super().__init__(
            f"JSON nested too deep: {deepest} levels, past Python's recursion limit ({limit})"
        )


def parse_json(data: bytes, loads: Callable[[bytes], Any] = json.loads) -> Any:
    """``loads(data)``: a ValueError for anything but JSON, :class:`NestedTooDeep` included;
    half a surrogate pair in a string made U+FFFD (see :mod:`otel_replay.json_text`)."""
    if data[:3] == UTF8_BOM:
        data = data[3:]
    try:
        doc = loads(data)
    except RecursionError:
        raise NestedTooDeep(data) from None
    return without_lone_surrogates(doc) if may_hold_surrogates(data) else doc


def error_reason(exc: Exception) -> str:
    """Why a record is unreadable: what a check said (a ValueError), or what input no
    check foresaw raised, named."""
    return str(exc) if isinstance(exc, ValueError) else f"{type(exc).__name__}: {exc}"


def not_json_reason(exc: ValueError) -> str:
    return str(exc) if isinstance(exc, NestedTooDeep) else f"not JSON ({exc})"


def decode_body(
    body: bytes,
    source: str,
    offset: int,
    keep: Callable[[str], bool] | None = None,
    *,
    lazy: bool = False,
) -> Iterator[Record]:
    """One framed message: proto or OTLP/JSON, zstd-compressed or not, of either signal
    (``lazy``: see :func:`~otel_replay.otlp.proto_reader.records_from_proto`)."""
    if body[:4] == ZSTD_MAGIC:
        body = _decompress_zstd(body, source, offset)
    if body.lstrip()[:1] == b"{":
        try:
            doc = parse_json(body)
        except ValueError as exc:
            raise FormatError(source, offset, not_json_reason(exc)) from exc
        try:
            for record in records_from_json(doc, source):
                if keep is None or keep(record.trace_id):
                    yield record
        except JsonShapeError as exc:
            raise FormatError(source, offset, str(exc)) from exc
        return
    yield from records_from_proto(body, source, offset, keep, lazy=lazy)


def _read_varint(f: IO[bytes]) -> tuple[int, int] | None:
    """(value, bytes used) or None at a clean end of file."""
    shift = value = used = 0
    while True:
        b = f.read(1)
        if not b:
            if used == 0:
                return None
            raise EOFError
        used += 1
        value |= (b[0] & 0x7F) << shift
        if not b[0] & 0x80:
            return value, used
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def _be32_header(f: IO[bytes]) -> tuple[int, int] | None:
    header = f.read(4)
    if not header:
        return None
    if len(header) < 4:
        raise EOFError(f"truncated record: {len(header)}-byte header")
    return framing.HEADER.unpack(header)[0], 4


def _varint_header(f: IO[bytes]) -> tuple[int, int] | None:
    try:
        return _read_varint(f)
    except (EOFError, ValueError):
        raise EOFError("truncated or corrupt varint length") from None


def _frames(
    f: IO[bytes],
    source: str,
    header: Callable[[IO[bytes]], tuple[int, int] | None],
    size: int | None,
    skipped: list[FormatError] | None,
) -> Iterator[tuple[int, bytes]]:
    offset = 0
    limit = limits.MAX_RECORD_BYTES.bytes()
    while True:
        try:
            got = header(f)
        except EOFError as exc:
            raise FormatError(source, offset, str(exc)) from None
        if got is None:
            return
        length, used = got
        if length > framing.MAX_RECORD:
            raise FormatError(source, offset, f"corrupt record length {length}")
        # A record known to be cut short, or too big to hold, is not read into memory.
        present = length if size is None else min(length, size - offset - used)
        if present == length and length > limit:
            too_big = FormatError(
                source, offset, f"record of {length} bytes is past {limits.MAX_RECORD_BYTES.text()}"
            )
            if skipped is None:
                raise too_big
            present = bounded.skip(f, length, seekable=size is not None)
            if present == length:
                skipped.append(too_big)
                offset += used + length
                continue
        elif present == length:
            body = f.read(length)
            present = len(body)
            if present == length:
                yield offset, body
                offset += used + length
                continue
        raise FormatError(
            source, offset, f"truncated record: header says {length} bytes, {present} present"
        )


def iter_be32(
    f: IO[bytes],
    source: str,
    size: int | None = None,
    skipped: list[FormatError] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """``(offset, body)`` of 4-byte big-endian length-prefixed records.

    ``size``: the bytes left in ``f`` when known (a plain file).  A record
    past :data:`~.limits.MAX_RECORD_BYTES` is not read: it raises
    :class:`FormatError`, or when a ``skipped`` list is given, is reported
    there and passed over.
    """
    return _frames(f, source, _be32_header, size, skipped)


def iter_varint(
    f: IO[bytes],
    source: str,
    size: int | None = None,
    skipped: list[FormatError] | None = None,
) -> Iterator[tuple[int, bytes]]:
    """``(offset, body)`` of varint length-delimited records (see :func:`iter_be32`)."""
    return _frames(f, source, _varint_header, size, skipped)


# Kept for callers that only know our own files.
def iter_records(path: str | os.PathLike[str]) -> Iterator[tuple[int, bytes]]:
    """``(offset, body)`` of a 4-byte framed file; raises :class:`FormatError`."""
    name = os.fspath(path)
    with open(name, "rb") as f:
        yield from iter_be32(f, name)


def _plausible_body(body: bytes) -> bool:
    return body[:1] == b"\x0a" or body[:4] == ZSTD_MAGIC or body.lstrip()[:1] == b"{"


def _chains(f: IO[bytes], size: int, varint: bool) -> bool:
    """Whether record headers chain through the file (a torn last record allowed).

    For varint framing the first bodies must also look like messages: small
    varints are common bytes, and a bare message could chain by accident.
    """
    f.seek(0)
    offset = frames = 0
    while offset < size:
        f.seek(offset)
        if varint:
            try:
                got = _read_varint(f)
            except (EOFError, ValueError):
                return frames > 0
            if got is None:
                break
            length, used = got
        else:
            header = f.read(4)
            if len(header) < 4:
                return frames > 0
            (length,), used = framing.HEADER.unpack(header), 4
        if offset + used + length > size:
            return frames > 0
        if varint and frames < 2 and not _plausible_body(f.read(min(length, 8))):
            return False
        offset += used + length
        frames += 1
    return frames > 0


def _is_json(data: bytes) -> bool:
    try:
        json.loads(data)
    except (ValueError, RecursionError):
        return False
    return True


def first_line(head: bytes, f: IO[bytes]) -> bytes:
    """``head`` read on from ``f``, when it starts a JSON value, to the end of its first line.

    A JSON line may be far longer than :data:`HEAD` (an agent run exported in
    one batch is one line): :func:`sniff` needs all of the first line and the
    first byte of the next to tell JSON lines from a document.  Read a chunk
    at a time, and no further than :data:`~.limits.MAX_RECORD_BYTES`.
    """
    text = _text(head)
    start = len(head) - len(text)
    if head[start : start + 1] not in (b"{", b"["):
        return head
    parts, total = [head], len(head)
    newline = head.find(b"\n", start)
    limit = limits.MAX_RECORD_BYTES.bytes()
    while (newline < 0 or newline + 1 >= total) and total <= limit:
        chunk = f.read(HEAD)
        if not chunk:
            break
        if newline < 0 and (at := chunk.find(b"\n")) >= 0:
            newline = total + at
        parts.append(chunk)
        total += len(chunk)
    return b"".join(parts) if len(parts) > 1 else head


def _text(head: bytes) -> bytes:
    """``head`` from its first byte of JSON on: white space and a byte order mark left out."""
    return (head[3:] if head[:3] == UTF8_BOM else head).lstrip()


#: Bytes no line of text holds (tab and carriage return aside).
_CONTROL = bytes(b for b in range(32) if b not in (9, 13)) + b"\x7f"


def _text_then_json_lines(head: bytes) -> bool:
    """True when ``head`` is a line of text (a shell's or a tool's words written
    before the dump) followed by lines of JSON objects: JSON lines whose first
    line is bad, which costs that line only.  Asked of text only (see
    :func:`looks_like_text`), so protobuf (whose bytes may hold ``\\n{``) is never taken for it.
    """
    first, newline, rest = head.partition(b"\n")
    second = rest.lstrip().partition(b"\n")[0]
    if not newline or not first.strip() or second[:1] != b"{":
        return False
    if b'"resourceSpans"' not in second and b'"resource_spans"' not in second:
        return False  # a text file with a brace on its second line is no trace
    if len(first.translate(None, _CONTROL)) != len(first):
        return False  # a control byte: binary, not a line of text
    try:
        first.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


#: What :func:`sniff` names a protobuf input (framed, or one bare request).
BINARY_KINDS = frozenset({"be32", "varint", "single"})
#: Bytes no text file holds: control bytes but tab, line ends and form feed.
_NOT_TEXT = bytes(b for b in range(32) if b not in (9, 10, 12, 13)) + b"\x7f"


def looks_like_text(head: bytes) -> bool:
    """True when ``head`` (a file's first bytes) is UTF-8 text with no control byte but
    tab, line ends and form feed.  No OTLP request is: each holds a length-delimited
    field of a message nested in another (the 0x12 tag of an attribute's value, of a
    span's ids), a control byte."""
    if len(head.translate(None, _NOT_TEXT)) != len(head):
        return False
    try:  # the head may end inside a character
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return False
    return True


def sniff(head: bytes, f: IO[bytes] | None, size: int | None) -> str:
    """The format of a stream from its first bytes (see module docstring).

    ``head`` holds the first line whole when the input starts with JSON (see
    :func:`first_line`).
    """
    if head[:2] == GZIP_MAGIC:
        return "gzip"
    if head[:4] == ZSTD_MAGIC:
        return "zstd"
    text = _text(head)
    if text[:1] in (b"{", b"["):
        # JSON lines: the first line is a whole JSON value, or (a bad first
        # record) an object followed by a line starting another.  A document's
        # second line is indented, goes on with a key, or is an array's item.
        first, _, rest = text.partition(b"\n")
        next_object = first[:1] == rest[:1] == b"{"
        return "jsonl" if next_object or _is_json(first) else "json"
    if not head:
        return "empty"
    if looks_like_text(head) and _text_then_json_lines(head):
        # Before any binary framing: a line of text's first byte reads as a varint
        # length (``U`` is 85) that can chain through JSON lines by chance.
        return "jsonl"
    if f is not None and size is not None:
        if _chains(f, size, varint=False):
            return "be32"
        if _chains(f, size, varint=True):
            return "varint"
        if head[:1] == b"\x0a":
            return "single"
        if head[:1] == b"\x00":  # a 4-byte framed file whose first record is torn
            return "be32"
        return "jsonl" if _text_then_json_lines(head) else "unknown"
    # A stream that cannot be rewound: decide from the first bytes alone.
    if head[:1] == b"\x00":
        return "be32"
    if head[:1] == b"\x0a":
        return "single"
    return "varint"


class Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read for sniffing."""

    def __init__(self, head: bytes, rest: IO[bytes]) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        if self._head:
            n = min(len(view), len(self._head))
            view[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(view))
        view[: len(data)] = data
        return len(data)
