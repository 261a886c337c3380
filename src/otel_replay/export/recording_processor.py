"""``RecordingSpanProcessor``: the recording path that keeps bursts instead of dropping them.

The SDK's ``BatchSpanProcessor`` drops spans silently once its queue (2048)
is full, and encoding is slower than span creation, so a burst loses most of
its spans.  This processor queues ended spans in an unbounded-by-default
deque (O(1), no lock on the app's path) and a daemon thread exports them in
batches.  It drops only past ``max_queue_spans``, and then counts and says so.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
import weakref
from collections.abc import Sequence

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

logger = logging.getLogger("otel_replay")


class RecordingSpanProcessor(SpanProcessor):
    """Export every ended span through ``exporter`` from a background thread."""

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        max_queue_spans: int | None = None,
        max_batch: int = 512,
        schedule_delay_ms: float = 200,
    ) -> None:
        self.exporter = exporter
        if max_queue_spans is None:
            try:
                max_queue_spans = int(os.environ.get("OTEL_REPLAY_MAX_QUEUE", 1_000_000))
            except ValueError:
                max_queue_spans = 1_000_000
        self.max_queue = max_queue_spans
        self.max_batch = max_batch
        self.delay = schedule_delay_ms / 1000
        self.dropped = 0
        self._warned = False
        self._shutdown = False
        self._start()
        if hasattr(os, "register_at_fork"):
            ref = weakref.WeakMethod(self._start)
            os.register_at_fork(after_in_child=lambda: (m := ref()) and m())

    def _start(self) -> None:
        self._queue: collections.deque[ReadableSpan] = collections.deque()
        self._wake = threading.Event()
        self._idle = threading.Condition()
        self._exported = 0
        self._enqueued = 0
        self._worker = threading.Thread(target=self._run, name="otel-replay-recorder", daemon=True)
        self._worker.start()

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        return None

    def on_end(self, span: ReadableSpan) -> None:
        if self._shutdown:
            return
        if len(self._queue) >= self.max_queue:
            self.dropped += 1
            if not self._warned:
                self._warned = True
                logger.warning(
                    "otel-replay: recording queue full (%d spans); dropping and counting",
                    self.max_queue,
                )
            return
        self._queue.append(span)
        self._enqueued += 1
        if len(self._queue) >= self.max_batch:
            self._wake.set()

    def _run(self) -> None:
        while True:
            self._wake.wait(self.delay)
            self._wake.clear()
            self._drain()
            if self._shutdown and not self._queue:
                return

    def _drain(self) -> None:
        queue = self._queue
        while queue:
            batch: list[ReadableSpan] = []
            try:
                while len(batch) < self.max_batch:
                    batch.append(queue.popleft())
            except IndexError:
                pass
            self._export(batch)
            with self._idle:
                self._exported += len(batch)
                self._idle.notify_all()

    def _export(self, batch: Sequence[ReadableSpan]) -> None:
        try:
            result = self.exporter.export(batch)
        except Exception as exc:  # an exporter must not kill the worker
            result = SpanExportResult.FAILURE
            logger.warning("otel-replay: exporter raised %r", exc)
        if result is not SpanExportResult.SUCCESS:
            self.dropped += len(batch)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        target = self._enqueued
        deadline = time.monotonic() + timeout_millis / 1000
        self._wake.set()
        with self._idle:
            while self._exported < target:
                left = deadline - time.monotonic()
                if left <= 0 or not self._worker.is_alive():
                    return False
                self._idle.wait(min(left, 0.05))
                self._wake.set()
        return True

    def shutdown(self) -> None:
        if self._shutdown:
            return
        self.force_flush()
        self._shutdown = True
        self._wake.set()
        self._worker.join(timeout=30)
        self.exporter.shutdown()
        if self.dropped:
            logger.error("otel-replay: %d spans were dropped while recording", self.dropped)
