"""``FileSpanExporter``: spans to a local file, as the Collector ``fileexporter`` writes them.

Each export writes one record, in one of the Collector's layouts:

``format: proto`` (default)  a 4-byte big-endian length and the serialized
                             ``ExportTraceServiceRequest`` (:mod:`otel_replay.otlp.framing`)
``format: json``             the request as one line of OTLP/JSON, byte for byte what
                             pdata's ``JSONMarshaler`` writes (:mod:`otel_replay.otlp.json_writer`)
``compression: zstd``        either one compressed as a zstd frame of its own, inside
                             the 4-byte length prefix (the Collector length-prefixes
                             compressed JSON too)

so one reader serves both.  The record goes out in a single ``write`` on an
``O_APPEND`` descriptor under an exclusive ``flock``: several processes may
append to one file, and once ``export`` returns the bytes are in the OS (a
killed process loses nothing exported).  A torn tail left by a killed writer
is cut before appending.

With rotation (``max_megabytes``), a record that would take the file past
the limit first renames it ``<name>-<UTC time><ext>``, lumberjack's name, and
starts a new file; old backups are pruned by count and age.  The rename
happens under the lock of the file renamed, and a writer checks, under its
lock, that the path still names the file it holds before appending, so
processes sharing a file follow each other's rotations.  Payloads moved to
the blob store stay in the live name's ``.blobs`` directory, shared by every
backup (``load`` looks there for a rotated file's blobs).

Exporting never raises: failures are counted in :attr:`dropped` and logged
once; settings that make no sense are logged and replaced by defaults.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import settings
from ..otlp import framing
from ..otlp.framing import frame
from ..otlp.rotation import INDEX_SUFFIX
from ..otlp.sdk_fields import reads_as_sdk
from ..payload.blobs import Blobs, BlobStore
from ..payload.store import PayloadStore
from .readable_spans import copied
from .scrub import hidden_copy

if TYPE_CHECKING:
    from ..otlp import rotation as rot

__all__ = [
    "COMPRESSIONS",
    "DEFAULT_LOCK_TIMEOUT",
    "FORMATS",
    "FileSpanExporter",
    "LockTimeout",
    "NotATraceFile",
    "format_for",
    "frame",
]

logger = logging.getLogger("otel_replay")

FORMATS = ("proto", "json")
COMPRESSIONS = ("zstd",)

#: File names that say JSON (before a compression suffix): the Collector writes JSON
#: lines by default, and a user naming ``runs.json`` expects JSON in it.
_JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
_COMPRESSION_SUFFIXES = (".zst", ".zstd")


def format_for(path: str | os.PathLike[str]) -> str | None:
    """The format a file's name says (``json`` for ``runs.json``, ``runs.jsonl.zst``...),
    ``None`` when it says none (``runs.otlp``, ``-``): then protobuf, the default."""
    name = os.fspath(path).lower()
    for suffix in _COMPRESSION_SUFFIXES:
        name = name.removesuffix(suffix)
    return "json" if name.endswith(_JSON_SUFFIXES) else None


def _choice(
    value: str | None, env: str, choices: tuple[str, ...], default: str | None
) -> str | None:
    """``value``, else the environment's; one of ``choices`` ("none" for no choice)."""
    raw = value if value is not None else settings.current().value(env)
    if raw is None or not raw.strip():
        return default
    text = raw.strip().lower()
    if text in choices:
        return text
    if text == "none" and default is None:
        return None
    logger.warning(
        "otel-replay: %s %r is not one of %s; using %s",
        env,
        raw,
        ", ".join(choices),
        default or "none",
    )
    return default


def _encoder(format: str) -> Callable[..., bytes]:
    """The request encoder of ``format``, imported on the first export (not with the API)."""
    if format == "json":
        # lazy: imported on first use, not with the package
        from ..otlp.json_writer import encode_json_request

        return encode_json_request
    # lazy: imported on first use, not with the package
    from ..otlp.proto_writer import encode_request

    return encode_request


class NotATraceFile(OSError):
    """The file holds something other than records of the exporter's format."""


class LockTimeout(OSError):
    """The file stayed locked by another writer past the exporter's ``lock_timeout``."""


