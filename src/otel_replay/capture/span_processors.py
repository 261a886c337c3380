"""Span processors that each do one of ``ReplaySpanProcessor``'s jobs.

Each is an OTel SDK ``SpanProcessor`` of its own: add it to any
``TracerProvider`` alone, or several together, or take them all at once as
:class:`~otel_replay.capture.processor.ReplaySpanProcessor`.  None changes
anything outside the spans it sees (no process-wide setting), none raises into
the app: a processor that fails on a span leaves it as it was, counts the
failure (``failures``) and says the first one in the log.

On the start of a span:

* :class:`FingerprintProcessor`: the environment fingerprint on run roots;
* :class:`BaggageIdsProcessor`: user / tenant / session ids from OTel baggage.

As a span ends, before any exporter sees it (the SDK calls every processor's
``_on_ending`` before any ``on_end``), in this order when several are used:

* :class:`SemconvProcessor`: the GenAI semconv attributes the span lacks;
* :class:`RedactionProcessor`: secrets hidden (after the semconv attributes,
  so those derived from a secret are hidden too);
* :class:`PayloadOffloadProcessor`: large exact payloads moved to a store
  (after redaction: nothing leaves unscrubbed);
* :class:`Base64BytesProcessor`: ``bytes`` values sent as base64 text (last:
  the payload store takes bytes).

The SDK calls a provider's processors in the order they were added.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import Span, SpanProcessor

from .. import attributes as A
from .. import settings
from ..bytes_text import as_base64
from ..export.ending_span import update_attributes
from ..export.scrub import hide_in_ending
from .fingerprint import fingerprint
from .spans import warn_once

if TYPE_CHECKING:
    from ..export.semconv import Normalizer
    from ..payload.store import Uploader
    from ..redaction import Redactor

#: Baggage keys accepted for each id attribute.
BAGGAGE_IDS: Mapping[str, str] = {
    "user.id": A.USER_ID,
    "user_id": A.USER_ID,
    "enduser.id": A.USER_ID,
    "tenant.id": A.TENANT_ID,
    "tenant_id": A.TENANT_ID,
    "session.id": A.SESSION_ID,
    "session_id": A.SESSION_ID,
    "gen_ai.conversation.id": A.CONVERSATION_ID,
}


@functools.cache
def _baggage() -> Any:
    # Imported on the first span, not with the capture API.
    from opentelemetry import baggage

    return baggage


def _has_bytes(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return any(isinstance(v, (bytes, bytearray)) for v in value)
    return isinstance(value, (bytes, bytearray))


class _OneJob(SpanProcessor):
    """A processor whose trouble stays its own: counted, the first said once."""

    def __init__(self) -> None:
        self._failures = 0

    @property
    def failures(self) -> int:
        """Spans this processor left as they were because it failed on them."""
        return self._failures

    def _failed(self, key: str, message: str, exc: Exception) -> None:
        self._failures += 1
        warn_once(key, message, exc)


class FingerprintProcessor(_OneJob):
    """Sets the environment fingerprint on each run root (a span with no parent, or a remote one).

    The fingerprint (see :mod:`otel_replay.capture.fingerprint`): commit and
    dirty flag, Python and key package versions, feature flags, seed.  It is
    computed once, here (git is asked at most once per process, with a
    timeout): the span path does no I/O.  ``flags`` are added to
    ``OTEL_REPLAY_FLAGS``; ``seed`` defaults to ``OTEL_REPLAY_SEED``;
    ``packages`` names more distributions whose versions to record.  Secrets
    in the flags are hidden by ``redactor`` (None: the process's redactor, see
    :func:`otel_replay.redaction.redactor`).
    """

    def __init__(
        self,
        flags: Mapping[str, Any] | None = None,
        seed: int | None = None,
        packages: Iterable[str] = (),
        *,
        redactor: Redactor | None = None,
    ) -> None:
        super().__init__()
        try:
            self._fingerprint = fingerprint(flags, seed, packages, redactor)
        except Exception as exc:  # no fingerprint rather than no app
            self._failed("fingerprint", "otel-replay could not compute the fingerprint: %r", exc)
            self._fingerprint = {}

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The attributes set on each run root (a copy)."""
        return dict(self._fingerprint)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            parent = span.parent
            if parent is None or parent.is_remote:
                span.set_attributes(self._fingerprint)
        except Exception as exc:  # tracing trouble must never reach the app
            self._failed("processor", "otel-replay processor error: %r", exc)


class BaggageIdsProcessor(_OneJob):
    """Copies user, tenant, session and conversation ids from OTel baggage onto every span.

    The baggage keys read are those of :data:`BAGGAGE_IDS` (``user.id``,
    ``tenant_id``, ``session.id``, ``gen_ai.conversation.id``...).
    """

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            ids = _baggage().get_all(parent_context)
            if ids:
                found = {BAGGAGE_IDS[k]: str(v) for k, v in ids.items() if k in BAGGAGE_IDS}
                if found:
                    span.set_attributes(found)
        except Exception as exc:  # tracing trouble must never reach the app
            self._failed("processor", "otel-replay processor error: %r", exc)


