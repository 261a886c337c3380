"""A trace-id index beside a big dump, so one trace loads without reading the rest.

One pass over a 4-byte framed file records, for each trace id, the records
holding its spans or log records.  The index lives beside the dump
(``<dump>.otel-replay-index``) with the dump's size and modification time; a
dump that changed since is indexed again.  Other formats are not indexed:
they are scanned, keeping only the wanted traces.

The index file is a header and fixed-size entries sorted by trace id
(16-byte id, 8-byte record offset, 4-byte record length), so a lookup is a
binary search over the memory-mapped file: its cost does not grow with the
number of traces in the dump.  The header also counts the log records that
name no span: they are joined to spans by time, not by id, so whoever reads
the dump a few traces at a time must know they are there.
"""

from __future__ import annotations

import bisect
import mmap
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from .errors import FormatError
from .otlp_proto import parse_request, spanless_logs, trace_ids

SUFFIX = ".otel-replay-index"
# 02: log records are indexed too (01 indexes of log dumps were empty).
# 03: the header counts log records that name no span.
_MAGIC = b"OTRIDX03"
# magic, dump size, dump mtime_ns, entry count, log records that name no span
_HEADER = struct.Struct(">8sQQQQ")
_ENTRY = struct.Struct(">16sQI")  # trace id, body offset, body length


def index_path(dump: str | os.PathLike[str]) -> Path:
    return Path(os.fspath(dump) + SUFFIX)


class _Ids:
    """The sorted trace ids of the entries, as a sequence bisect can search."""

    def __init__(self, data: bytes | mmap.mmap, count: int) -> None:
        self.data = data
        self.count = count

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, i: int) -> bytes:
        start = _HEADER.size + i * _ENTRY.size
        return bytes(self.data[start : start + 16])


class TraceIndex:
    """Sorted (trace id, record) entries of one dump."""

    def __init__(
        self, size: int, mtime_ns: int, data: bytes | mmap.mmap, count: int, spanless: int = 0
    ) -> None:
        self.size = size
        self.mtime_ns = mtime_ns
        #: Log records in the dump that name no span (joined by time, not by id).
        self.spanless_logs = spanless
        self._data = data
        self._ids = _Ids(data, count)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def stamp(self) -> tuple[int, int]:
        """(size, mtime_ns) of the dump as indexed."""
        return (self.size, self.mtime_ns)

    def _entries(self, lo: int, hi: int) -> Iterator[tuple[bytes, int, int]]:
        for i in range(lo, hi):
            start = _HEADER.size + i * _ENTRY.size
            yield _ENTRY.unpack(self._data[start : start + _ENTRY.size])

    def records(self, prefixes: set[str]) -> tuple[set[str], list[tuple[int, int]]]:
        """Trace ids starting with any of ``prefixes``, and their records in file order."""
        found: set[str] = set()
        records: set[tuple[int, int]] = set()
        for prefix in prefixes:
            text = prefix.lower()
            try:
                low = bytes.fromhex(text.ljust(32, "0"))
                high = bytes.fromhex(text.ljust(32, "f"))
            except ValueError:
                continue  # not hex: no trace id starts with it
            lo = bisect.bisect_left(self._ids, low)
            hi = bisect.bisect_right(self._ids, high)
            for tid, offset, length in self._entries(lo, hi):
                found.add(tid.hex())
                records.add((offset, length))
        return found, sorted(records)

    def trace_ids(self) -> list[str]:
        return sorted({tid.hex() for tid, _, _ in self._entries(0, len(self))})

    def first_records(self) -> dict[str, int]:
        """Each trace id -> the offset of the first record holding it."""
        first: dict[str, int] = {}
        previous = b""
        for tid, offset, _ in self._entries(0, len(self)):
            if tid != previous:  # entries of one trace are adjacent, offsets ascending
                first[tid.hex()] = offset
                previous = tid
        return first


#: What indexing needs of one record body: its trace ids, and how many log records name no span.
Facts = Callable[[bytes, str, int], tuple[Iterable[bytes], int]]


def proto_facts(body: bytes, source: str, offset: int) -> tuple[Iterable[bytes], int]:
    """The :data:`Facts` of a bare protobuf request."""
    request = parse_request(body, source, offset)
    return trace_ids(request), spanless_logs(request)


def build(
    dump: str | os.PathLike[str],
    frames: Iterator[tuple[int, bytes]],
    facts: Facts = proto_facts,
) -> TraceIndex:
    """Index the records ``frames`` yields (record offset, body) for ``dump``.

    ``facts`` reads a body (the reader's handles zstd and JSON bodies too).
    """
    stat = os.stat(dump)
    entries: list[tuple[bytes, int, int]] = []
    name = os.fspath(dump)
    spanless = 0
    for offset, body in frames:
        ids, loose = facts(body, name, offset)
        entries.extend((tid, offset + 4, len(body)) for tid in ids)
        spanless += loose
    entries.sort()
    header = _HEADER.pack(_MAGIC, stat.st_size, stat.st_mtime_ns, len(entries), spanless)
    data = header + b"".join(_ENTRY.pack(*e) for e in entries)
    return TraceIndex(stat.st_size, stat.st_mtime_ns, data, len(entries), spanless)


def save(dump: str | os.PathLike[str], index: TraceIndex) -> None:
    """Write the index beside the dump (atomically); a read-only place is no error."""
    target = index_path(dump)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(bytes(index._data))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def load(dump: str | os.PathLike[str], as_of: tuple[int, int] | None = None) -> TraceIndex | None:
    """The saved index (memory-mapped), or None when missing, damaged or older than the dump.

    ``as_of`` (the :attr:`TraceIndex.stamp` of an index read earlier) also
    accepts that index after the dump has grown since: a reader that took
    the dump as it was then keeps reading it so, not indexing it again.
    """
    try:
        stat = os.stat(dump)
        with open(index_path(dump), "rb") as f:
            if os.fstat(f.fileno()).st_size < _HEADER.size:
                return None
            data = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    magic, size, mtime_ns, count, spanless = _HEADER.unpack(data[: _HEADER.size])
    current = size == stat.st_size and mtime_ns == stat.st_mtime_ns
    grown = as_of == (size, mtime_ns) and stat.st_size >= size
    if magic != _MAGIC or not (current or grown) or len(data) != _HEADER.size + count * _ENTRY.size:
        data.close()
        return None
    return TraceIndex(size, mtime_ns, data, count, spanless)


def read_records(
    dump: str | os.PathLike[str], records: list[tuple[int, int]]
) -> Iterator[tuple[int, bytes]]:
    """(record offset, body) for the given (body offset, length) pairs."""
    name = os.fspath(dump)
    with open(name, "rb") as f:
        for offset, length in records:
            f.seek(offset)
            body = f.read(length)
            if len(body) < length:
                raise FormatError(name, offset - 4, "the dump changed under its index")
            yield offset - 4, body
