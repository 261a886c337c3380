"""The record framing of our trace files: the Collector ``fileexporter``'s ``format: proto``.

Each record is a 4-byte big-endian length followed by a serialized OTLP
``ExportTraceServiceRequest``; there is no file header.  With ``compression:
zstd`` the body is a zstd frame (of the protobuf request, or of the OTLP/JSON
one with ``format: json``), framed the same way.

:func:`frame` writes one record so; with ``format: json`` and no compression a
record is a line, and :func:`last_line_end` / :func:`starts_json_record` find
where the last whole line of such a file ends.
"""

from __future__ import annotations

import os
import struct
from typing import Any, Final

from .. import limits

HEADER: Final = struct.Struct(">I")
HEADER_SIZE: Final = 4
#: A record larger than this is taken for garbage rather than allocated.
MAX_RECORD: Final = 1 << 30
#: First byte of every non-empty request: field 1 (``resource_spans``), length-delimited.
REQUEST_TAG: Final = 0x0A
#: First bytes a record body may start with: a request, a zstd frame (the
#: Collector's ``compression: zstd``, either format), or an OTLP/JSON object.
BODY_STARTS: Final = (REQUEST_TAG, 0x28, ord("{"))


def walk(fd: int, start: int, size: int) -> int:
    """End of the last whole record, walking headers from ``start`` (a record boundary).

    The walk stops before a record whose body could not be ours (empty, or
    not starting as a request, a zstd frame or a JSON object does): past
    that point the bytes are somebody else's, not records.
    """
    offset = start
    while offset + HEADER_SIZE <= size:
        head = os.pread(fd, HEADER_SIZE + 1, offset)
        (length,) = HEADER.unpack(head[:HEADER_SIZE])
        if offset + HEADER_SIZE + length > size:
            break
        if length == 0 or head[HEADER_SIZE] not in BODY_STARTS:
            break
        offset += HEADER_SIZE + length
    return offset


def looks_torn(fd: int, offset: int, size: int) -> bool:
    """Whether the bytes from ``offset`` to ``size`` look like the start of a record cut short.

    A record that is whole, a length no record has, a body that starts as no
    record of ours does (a JSON file, some other binary): not a torn record,
    and not ours to truncate.
    """
    head = os.pread(fd, HEADER_SIZE + 1, offset)
    if len(head) < HEADER_SIZE:
        return True  # a torn header
    (length,) = HEADER.unpack(head[:HEADER_SIZE])
    # A length past the record limit is no record a reader would take back (a gzip
    # file's first bytes, 1f 8b 08 00, read as 529 MB): somebody else's bytes.
    if length > min(MAX_RECORD, limits.MAX_RECORD_BYTES.bytes()):
        return False
    if offset + HEADER_SIZE + length <= size:
        return False
    return len(head) == HEADER_SIZE or head[HEADER_SIZE] in BODY_STARTS


def frame(
    body: bytes, format: str, compression: str | None = None, compressor: Any = None
) -> bytes:
    """One record of a request body, as the Collector's file exporter frames it.

    ``json`` without compression: the body and a newline.  Otherwise a 4-byte
    big-endian length and the body, zstd-compressed (as its own frame) with
    ``compression="zstd"`` (``compressor``: a ``zstandard.ZstdCompressor`` to reuse).
    """
    if compression is None:
        if format == "json":
            return body + b"\n"
    else:
        if compressor is None:
            # lazy: only a zstd-compressed file needs it
            import zstandard

            compressor = zstandard.ZstdCompressor()
        body = compressor.compress(body)
    return HEADER.pack(len(body)) + body


#: How every OTLP/JSON record line starts, as the Collector and our encoder write it.
JSON_RECORD_STARTS: Final = (b'{"resourceSpans":', b'{"resourceLogs":')
_JSON_START_MAX = max(map(len, JSON_RECORD_STARTS))


def starts_json_record(fd: int, offset: int, size: int) -> bool:
    """Whether the line at ``offset`` starts as a record line does (or, running to the
    end of the file, was cut before it could say)."""
    line, newline, _ = os.pread(fd, _JSON_START_MAX, offset).partition(b"\n")
    cut = not newline and offset + len(line) == size
    return any(line.startswith(s) or (cut and s.startswith(line)) for s in JSON_RECORD_STARTS)


def last_line_end(fd: int, size: int, chunk: int = 1 << 16) -> int:
    """Offset just past the last newline of the file (0 when there is none)."""
    end = size
    while end > 0:
        start = max(0, end - chunk)
        data = os.pread(fd, end - start, start)
        i = data.rfind(b"\n")
        if i >= 0:
            return start + i + 1
        end = start
    return 0
