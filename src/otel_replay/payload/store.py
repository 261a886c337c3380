"""Exact payloads kept in a store of the team's own (any fsspec URL), not on the span.

Large ``otel_replay.bytes.*`` payloads (a PDF a tool returned, a raw HTTP
body) make spans heavy for a trace backend, and some backends cut or refuse
them.  With a payload store, the span carries ``otel_replay.ref.<key> =
sha256:<hex>`` instead and the bytes go to ``<store>/<hex>``: content
addressed, so a name never holds a path and a reader checks every byte
against it.  A reader finds them in the stores it is allowed to read
(``otel-replay --refs STORE``, ``OTEL_REPLAY_CONTENT_REFS``), as it reads
content other tools store by reference.

``FileSpanExporter(payload_store=...)`` writes there instead of beside the
file (from its recording thread).  ``ReplaySpanProcessor(payload_store=...)``
moves them out of every exporter's spans as they end (to the OTLP backend
too), and uploads from a thread of its own: the app's thread only queues the
bytes.  A payload the queue has no room for stays on the span; an upload that
fails is counted and said once, and its reference then reads as missing.

``file://`` and plain paths are written directly; other stores need
``fsspec`` and its filesystem's package (``pip install 'otel-replay[refs]'``
and, say, ``s3fs``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import threading
import urllib.parse
from typing import Final

from ..safe_files import replace_atomically
from ..settings import OTEL_REPLAY_PAYLOAD_STORE, Once
from .codec import sha256

__all__ = ["OTEL_REPLAY_PAYLOAD_STORE", "PayloadStore", "Uploader"]

#: Bytes of payloads waiting to be uploaded, at most; past it a payload stays on its span.
MAX_QUEUED_BYTES: Final = 256 * 1024 * 1024

logger = logging.getLogger(__name__)
_PREFIX = "sha256:"


class PayloadStore:
    """A content-addressed store at ``base`` (a URL, or a directory path)."""

    def __init__(self, base: str) -> None:
        if "://" not in base:
            base = "file://" + os.path.abspath(os.path.expanduser(base))
        self.base = base.rstrip("/")
        parts = urllib.parse.urlsplit(self.base)
        #: The directory of a ``file://`` store; None for any other kind.
        self.directory = urllib.parse.unquote(parts.path) if parts.scheme == "file" else None

    def ref(self, data: bytes) -> str:
        """The reference ``data`` is kept under."""
        return _PREFIX + sha256(data)

    def put(self, data: bytes) -> str:
        """Keep ``data`` (once: its name is its digest); its reference.  Raises what the
        store raises (``OSError``, a store's own errors)."""
        digest = sha256(data)
        if self.directory is not None:
            path = os.path.join(self.directory, digest)
            if not os.path.isfile(path):
                os.makedirs(self.directory, exist_ok=True)
                replace_atomically(path, data)  # a reader never sees half a payload
        else:
            # optional: the refs extra (fsspec)
            import fsspec

            fs, root = fsspec.core.url_to_fs(self.base)
            target = f"{root}/{digest}"
            if not fs.exists(target):
                fs.pipe_file(target, data)
        return _PREFIX + digest

    def kept_if_written(self) -> contextlib.AbstractContextManager[None]:
        """For the file exporter: a payload nothing names is left (content addressed: it
        costs space, never a wrong read)."""
        return contextlib.nullcontext()


class Uploader:
    """Puts payloads into a :class:`PayloadStore` from a thread of its own."""

    def __init__(self, store: PayloadStore) -> None:
        self.store = store
        self.failed = 0
        self._queue: queue.Queue[bytes | None] = queue.Queue()
        self._queued = 0
        self._lock = threading.Lock()
        self._once = Once(logger)  # the first failure is said, the others counted
        self._thread: threading.Thread | None = None

    def offer(self, data: bytes) -> str | None:
        """Queue ``data``; its reference, or None when the queue is full (keep it inline)."""
        with self._lock:
            if self._queued + len(data) > MAX_QUEUED_BYTES:
                return None
            self._queued += len(data)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="otel-replay-payloads", daemon=True
                )
                self._thread.start()
        self._queue.put(data)
        return self.store.ref(data)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every queued payload is uploaded; False when ``timeout`` passed first."""
        done = threading.Event()

        def wait() -> None:
            self._queue.join()
            done.set()

        threading.Thread(target=wait, daemon=True).start()
        return done.wait(timeout)

    def close(self, timeout: float | None = 30.0) -> None:
        self.flush(timeout)
        if self._thread is not None:
            self._queue.put(None)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            try:
                if data is None:
                    return
                try:
                    self.store.put(data)
                except Exception as exc:  # the store's trouble must never reach the app
                    self.failed += 1
                    self._once.warn(
                        "put",
                        "otel-replay could not keep a payload in %s (%r); its span names "
                        "it, and it reads as missing (more failures are only counted)",
                        self.store.base,
                        exc,
                    )
                finally:
                    with self._lock:
                        self._queued -= len(data)
            finally:
                self._queue.task_done()
