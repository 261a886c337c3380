"""Reads that stop at a limit: a record, line or document never takes more memory than that.

A few kilobytes of zstd or gzip can expand to gigabytes; so can a length
prefix or a line with no end.  These helpers read a chunk at a time and give
up (return None, or raise for zstd) as soon as the limit is passed, so what
was allocated stays near the limit whatever the input claims.
"""

from __future__ import annotations

import os
import threading
from typing import IO, Any, Final, cast

from .. import limits
from .errors import FormatError

#: What one read asks for while the total is unknown.
CHUNK: Final = 1 << 16


def read_at_most(f: IO[bytes], limit: int, size: int | None = None) -> bytes | None:
    """The rest of ``f``, or None when it holds more than ``limit`` bytes.

    ``size`` is how much is left when that is known (a plain file): the
    answer is then given without reading past the limit.
    """
    if size is not None:
        return f.read() if size <= limit else None
    buf = bytearray()
    while len(buf) <= limit:
        chunk = f.read(min(CHUNK, limit + 1 - len(buf)))
        if not chunk:
            return bytes(buf)
        buf += chunk
    return None


def skip(f: IO[bytes], n: int, seekable: bool) -> int:
    """Pass ``n`` bytes of ``f`` without keeping them; how many there were (fewer at the end)."""
    if seekable:
        here = f.tell()
        end = min(here + n, f.seek(0, os.SEEK_END))
        f.seek(end)
        return end - here
    passed = 0
    while passed < n:
        chunk = f.read(min(CHUNK, n - passed))
        if not chunk:
            break
        passed += len(chunk)
    return passed


def read_line(f: IO[bytes], limit: int) -> tuple[bytes, int]:
    """The next line of ``f`` and its length, or ``(b"", length)`` for a line over ``limit``.

    A line over the limit is read on to its end a chunk at a time and
    dropped; ``(b"", 0)`` is the end of the input.
    """
    line = f.readline(limit + 1)
    if len(line) <= limit or line.endswith(b"\n"):
        return line, len(line)
    length = len(line)
    while not line.endswith(b"\n"):
        line = f.readline(CHUNK)
        if not line:
            break
        length += len(line)
    return b"", length


_local = threading.local()


def _decompressor() -> Any:
    """This thread's zstd decompressor (making one costs more than decompressing a record)."""
    made = getattr(_local, "zstd", None)
    if made is None:
        # lazy: only a zstd-compressed file needs it
        import zstandard

        made = _local.zstd = zstandard.ZstdDecompressor()
    return made


def decompress_zstd(data: bytes, source: str, offset: int) -> bytes:
    """One zstd frame (the record at ``offset``), decompressed no further than the record limit.

    Raises :class:`FormatError` for a bad or cut-short frame, or one that
    expands past :data:`~.limits.MAX_RECORD_BYTES`.
    """
    # lazy: only a zstd-compressed file needs it
    import zstandard

    limit = limits.MAX_RECORD_BYTES.bytes()
    too_big = FormatError(
        source, offset, f"record decompresses past {limits.MAX_RECORD_BYTES.text()}"
    )
    try:
        declared = zstandard.frame_content_size(data)
        if declared > limit:
            raise too_big
        if declared >= 0:  # the size is in the frame header: one allocation of it
            return cast(bytes, _decompressor().decompress(data))
        with _decompressor().stream_reader(data) as reader:
            out = read_at_most(reader, limit)
        if out is None:
            raise too_big
        # A stream ends quietly where its input does: whether the frame was
        # whole, only a decompression object says (known to fit by now).
        whole = _decompressor().decompressobj()
        whole.decompress(data)
    except zstandard.ZstdError as exc:
        raise FormatError(source, offset, f"bad zstd frame ({exc})") from exc
    if not whole.eof:
        raise FormatError(source, offset, "bad zstd frame (cut short)")
    return out
