"""``RecordingSpanProcessor``: the recording path that keeps bursts instead of dropping them.

The SDK's ``BatchSpanProcessor`` drops spans silently once its queue (2048)
is full, and encoding is slower than span creation, so a burst loses most of
its spans.  This processor queues ended spans in a deque bounded only by
``max_queue_spans`` (default a million; ``append`` is O(1) and takes no lock
on the app's path) and a daemon thread exports them in batches.  It drops
only when that bound is reached, and then counts and says so.  Secrets in a
span are hidden before any exporter gets it (see :mod:`.scrub`), whatever
exporter it hands them to.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import weakref
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import settings
from .scrub import hidden_copy

__all__ = ["RecordingSpanProcessor"]

logger = logging.getLogger("otel_replay")


class _Flush:
    """A marker in the queue: set once everything queued before it is exported."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = threading.Event()


class RecordingSpanProcessor(SpanProcessor):
    """Export every ended span through ``exporter`` from a background thread.

    ``max_queue_spans`` (``OTEL_REPLAY_MAX_QUEUE``, default 1,000,000) bounds
    memory; past it spans are dropped and counted in :attr:`dropped`, as are
    spans of batches the exporter failed.  A batch goes out when
    ``max_batch`` spans are queued or ``schedule_delay_ms`` has passed.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_spans: int | None = None,
        max_batch: int = 512,
        schedule_delay_ms: float = 200,
    ) -> None:
        self.exporter = exporter
        # Secrets are hidden whatever the exporter (the SDK's OTLP one hides none); ours
        # hide them themselves, and are not made to go over a span twice.
        self._scrubs = _scrubs_itself(exporter)
        if max_queue_spans is None:
            max_queue_spans = settings.current().max_queue
        self.max_queue = max(1, max_queue_spans)
        self.max_batch = max(1, max_batch)
        self.delay = max(0.001, schedule_delay_ms / 1000)  # 0 would spin the worker
        self.dropped = 0
        self._once = settings.Once()  # the first drop is said, the others counted
        self._shutdown = False
        self._start()
        ref = weakref.WeakMethod(self._start)
        # Threads do not survive fork: the child gets a fresh queue and worker
        # (the spans queued at fork time are the parent's to export).
        os.register_at_fork(after_in_child=lambda: (m := ref()) and m())

    def _start(self) -> None:
        self._queue: collections.deque[ReadableSpan | _Flush] = collections.deque()
        self._wake = threading.Event()
        self._count_lock = threading.Lock()
        self._worker = threading.Thread(target=self._run, name="otel-replay-recorder", daemon=True)
        if not self._shutdown:
            self._worker.start()

    # --- the app's side --------------------------------------------------------------

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do at start."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue ``span``: O(1), never blocks, never raises."""
        if self._shutdown:
            return
        queue = self._queue
        if len(queue) >= self.max_queue:
            self._drop(1, f"recording queue full ({self.max_queue} spans)")
            return
        queue.append(span)
        if len(queue) >= self.max_batch and not self._wake.is_set():
            self._wake.set()

    def _drop(self, n: int, reason: str) -> None:
        with self._count_lock:  # rare path: app threads and the worker may both count
            self.dropped += n
        self._once.warn("drop", "otel-replay: %s; dropping spans and counting them", reason)

    # --- the worker ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            self._wake.wait(self.delay)
            self._wake.clear()
            self._drain()
            if self._shutdown and not self._queue:
                return

    def _drain(self) -> None:
        queue, max_batch = self._queue, self.max_batch
        batch: list[ReadableSpan] = []
        while True:
            try:
                item = queue.popleft()
            except IndexError:
                break
            if type(item) is _Flush:
                if batch:
                    self._export(batch)
                    batch = []
                item.done.set()
                continue
            batch.append(item)  # type: ignore[arg-type]
            if len(batch) >= max_batch:
                self._export(batch)
                batch = []
        if batch:
            self._export(batch)

    @staticmethod
    def _hidden(batch: Sequence[ReadableSpan]) -> list[ReadableSpan]:
        # On this thread, not the app's; a span ReplaySpanProcessor scrubbed as it ended
        # is passed as it is.
        return [hidden_copy(span) for span in batch]

    def _export(self, batch: Sequence[ReadableSpan]) -> None:
        try:
            result = self.exporter.export(batch if self._scrubs else self._hidden(batch))
            reason = "the exporter failed"
        except Exception as exc:  # an exporter must not kill the worker
            result = SpanExportResult.FAILURE
            reason = f"the exporter raised {exc!r}"
        if result is not SpanExportResult.SUCCESS:
            self._drop(len(batch), reason)

    # --- SpanProcessor -------------------------------------------------------------

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Export everything queued before this call; True if done within the timeout."""
        if self._shutdown or not self._worker.is_alive():
            return not self._queue
        marker = _Flush()
        self._queue.append(marker)
        self._wake.set()
        return marker.done.wait(max(0, timeout_millis) / 1000)

    def shutdown(self) -> None:
        """Flush, stop the worker and shut the exporter down; reports any drops."""
        if self._shutdown:
            return
        self.force_flush()
        self._shutdown = True
        self._wake.set()
        if self._worker.is_alive() and self._worker is not threading.current_thread():
            self._worker.join(timeout=30)
        try:
            self.exporter.shutdown()
        except Exception as exc:
            logger.warning("otel-replay: exporter shutdown raised %r", exc)
        if self.dropped:
            logger.error(
                "otel-replay: %d spans were dropped while recording (not in the trace)",
                self.dropped,
            )


def _scrubs_itself(exporter: SpanExporter) -> bool:
    """Whether ``exporter`` hides the secrets of what it is given itself (ours do)."""
    # Asked only when an exporter is added: the processor loads without them.
    from .file_exporter import FileSpanExporter
    from .semconv import GenAISemconvExporter

    return isinstance(exporter, (FileSpanExporter, GenAISemconvExporter))
