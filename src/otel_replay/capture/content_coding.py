"""Content codings of recorded HTTP bodies: a body is recorded as the client reads it.

httpx hands a transport the bytes as sent (gzip, which it asks for by default,
deflate, zstd, br, or several one on another); the recorder decodes them
before scrubbing, since a secret inside compressed bytes would survive
scrubbing and come back on decompression.  A coding httpx would not decode, or
bytes that do not decode, leave the body out of the recording.
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any, Protocol


class _Decoder(Protocol):
    def decode(self, data: bytes) -> bytes: ...

    def flush(self) -> bytes: ...


class _Zlib:
    """gzip, or deflate: zlib-wrapped as the standard says, or raw as some servers send it."""

    def __init__(self, wbits: int, raw_fallback: bool = False) -> None:
        self._d = zlib.decompressobj(wbits)
        self._fallback = raw_fallback
        self._started = False

    def decode(self, data: bytes) -> bytes:
        if not data:
            return b""
        try:
            out = self._d.decompress(data)
        except zlib.error:
            if not self._fallback or self._started:
                raise
            self._d = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._d.decompress(data)
        self._started = True
        return out

    def flush(self) -> bytes:
        return self._d.flush()


class _Zstd:
    """zstd, frame after frame."""

    def __init__(self) -> None:
        # lazy: only a zstd-compressed file needs it
        import zstandard

        self._make = zstandard.ZstdDecompressor().decompressobj
        self._d = self._make()

    def decode(self, data: bytes) -> bytes:
        out = [self._d.decompress(data)] if data else []
        while self._d.eof and self._d.unused_data:
            rest = self._d.unused_data
            self._d = self._make()
            out.append(self._d.decompress(rest))
        return b"".join(out)

    def flush(self) -> bytes:
        return b""


class _Brotli:
    def __init__(self) -> None:
        try:  # the libraries httpx decodes br with, when one is installed
            brotli = importlib.import_module("brotli")
        except ImportError:
            brotli = importlib.import_module("brotlicffi")
        self._d = brotli.Decompressor()

    def decode(self, data: bytes) -> bytes:
        out = self._d.process(data) if hasattr(self._d, "process") else self._d.decompress(data)
        return bytes(out)

    def flush(self) -> bytes:
        return b""


class _Identity:
    def decode(self, data: bytes) -> bytes:
        return data

    def flush(self) -> bytes:
        return b""


def _decoder(coding: str) -> _Decoder:
    """A decoder of one content coding httpx decodes; raises for any other (or one whose
    library is not installed: the client then reads the coded bytes)."""
    if coding == "gzip":
        return _Zlib(16 + zlib.MAX_WBITS)
    if coding == "deflate":
        return _Zlib(zlib.MAX_WBITS, raw_fallback=True)
    if coding == "zstd":
        return _Zstd()
    if coding == "br":
        return _Brotli()
    if coding == "identity":
        return _Identity()
    raise ValueError(f"unknown content coding {coding!r}")


def codings(headers: Any) -> list[str]:
    """The content codings a body came in, in the order they were applied (none: [])."""
    if headers is None:
        return []
    found: list[str] = []
    for name, value in headers.multi_items():
        if name.lower() == "content-encoding":
            found += [c.strip().lower() for c in value.split(",") if c.strip()]
    return [] if all(c == "identity" for c in found) else found


def decoded(chunks: list[bytes], codings: list[str]) -> list[bytes]:
    """Each chunk as far as it decodes (the last with what the decoders still held)."""
    chain = [_decoder(c) for c in reversed(codings)]
    out: list[bytes] = []
    for chunk in chunks:
        for d in chain:
            chunk = d.decode(chunk)
        out.append(chunk)
    tail = b""
    for d in chain:
        tail = d.decode(tail) + d.flush()
    if out:
        out[-1] += tail
    else:
        out.append(tail)
    return out


def cannot_decode(codings: list[str], exc: Exception) -> str:
    return f"cannot decode content-encoding {', '.join(codings)} ({exc})"
