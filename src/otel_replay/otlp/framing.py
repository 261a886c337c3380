"""The record framing of our trace files: the Collector ``fileexporter``'s ``format: proto``.

Each record is a 4-byte big-endian length followed by a serialized OTLP
``ExportTraceServiceRequest``; there is no file header.  With ``compression:
zstd`` the body is a zstd frame (of the protobuf request, or of the OTLP/JSON
one with ``format: json``), framed the same way.
"""

from __future__ import annotations

import os
import struct
from typing import Final

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
