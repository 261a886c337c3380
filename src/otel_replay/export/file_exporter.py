"""``FileSpanExporter``: spans to a local file in the Collector's proto dump format.

Each export writes one record (see :mod:`otel_replay.store.framing`), what
the Collector ``fileexporter`` writes with ``format: proto``, so one reader
serves both.  The record goes out in a single ``write`` on an ``O_APPEND``
descriptor under an exclusive ``flock``: several processes may append to one
file, and once ``export`` returns the bytes are in the OS (a killed process
loses nothing exported).  A torn tail left by a killed writer is cut before
appending.  Exporting never raises: failures are counted in :attr:`dropped`
and logged once.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import weakref
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from ..blobs import BlobStore
from ..capture.redaction import redactor
from ..payload_attributes import DEFAULT_MAX_INLINE_BYTES
from ..store import framing
from .encoder import encode_request

__all__ = ["FileSpanExporter"]

logger = logging.getLogger("otel_replay")


def _env_int(name: str, default: int) -> int:
    try:
        return int(os.environ.get(name, default))
    except ValueError:
        return default


class NotATraceFile(OSError):
    """The file holds something other than length-prefixed OTLP records."""


class FileSpanExporter(SpanExporter):
    """Append spans to ``path`` (default ``OTEL_REPLAY_FILE`` or ``otel-replay.otlp``).

    Payloads larger than ``max_inline_bytes`` (``OTEL_REPLAY_MAX_INLINE_BYTES``)
    go to the blob store beside the file; ``fsync`` (``OTEL_REPLAY_FSYNC``)
    also survives a machine crash, at a cost per export.  Spans that could not
    be written are counted in :attr:`dropped`.
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
            else os.environ.get("OTEL_REPLAY_FSYNC", "").strip().lower() in ("1", "true", "yes")
        )
        self.blobs = BlobStore(self.path)
        self.dropped = 0
        self._count_lock = threading.Lock()
        self._warned = False
        self._closed = False
        self._reset()
        ref = weakref.WeakMethod(self._reset)
        # The child must not share our descriptor: flock locks belong to the
        # open file, so parent and child would not exclude each other.
        os.register_at_fork(after_in_child=lambda: (m := ref()) and m(inherited=True))

    def _reset(self, inherited: bool = False) -> None:
        if inherited and self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._lock = threading.Lock()  # flock does not exclude threads sharing one descriptor
        self._fd: int | None = None
        self._end: int | None = None  # where our last record ended, if we wrote last

    # --- writing -----------------------------------------------------------------

    def _open(self) -> int:
        if self._fd is None:
            parent = os.path.dirname(self.path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            self._fd = os.open(
                self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644
            )
            self._end = None  # checked under the lock before the first append
        return self._fd

    def _tail(self, fd: int) -> int:
        """Offset where the next record lands, after cutting a torn tail (lock held)."""
        size = os.fstat(fd).st_size
        if size == self._end:
            return size  # nobody wrote since us: the common case, one fstat
        # Someone else appended (or this is our first write): their records
        # should chain from where ours ended.
        start = self._end if self._end is not None and self._end <= size else 0
        end = framing.walk(fd, start, size)
        if end != size and start:
            end = framing.walk(fd, 0, size)  # confirm from the start before cutting
        if end != size:
            # Past a good record the tail can only be a killed writer's; a file
            # whose very first record is implausible is somebody else's file.
            if end == 0 and not framing.looks_torn(fd, end):
                raise NotATraceFile(
                    f"{self.path} does not look like a length-prefixed OTLP file "
                    f"(at byte {end}); not appending to it"
                )
            logger.warning(
                "otel-replay: %s ends in a torn record at byte %d (a writer was killed); "
                "cutting %d bytes before appending",
                self.path,
                end,
                size - end,
            )
            os.ftruncate(fd, end)
        return end

    def _append(self, record: bytes) -> None:
        with self._lock:
            if self._closed:
                raise ValueError("exporter is shut down")
            fd = self._open()
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                start = self._tail(fd)
                self._end = None
                try:
                    view = memoryview(record)
                    while view:
                        written = os.write(fd, view)
                        if written <= 0:
                            raise OSError("write returned 0")
                        view = view[written:]
                except BaseException:
                    # A partial record would hide every later one from readers.
                    with contextlib.suppress(OSError):
                        os.ftruncate(fd, start)
                    raise
                self._end = start + len(record)
                if self.fsync:
                    os.fsync(fd)
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _encode(self, spans: Sequence[ReadableSpan]) -> tuple[bytes, int]:
        """The request body, and how many spans had to be left out."""
        redact = redactor().is_secret_key

        def encode(batch: Sequence[ReadableSpan]) -> bytes:
            return encode_request(
                batch, max_inline=self.max_inline, blobs=self.blobs, redact_key=redact
            )

        try:
            return encode(spans), 0
        except Exception as exc:
            # One strange span should not cost the batch: keep those that encode alone.
            good = []
            for span in spans:
                with contextlib.suppress(Exception):
                    encode([span])
                    good.append(span)
            if not good:
                raise
            self._warn(f"{len(spans) - len(good)} spans could not be encoded ({exc!r})")
            return encode(good), len(spans) - len(good)

    def _warn(self, reason: str) -> None:
        if not self._warned:
            self._warned = True
            logger.warning(
                "otel-replay: cannot write spans to %s (%s); dropping them and counting "
                "(further failures are only counted)",
                self.path,
                reason,
            )

    # --- SpanExporter --------------------------------------------------------------

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write ``spans`` as one record; never raises."""
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            body, left_out = self._encode(spans)
            self._append(framing.HEADER.pack(len(body)) + body)
        except Exception as exc:  # a tracing problem must never reach the app
            self._count(len(spans))
            self._warn(repr(exc))
            return SpanExportResult.FAILURE
        if left_out:
            self._count(left_out)
        return SpanExportResult.SUCCESS

    def _count(self, n: int) -> None:
        with self._count_lock:  # exports may run on several threads (SimpleSpanProcessor)
            self.dropped += n

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Always true: every export is written through before it returns."""
        return True

    def shutdown(self) -> None:
        """Close the file; later exports fail (and are counted)."""
        with self._lock:
            self._closed = True
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    os.close(self._fd)
                self._fd = None
        if self.dropped:
            logger.error(
                "otel-replay: %d spans could not be written to %s", self.dropped, self.path
            )