def _utf8_safe(text: str) -> str:
    """``text`` itself, or with each lone surrogate replaced by U+FFFD (a pair is joined
    into its character)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


#: What ``_writable`` reads of a span.
_NAMED: Final = ("name", "events")

#: Seconds an export waits for another writer's lock before dropping its spans.
DEFAULT_LOCK_TIMEOUT: Final = settings.DEFAULT_OTEL_REPLAY_LOCK_TIMEOUT


class FileSpanExporter(SpanExporter):
    """Append spans to ``path`` (default ``OTEL_REPLAY_FILE`` or ``otel-replay.otlp``).

    Every setting has an environment variable, read when the argument is not
    given (the SDK builds ``OTEL_TRACES_EXPORTER=otel_replay_file`` without
    arguments):

    - ``format`` (``OTEL_REPLAY_FORMAT``): ``proto`` (default) or ``json``
    - ``compression`` (``OTEL_REPLAY_COMPRESSION``): ``zstd``, or none (default)
    - ``max_megabytes`` (``OTEL_REPLAY_ROTATE_MB``): rotate before the file
      grows past this size; unset or 0: never rotate
    - ``max_backups`` (``OTEL_REPLAY_ROTATE_MAX_BACKUPS``, default 100, 0 keeps
      all), ``max_days`` (``OTEL_REPLAY_ROTATE_MAX_DAYS``, default 0: any age),
      ``localtime`` (``OTEL_REPLAY_ROTATE_LOCALTIME``): as the Collector's
      ``rotation:`` block
    - ``max_inline_bytes`` (``OTEL_REPLAY_MAX_INLINE_BYTES``): larger exact
      payloads go to the blob store beside the file
    - ``payload_store`` (``OTEL_REPLAY_PAYLOAD_STORE``): a store of your own
      for them instead, any fsspec URL or a directory (see
      :mod:`otel_replay.payload.store`)
    - ``fsync`` (``OTEL_REPLAY_FSYNC``): also survive a machine crash, at a
      cost per export
    - ``lock_timeout`` (``OTEL_REPLAY_LOCK_TIMEOUT``, seconds, default 1): how
      long an export waits while another writer holds the file; past it the
      spans are dropped and counted (the app's thread never waits longer)

    Spans that could not be written are counted in :attr:`dropped`; a span or
    event name holding a lone surrogate (no UTF-8 spelling) is written with
    U+FFFD in its place, said once and counted in :attr:`names_replaced`.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        max_inline_bytes: int | None = None,
        fsync: bool | None = None,
        format: str | None = None,  # the Collector's name for it
        compression: str | None = None,
        max_megabytes: float | None = None,
        max_backups: int | None = None,
        max_days: float | None = None,
        localtime: bool | None = None,
        lock_timeout: float | None = None,
        payload_store: str | None = None,
    ) -> None:
        env = settings.current()
        named = path if path is not None else env.file
        # Unless a format is given, the file's name says it (runs.jsonl: JSON lines).
        implied = format_for(named) if named else None
        self.format = _choice(format, settings.OTEL_REPLAY_FORMAT, FORMATS, implied) or "proto"
        self.compression = _choice(
            compression, settings.OTEL_REPLAY_COMPRESSION, COMPRESSIONS, None
        )
        default_name = "otel-replay.jsonl" if self.format == "json" else "otel-replay.otlp"
        self.path = os.fspath(named) if named else default_name
        self.max_inline = max_inline_bytes if max_inline_bytes is not None else env.max_inline_bytes
        self.fsync = fsync if fsync is not None else env.fsync
        self.lock_timeout = max(0.0, lock_timeout if lock_timeout is not None else env.lock_timeout)
        self.rotation = self._rotation(max_megabytes, max_backups, max_days, localtime)
        #: JSON lines: a line per record; otherwise 4-byte length-prefixed records.
        self._lines = self.format == "json" and self.compression is None
        store = payload_store or env.payload_store
        self.blobs: Blobs = PayloadStore(store) if store else BlobStore(self.path)
        self.dropped = 0
        #: Span and event names written with U+FFFD for a lone surrogate (not UTF-8).
        self.names_replaced = 0
        self._count_lock = threading.Lock()
        self._once = settings.Once()  # each problem said once per exporter
        self._closed = False
        self._local = threading.local()  # a zstd compressor per thread
        self._reset()
        ref = weakref.WeakMethod(self._reset)
        # The child must not share our descriptor: flock locks belong to the
        # open file, so parent and child would not exclude each other.
        os.register_at_fork(after_in_child=lambda: (m := ref()) and m(inherited=True))

    @staticmethod
    def _rotation(
        max_megabytes: float | None,
        max_backups: int | None,
        max_days: float | None,
        localtime: bool | None,
    ) -> rot.Rotation | None:
        env = settings.current()
        mb = max_megabytes if max_megabytes is not None else env.rotate_mb
        if not mb or mb <= 0:
            return None
        from ..otlp import rotation as rot  # only a rotating exporter needs it

        backups = max_backups if max_backups is not None else env.rotate_max_backups
        days = max_days if max_days is not None else env.rotate_max_days
        if backups < 0 or days < 0:
            logger.warning(
                "otel-replay: negative rotation limits (max_backups %s, max_days %s) mean no limit",
                backups,
                days,
            )
        if localtime is None:
            localtime = env.rotate_localtime
        return rot.Rotation(
            max_megabytes=mb,
            max_backups=max(0, backups),
            max_days=max(0.0, days),
            localtime=localtime,
        )

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

    def _drop_fd(self) -> None:
        """Close our descriptor (which releases its lock); the next append reopens the path."""
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None
        self._end = None

    def _still_named(self, fd: int) -> bool:
        """Whether the path still names the file ``fd`` holds (not rotated or deleted since)."""
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            return False
        held = os.fstat(fd)
        return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)

    def _tail(self, fd: int) -> int:
        """Offset where the next record lands, after cutting a torn tail (lock held)."""
        size = os.fstat(fd).st_size
        if size == self._end:
            return size  # nobody wrote since us: the common case, one fstat
        # Someone else appended (or this is our first write): their records
        # should chain from where ours ended.
        start = self._end if self._end is not None and self._end <= size else 0
        # Only a file in our layout is appended to, and only a tail that looks
        # like our record cut short is cut: anything else (a package.json, a
        # binary, JSON that is not OTLP) is somebody else's file, left as it is.
        if self._lines:
            end = framing.last_line_end(fd, size)
            ours = size == 0 or (
                framing.starts_json_record(fd, 0, size)
                and (end == 0 or os.pread(fd, 2, end - 2) == b"}\n")
                and (end == size or framing.starts_json_record(fd, end, size))
            )
        else:
            end = framing.walk(fd, start, size)
            if end != size and start:
                end = framing.walk(fd, 0, size)  # confirm from the start before cutting
            ours = end == size or framing.looks_torn(fd, end, size)
        if not ours:
            raise NotATraceFile(
                f"{self.path} does not look like a file of {self._describe()} "
                f"(at byte {end}); not appending to it"
            )
        if end != size:
            logger.warning(
                "otel-replay: %s ends in a torn record at byte %d (a writer was killed); "
                "cutting %d bytes before appending",
                self.path,
                end,
                size - end,
            )
            os.ftruncate(fd, end)
        return end

    def _describe(self) -> str:
        layout = "OTLP/JSON lines" if self._lines else "length-prefixed OTLP records"
        return layout + (" (zstd)" if self.compression else "")

    def _append(self, record: bytes) -> None:
        deadline = time.monotonic() + self.lock_timeout
        if not self._lock.acquire(timeout=self.lock_timeout):
            raise LockTimeout(f"another thread held {self.path} past {self.lock_timeout} s")
        try:
            if self._closed:
                raise ValueError("exporter is shut down")
            # Each pass either appends, or makes way: follows another writer's
            # rotation (or deletion) of the path, or rotates the full file itself.
            for _ in range(1000):
                fd = self._open()
                self._flock(fd, deadline)
                if not self._still_named(fd):
                    self._drop_fd()
                    continue
                try:
                    start = self._tail(fd)
                    if self._rotate_before(fd, start, len(record)):
                        self._drop_fd()
                        continue
                    self._write(fd, start, record)
                finally:
                    if self._fd == fd:
                        fcntl.flock(fd, fcntl.LOCK_UN)
                return
            raise OSError(f"{self.path} kept changing under the exporter")
        finally:
            self._lock.release()

    def cut_torn_tail(self) -> int:
        """Cut now, under the file's lock as an append does, a record a killed writer left
        torn at the end of the file (said as an append says it); the bytes cut, 0 when
        the file ends in a whole record or is not there.  Raises what an append would
        meet (:class:`NotATraceFile`, :class:`LockTimeout`, ``OSError``)."""
        if not os.path.isfile(self.path):
            return 0
        deadline = time.monotonic() + self.lock_timeout
        if not self._lock.acquire(timeout=self.lock_timeout):
            raise LockTimeout(f"another thread held {self.path} past {self.lock_timeout} s")
        try:
            fd = self._open()
            self._flock(fd, deadline)
            try:
                size = os.fstat(fd).st_size
                return size - self._tail(fd)
            finally:
                if self._fd == fd:
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()

    def _flock(self, fd: int, deadline: float) -> None:
        """Lock the file, waiting no later than ``deadline`` (then :class:`LockTimeout`).

        Another process may hold the lock for long (a stopped writer, a slow
        disk); the app's thread (a ``SimpleSpanProcessor``) must not wait on it.
        """
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                left = deadline - time.monotonic()
                if left <= 0:
                    self._drop_fd()
                    raise LockTimeout(
                        f"another process held {self.path} past {self.lock_timeout} s"
                    ) from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, 0.05)

    def _write(self, fd: int, start: int, record: bytes) -> None:
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

    def _rotate_before(self, fd: int, size: int, length: int) -> bool:
        """Rotate when ``length`` more bytes would pass the limit; whether it rotated.

        A record larger than the limit goes alone into a file of its own
        (lumberjack refuses it; a replay tool must not lose it).
        """
        rotation = self.rotation
        if rotation is None or size + length <= rotation.max_bytes:
            return False
        if size == 0:
            self._once.warn(
                "oversize",
                "otel-replay: a record of %d bytes is larger than the rotation size of "
                "%s (%d bytes); it is written alone in a file of its own",
                length,
                self.path,
                rotation.max_bytes,
            )
            return False
        # Only a rotating exporter needs it.
        from ..otlp import rotation as rot

        now = rotation.now()
        backup = rot.free_backup_name(self.path, now)
        os.rename(self.path, backup)  # under the lock of the file renamed
        with contextlib.suppress(OSError):  # the index still describes the renamed file
            os.rename(self.path + INDEX_SUFFIX, backup + INDEX_SUFFIX)
        if self.fsync:
            _fsync_dir(os.path.dirname(self.path) or ".")
        try:
            rot.prune(self.path, rotation, now)
        except OSError as exc:
            logger.warning("otel-replay: cannot prune the backups of %s (%s)", self.path, exc)
        return True

    def _frame(self, body: bytes) -> bytes:
        compressor = None
        if self.compression == "zstd":
            compressor = getattr(self._local, "zstd", None)
            if compressor is None:
                # lazy: only a zstd-compressed file needs it
                import zstandard

                compressor = self._local.zstd = zstandard.ZstdCompressor()
        return frame(body, self.format, self.compression, compressor)

    def _encode(self, spans: Sequence[ReadableSpan]) -> tuple[bytes, int]:
        """The request body, and how many spans had to be left out."""
        encoder = _encoder(self.format)
        # Spans of a provider without ReplaySpanProcessor reach us unscrubbed.
        spans = [hidden_copy(span) for span in spans]
        proto = self.format == "proto"
        if not proto:
            spans = [self._writable(span) for span in spans]

        def encode(batch: Sequence[ReadableSpan]) -> bytes:
            return encoder(batch, max_inline=self.max_inline, blobs=self.blobs)

        try:
            return encode(spans), 0
        except Exception as exc:
            failure = exc
        if proto:
            # The protobuf encoder fails on a span or event name holding a lone surrogate:
            # names are made writable only then (looking costs every span a walk).
            spans = [self._writable(span) for span in spans]
            try:
                return encode(spans), 0
            except Exception as exc:
                failure = exc
        # One strange span should not cost the batch: keep those that encode alone.
        good = []
        for span in spans:
            with contextlib.suppress(Exception):
                encode([span])
                good.append(span)
        if not good:
            raise failure
        self._warn(f"{len(spans) - len(good)} spans could not be encoded ({failure!r})")
        return encode(good), len(spans) - len(good)

    def _writable(self, span: ReadableSpan) -> ReadableSpan:
        """``span``, or a copy whose name and event names have each lone surrogate (no
        UTF-8 spelling: the whole span could not be written) replaced by U+FFFD."""
        if reads_as_sdk(type(span), _NAMED):
            given_name, given = span._name, span._events
        else:
            given_name, given = span.name, span.events
        name = _utf8_safe(given_name)
        if not given and name is given_name:
            return span  # (most spans: an ASCII name, no events)
        events = [_utf8_safe(e.name) for e in given]
        if name is given_name and all(n is e.name for n, e in zip(events, given, strict=True)):
            return span
        with self._count_lock:
            self.names_replaced += 1
            if self.names_replaced == 1:
                logger.warning(
                    "otel-replay: a span or event name holds a lone surrogate; written to %s "
                    "with U+FFFD in its place (further ones are only counted)",
                    self.path,
                )
        return copied(
            span,
            name=name,
            events=[
                e if n is e.name else Event(n, e.attributes, e.timestamp)
                for n, e in zip(events, given, strict=True)
            ],
        )

    def _warn(self, reason: str) -> None:
        self._once.warn(
            "write",
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
            with self.blobs.kept_if_written():
                body, left_out = self._encode(spans)
                self._append(self._frame(body))
        except Exception as exc:  # a tracing problem must never reach the app
            self._count(len(spans))
            self._warn(str(exc) if isinstance(exc, NotATraceFile) else repr(exc))
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
            self._drop_fd()
        if self.dropped:
            logger.error(
                "otel-replay: %d spans could not be written to %s", self.dropped, self.path
            )


def _fsync_dir(directory: str) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