class SemconvProcessor(_OneJob):
    """Adds the current GenAI semconv attributes a span's instrumentation lacks, as it ends.

    Every exporter of the provider then sends them.  ``exclude``
    (``OTEL_REPLAY_SEMCONV_EXCLUDE``) names attribute families to leave out;
    ``mode`` (``OTEL_REPLAY_SEMCONV_MODE``: ``repair`` or ``missing``) whether
    known-bad values are replaced or only missing ones added (see
    :mod:`otel_replay.export.semconv`).
    """

    def __init__(self, exclude: Iterable[str] | None = None, mode: str | None = None) -> None:
        super().__init__()
        # Imported here: the dialects it reads cost more than the SDK to import.
        from ..export.semconv import Normalizer

        self._normalizer = Normalizer.from_settings(exclude, mode)

    @property
    def normalizer(self) -> Normalizer:
        """The GenAI semconv settings applied, and the counts of spans normalized and failed."""
        return self._normalizer

    @property
    def failures(self) -> int:
        """Spans left as they were because adding their attributes failed."""
        return self._normalizer.failures

    def _on_ending(self, span: Span) -> None:
        self._normalizer.add_to(span)  # never raises: counts and says its failures


class RedactionProcessor(_OneJob):
    """Hides the secrets of a span as it ends, for every exporter of the provider.

    In its name, attributes, events (names and attributes), link attributes,
    status, trace state, resource and scope (see :mod:`otel_replay.export.scrub`).
    ``redactor`` hides them (see :func:`otel_replay.redaction.redactor_from_settings`);
    None: the process's redactor at each span, the one the capture helpers,
    exporters and replay use (:func:`otel_replay.redaction.redactor`).  This
    processor never installs one.
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._redactor = redactor

    @property
    def redactor(self) -> Redactor | None:
        """The redactor given, or None for the process's."""
        return self._redactor

    def _on_ending(self, span: Span) -> None:
        try:
            hide_in_ending(span, self._redactor)
        except Exception as exc:  # the span leaves as it was
            self._failed("scrub", "otel-replay could not scrub a span: %r", exc)


class PayloadOffloadProcessor(_OneJob):
    """Moves exact ``bytes`` payloads over ``max_inline_bytes`` off the span, into a store.

    ``store`` (``OTEL_REPLAY_PAYLOAD_STORE``): any fsspec URL, or a directory;
    ``max_inline_bytes`` (``OTEL_REPLAY_MAX_INLINE_BYTES``, 256 KiB).  Each
    ``otel_replay.bytes.*`` value over the size leaves every exporter's spans;
    the span names it by digest (``otel_replay.ref.*``) and a thread of this
    processor uploads it (see :mod:`otel_replay.payload.store`).  A payload the
    upload queue has no room for stays on the span.  Raises ``ValueError`` when
    no store is given nor set.
    """

    def __init__(self, store: str | None = None, max_inline_bytes: int | None = None) -> None:
        super().__init__()
        env = settings.current()
        base = store or env.payload_store
        if not base:
            raise ValueError("PayloadOffloadProcessor needs a store (or OTEL_REPLAY_PAYLOAD_STORE)")
        # lazy: imported on first use, not with the package
        from ..payload.store import PayloadStore, Uploader

        self._uploader: Uploader = Uploader(PayloadStore(base))
        self._max_inline = (
            max_inline_bytes if max_inline_bytes is not None else env.max_inline_bytes
        )

    @property
    def uploader(self) -> Uploader:
        """The uploader: its store, and the count of payloads it ``failed`` to keep."""
        return self._uploader

    def _on_ending(self, span: Span) -> None:
        try:
            refs: dict[str, str] = {}
            for key, value in (span.attributes or {}).items():
                if (
                    key.startswith(A.BYTES)
                    and isinstance(value, bytes)
                    and len(value) > self._max_inline
                ):
                    ref = self._uploader.offer(value)
                    if ref is not None:  # else the queue is full: it stays on the span
                        refs[key] = ref
            if refs:
                changes = {A.REF + key[len(A.BYTES) :]: ref for key, ref in refs.items()}
                update_attributes(span, changes, removed=list(refs))
        except Exception as exc:  # the span leaves as it was
            self._failed("payload-store", "otel-replay could not move a payload: %r", exc)

    def shutdown(self) -> None:
        self._uploader.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._uploader.flush(timeout_millis / 1000)


class Base64BytesProcessor(_OneJob):
    """Sends every ``bytes`` attribute value as base64 text.

    For backends that cannot store bytes (Arize Phoenix drops a span that
    carries one); otel-replay reads ``otel_replay.bytes.*`` back from either.
    """

    def _on_ending(self, span: Span) -> None:
        try:
            attrs = span.attributes or {}
            text = {k: as_base64(v) for k, v in attrs.items() if _has_bytes(v)}
            if text:
                update_attributes(span, text)
        except Exception as exc:  # the span leaves as it was
            self._failed("base64-bytes", "otel-replay could not rewrite bytes values: %r", exc)
