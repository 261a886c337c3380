"""``FileSpanExporter``: spans to a local file in the Collector's proto dump format.

Each export writes one record: a 4-byte big-endian length, then a serialized
OTLP ``ExportTraceServiceRequest`` — what the Collector ``fileexporter``
writes with ``format: proto``, so one reader serves both.  The record goes
out in a single ``write`` on an ``O_APPEND`` descriptor under an exclusive
``flock``: several processes may append to one file, and once ``export``
returns the bytes are in the OS (a killed process loses nothing exported).
A torn tail left by a killed writer is cut before appending.  Exporting
never raises: failures are counted in :attr:`dropped` and logged once.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import struct
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..blobs import BlobStore
from ..capture.redaction import redactor
from ..payload_attributes import DEFAULT_MAX_INLINE_BYTES
from .encoder import encode_request

logger = logging.getLogger("otel_replay")
_HEADER = struct.Struct(">I")


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class FileSpanExporter(SpanExporter):
    """Append spans to ``path`` (default ``OTEL_REPLAY_FILE`` or ``otel-replay.otlp``).

    Payloads larger than ``max_inline_bytes`` (``OTEL_REPLAY_MAX_INLINE_BYTES``)
    go to the blob store beside the file; ``fsync`` (``OTEL_REPLAY_FSYNC``)
    also survives a machine crash, at a cost per export.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_inline_bytes: int | None = None,
        fsync: bool | None = None,
    ) -> None:
        self.path = (
            os.fspath(path)
            if path is not None
            else os.environ.get("OTEL_REPLAY_FILE", "otel-replay.otlp")
        )
        self.max_inline = (
            max_inline_bytes
            if max_inline_bytes is not None
            else _env_int("OTEL_REPLAY_MAX_INLINE_BYTES", DEFAULT_MAX_INLINE_BYTES)
        )
        self.fsync = (
            fsync
            if fsync is not None
            else os.environ.get("OTEL_REPLAY_FSYNC", "").lower() in ("1", "true", "yes")
        )
        self.blobs = BlobStore(self.path)
        self.dropped = 0
        self._fd: int | None = None
        self._warned = False
        self._closed = False

    def _open(self) -> int:
        if self._fd is None:
            parent = os.path.dirname(self.path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                try:
                    self._repair(fd)
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
            except BaseException:
                os.close(fd)
                raise
            self._fd = fd
        return self._fd

    def _repair(self, fd: int) -> None:
        """Cut a torn last record (a writer killed mid-write) so appends follow good data."""
        size = os.fstat(fd).st_size
        offset = 0
        with open(self.path, "rb") as f:
            while offset < size:
                f.seek(offset)
                header = f.read(4)
                if len(header) < 4:
                    break
                (length,) = _HEADER.unpack(header)
                if offset + 4 + length > size:
                    break
                offset += 4 + length
        if offset < size:
            logger.warning(
                "otel-replay: %s ended in a torn record at byte %d (a writer was killed); "
                "cutting it before appending",
                self.path,
                offset,
            )
            os.ftruncate(fd, offset)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._closed or not spans:
            return SpanExportResult.SUCCESS if not self._closed else SpanExportResult.FAILURE
        try:
            body = encode_request(
                spans,
                max_inline=self.max_inline,
                blobs=self.blobs,
                redact_key=redactor().is_secret_key,
            )
            record = _HEADER.pack(len(body)) + body
            fd = self._open()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                view = memoryview(record)
                while view:
                    written = os.write(fd, view)
                    view = view[written:]
                if self.fsync:
                    os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        except Exception as exc:  # a tracing problem must never reach the app
            self.dropped += len(spans)
            if not self._warned:
                self._warned = True
                logger.warning(
                    "otel-replay: cannot write spans to %s (%r); dropping them and counting",
                    self.path,
                    exc,
                )
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True  # every export is already written through

    def shutdown(self) -> None:
        self._closed = True
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        if self.dropped:
            logger.error(
                "otel-replay: %d spans could not be written to %s", self.dropped, self.path
            )
