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

An index travels with its dump and may come from anyone, or be left over
from a dump since rewritten; a wrong one would silently drop spans.  So it
is believed only when sealed on this machine (see :mod:`otel_replay.seal`)
and stamped with the dump as it is now: size, modification and change times
(the change time cannot be set back) and inode.  The records a lookup reads
must then hold, behind their own length prefix, every trace the index says
they hold (:func:`lookup`); when one does not, the dump is read instead.
"""

from __future__ import annotations

import bisect
import contextlib
import mmap
import os
import struct
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Protocol, TypeVar

from .. import seal
from ..safe_files import open_regular, replace_atomically
from .errors import FormatError
from .framing import HEADER as FRAME_HEADER
from .proto_reader import parse_request, spanless_logs, trace_ids
from .rotation import INDEX_SUFFIX

SUFFIX = INDEX_SUFFIX
# 02: log records are indexed too (01 indexes of log dumps were empty).
# 03: the header counts log records that name no span.
# 04: stamped with the dump's ctime and inode too, and sealed.
_MAGIC = b"OTRIDX04"
# magic, dump size, mtime_ns, ctime_ns, inode, entry count, log records that name no span
_HEADER = struct.Struct(">8sQQQQQQ")
_ENTRY = struct.Struct(">16sQI")  # trace id, body offset, body length
_SEAL_PURPOSE = b"otel-replay trace index"


def index_path(dump: str | os.PathLike[str]) -> Path:
    return Path(os.fspath(dump) + SUFFIX)


#: Entries unpacked at a time by a pass over an index.
_CHUNK = 4096
#: About how many entries a pass reads in the time one search for an id takes (two
#: binary searches, each a Python call per step).
_SEARCH_COST = 64


def _whole_ids(prefixes: set[str]) -> set[bytes] | None:
    """The trace ids ``prefixes`` spell when each is a whole one; else None."""
    whole: set[bytes] = set()
    for prefix in prefixes:
        if len(prefix) != 32:
            return None
        try:
            tid = bytes.fromhex(prefix)
        except ValueError:
            return None
        if len(tid) != 16:
            return None  # (spaces, which fromhex passes over)
        whole.add(tid)
    return whole


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
        # A chunk of entries unpacked at a time: one slice and one C loop for many.
        for at in range(lo, hi, _CHUNK):
            start = _HEADER.size + at * _ENTRY.size
            end = _HEADER.size + min(hi, at + _CHUNK) * _ENTRY.size
            yield from _ENTRY.iter_unpack(self._data[start:end])

    def _matching(self, prefixes: set[str]) -> Iterator[tuple[bytes, int, int]]:
        """The entries (trace id, body offset, body length) of the trace ids starting with
        any of ``prefixes`` (an entry may come more than once)."""
        whole = _whole_ids(prefixes)
        if whole is not None and len(whole) * _SEARCH_COST > len(self):
            # Many whole ids (a window of a dump read whole): one pass over the entries
            # costs less than a search for each.
            for entry in self._entries(0, len(self)):
                if entry[0] in whole:
                    yield entry
            return
        for lo, hi in self._ranges(prefixes):
            yield from self._entries(lo, hi)

    def find(
        self, prefixes: set[str]
    ) -> tuple[set[str], list[tuple[int, int]], dict[int, set[bytes]]]:
        """The trace ids starting with any of ``prefixes``; their records (body offset and
        length) in file order; and for each record, by body offset, the trace ids of
        ``prefixes`` it should hold."""
        found: set[bytes] = set()
        records: set[tuple[int, int]] = set()
        claims: dict[int, set[bytes]] = {}
        for tid, offset, length in self._matching(prefixes):
            found.add(tid)
            records.add((offset, length))
            claims.setdefault(offset, set()).add(tid)
        return {tid.hex() for tid in found}, sorted(records), claims

    def _ranges(self, prefixes: set[str]) -> Iterator[tuple[int, int]]:
        """The entry ranges of the trace ids starting with each of ``prefixes``."""
        for prefix in prefixes:
            text = prefix.lower()
            try:
                low = bytes.fromhex(text.ljust(32, "0"))
                high = bytes.fromhex(text.ljust(32, "f"))
            except ValueError:
                continue  # not hex: no trace id starts with it
            yield bisect.bisect_left(self._ids, low), bisect.bisect_right(self._ids, high)

    def trace_ids(self) -> list[str]:
        return sorted({tid.hex() for tid, _, _ in self._entries(0, len(self))})

    def traces_from(self, offset: int) -> set[str]:
        """The trace ids with a record at or past byte ``offset`` of the dump (what was
        appended to a dump once ``offset`` bytes long)."""
        return {tid.hex() for tid, at, _ in self._entries(0, len(self)) if at >= offset}

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
    st = os.stat(dump)
    entries: list[tuple[bytes, int, int]] = []
    name = os.fspath(dump)
    spanless = 0
    for offset, body in frames:
        ids, loose = facts(body, name, offset)
        entries.extend((tid, offset + 4, len(body)) for tid in ids)
        spanless += loose
    entries.sort()
    header = _HEADER.pack(_MAGIC, *_dump_stamp(st), len(entries), spanless)
    data = header + b"".join(_ENTRY.pack(*e) for e in entries)
    return TraceIndex(st.st_size, st.st_mtime_ns, data, len(entries), spanless)


def _dump_stamp(st: os.stat_result) -> tuple[int, int, int, int]:
    """What says a dump is the one indexed: size, mtime, ctime (never set back), inode."""
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def save(dump: str | os.PathLike[str], index: TraceIndex) -> None:
    """Write the index beside the dump (atomically), sealed (see :mod:`otel_replay.seal`).

    A read-only place is no error, and without a seal nothing is written: an
    unsealed index would never be believed.
    """
    data = bytes(index._data[: _HEADER.size + len(index) * _ENTRY.size])
    sealed = seal.tag(_SEAL_PURPOSE, data)
    if sealed is None:
        return
    with contextlib.suppress(OSError):
        replace_atomically(index_path(dump), data + sealed)


def load(dump: str | os.PathLike[str], as_of: tuple[int, int] | None = None) -> TraceIndex | None:
    """The saved index (memory-mapped), or None when missing, damaged, not sealed on this
    machine, or not stamped with the dump as it is now.

    ``as_of`` (the :attr:`TraceIndex.stamp` of an index read earlier) also
    accepts that index after the dump has grown since: a reader that took
    the dump as it was then keeps reading it so, not indexing it again.
    """
    try:
        st = os.stat(dump)
        fd = open_regular(index_path(dump))  # the index may be anyone's: no link, no FIFO
    except OSError:
        return None
    try:
        if os.fstat(fd).st_size < _HEADER.size + seal.SIZE:
            return None
        data = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
    except (OSError, ValueError):
        return None
    finally:
        os.close(fd)
    magic, size, mtime_ns, ctime_ns, ino, count, spanless = _HEADER.unpack(data[: _HEADER.size])
    body = _HEADER.size + count * _ENTRY.size
    current = (size, mtime_ns, ctime_ns, ino) == _dump_stamp(st)
    grown = as_of == (size, mtime_ns) and st.st_size >= size and ino == st.st_ino
    if magic != _MAGIC or not (current or grown):
        data.close()  # another format, or another state of the dump: indexed again, as ever
        return None
    if len(data) != body + seal.SIZE or not _sealed(data, body):
        data.close()
        _refused(dump, "it was not written on this machine for this dump, or was altered")
        return None
    return TraceIndex(size, mtime_ns, data, count, spanless)


#: Indexes already said to be refused, in this process: once each is enough.
_told: set[str] = set()


def _refused(dump: str | os.PathLike[str], reason: str, offset: int | None = None) -> None:
    """One log line: the index beside ``dump`` does not hold, and the dump is read instead."""
    import logging  # only when an index does not hold: listings start faster without it

    name = os.fspath(index_path(dump))
    if name in _told:
        return
    _told.add(name)
    where = "" if offset is None else f" at byte {offset}"
    logging.getLogger("otel_replay").warning(
        "otel-replay: %s is not used (%s%s); reading the dump instead", name, reason, where
    )


def _sealed(data: mmap.mmap, body: int) -> bool:
    with memoryview(data) as view:
        return seal.verify(_SEAL_PURPOSE, view[:body], view[body:])


def read_records(
    dump: str | os.PathLike[str], records: list[tuple[int, int]]
) -> Iterator[tuple[int, bytes]]:
    """(record offset, body) for the given (body offset, length) pairs.

    Each body must sit behind its own length prefix, else the dump is not
    the one indexed: :class:`FormatError`.
    """
    name = os.fspath(dump)
    with open(name, "rb") as f:
        for offset, length in records:
            if offset < FRAME_HEADER.size:
                raise FormatError(name, offset, "the trace index names no record here")
            f.seek(offset - FRAME_HEADER.size)
            framed = f.read(FRAME_HEADER.size + length)
            if len(framed) < FRAME_HEADER.size + length:
                raise FormatError(name, offset - 4, "the dump changed under its index")
            if FRAME_HEADER.unpack(framed[: FRAME_HEADER.size])[0] != length:
                raise FormatError(name, offset - 4, "the trace index names no record here")
            yield offset - 4, framed[FRAME_HEADER.size :]


#: Record bytes a lookup keeps from checking them to handing them over; past this
#: it checks every record, then reads them again (traces scattered over a whole
#: dump, as a conversation's are, would otherwise hold the dump in memory).
LOOKUP_HELD_BYTES = 64 * 1024 * 1024


class _OfATrace(Protocol):
    @property
    def trace_id(self) -> str: ...


R = TypeVar("R", bound=_OfATrace)


def decoded_lookup(
    dump: str | os.PathLike[str],
    idx: TraceIndex,
    prefixes: set[str],
    decode: Callable[[int, bytes, Callable[[str], bool]], list[R]],
) -> list[R] | None:
    """The records of the traces starting with any of ``prefixes``, as ``decode`` makes them
    of each record of the dump (its offset, its body, which trace ids to keep), in file
    order; each record checked, as :func:`lookup` does, to hold the traces the index says
    it holds, by what it decodes to (a record parsed once, not once to check and again to
    read).  Every record is checked before any is handed over.

    None, logged nowhere, when one is not as the index says, reading or decoding it fails,
    or the records are more than :data:`LOOKUP_HELD_BYTES`: the caller then looks them up
    with :func:`lookup`, which tells what is wrong.
    """
    found, records, claims = idx.find(prefixes)
    if sum(length for _, length in records) > LOOKUP_HELD_BYTES:
        return None
    out: list[R] = []
    try:
        for offset, body in read_records(os.fspath(dump), records):
            got = decode(offset, body, found.__contains__)
            ids = {r.trace_id for r in got}
            if any(tid.hex() not in ids for tid in claims[offset + 4]):
                return None
            out.extend(got)
    except Exception:  # any fault: lookup says what is wrong
        return None
    return out


def lookup(
    dump: str | os.PathLike[str], idx: TraceIndex, prefixes: set[str], facts: Facts = proto_facts
) -> tuple[set[str], Iterable[tuple[int, bytes]]] | None:
    """The trace ids starting with any of ``prefixes``, and (record offset, body) of their
    records in file order, each checked to hold the traces the index says it holds.

    None, logged in one line, when the index does not hold for the dump: the
    caller reads the dump instead.  Every record is checked before any is
    handed over.
    """
    found, records, claims = idx.find(prefixes)
    name = os.fspath(dump)
    hold = sum(length for _, length in records) <= LOOKUP_HELD_BYTES
    out: list[tuple[int, bytes]] = []
    offset = 0
    try:
        for offset, body in read_records(name, records):
            ids, _ = facts(body, name, offset)
            absent = claims[offset + 4] - set(ids)
            if absent:
                raise FormatError(
                    name, offset, f"the record holds no trace {next(iter(absent)).hex()}"
                )
            if hold:
                out.append((offset, body))
    except Exception as exc:  # any fault: reading the dump itself will say what is wrong
        if isinstance(exc, FormatError):
            _refused(name, f"it does not match {name}: {exc.reason}", exc.offset)
        else:
            _refused(name, f"it does not match {name}: {type(exc).__name__}: {exc}", offset)
        return None
    return found, (out if hold else read_records(name, records))
