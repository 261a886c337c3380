"""``ReplaySpanProcessor``: puts the replay kit's environment on every run.

Add it to any ``TracerProvider``.  On the start of a run root (a span with no
parent, or a remote one) it sets the fingerprint (commit and dirty flag,
Python and key package versions, feature flags, seed); on every span it sets
user / tenant / session ids found in OTel baggage.  It never raises into the
app and does no I/O on the span path.

As each span of its provider ends, it adds the current GenAI semconv
attributes the span's instrumentation lacks (:mod:`otel_replay.export.semconv`)
and hides the secrets in its name, attributes, events (names and
attributes), link attributes and status, and in its resource and scope
(:mod:`otel_replay.export.scrub`), so every exporter of the provider sends
them so: OTLP to any backend, the console, ``FileSpanExporter``, in whatever
order they were added.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .. import attributes as A
from .. import settings
from ..bytes_text import as_base64
from ..export.ending_span import update_attributes
from ..export.scrub import hide_in_ending
from ..redaction import configure_redaction
from .fingerprint import fingerprint
from .spans import warn_once

if TYPE_CHECKING:
    from ..export.semconv import Normalizer
    from ..payload.store import Uploader

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


class ReplaySpanProcessor(SpanProcessor):
    """Fingerprint run roots, copy ids from baggage, hide secrets.

    ``flags`` (also ``OTEL_REPLAY_FLAGS``) are the feature flags active for
    the run; ``seed`` (also ``OTEL_REPLAY_SEED``) the seed the app uses;
    ``packages`` more distributions whose versions to record.  The redaction
    arguments add key patterns, value patterns, a hook or personal data (e-mail
    addresses, phone numbers) to what is hidden (see :mod:`otel_replay.redaction`).

    ``semconv`` (``OTEL_REPLAY_SEMCONV``, default true) adds the GenAI semconv
    attributes third-party instrumentations lack to their spans as they end,
    for every exporter of the provider; ``semconv_exclude``
    (``OTEL_REPLAY_SEMCONV_EXCLUDE``) names attribute families to leave out and ``semconv_mode``
    (``OTEL_REPLAY_SEMCONV_MODE``: ``repair`` or ``missing``) whether known-bad
    values are replaced or only missing ones added.

    ``payload_store`` (``OTEL_REPLAY_PAYLOAD_STORE``): exact ``bytes`` payloads
    over ``max_inline_bytes`` (``OTEL_REPLAY_MAX_INLINE_BYTES``, 256 KiB) leave
    every exporter's spans for this store (any fsspec URL, or a directory),
    uploaded from a thread of the processor's; the spans name them by digest
    (see :mod:`otel_replay.payload.store`).

    ``base64_bytes`` (``OTEL_REPLAY_BASE64_BYTES``, default false) sends every
    ``bytes`` attribute value as base64 text, for backends that cannot store
    bytes (Arize Phoenix drops a span that carries one); otel-replay reads
    ``otel_replay.bytes.*`` back from either.
    """

    def __init__(
        self,
        *,
        flags: Mapping[str, Any] | None = None,
        seed: int | None = None,
        packages: Iterable[str] = (),
        redact_keys: Iterable[str] = (),
        redact_patterns: Iterable[str] = (),
        redact_hook: Callable[[str, Any], Any] | None = None,
        redact_personal_data: bool | None = None,
        semconv: bool | None = None,
        semconv_exclude: Iterable[str] | None = None,
        semconv_mode: str | None = None,
        base64_bytes: bool | None = None,
        payload_store: str | None = None,
        max_inline_bytes: int | None = None,
    ) -> None:
        env = settings.current()
        if semconv is None:
            semconv = env.semconv
        if base64_bytes is None:
            base64_bytes = env.base64_bytes
        self._base64_bytes = base64_bytes
        self._uploader: Uploader | None = None
        store = payload_store or env.payload_store
        if store:
            # Only a processor given a payload store starts its uploader.
            from ..payload.store import PayloadStore, Uploader

            self._uploader = Uploader(PayloadStore(store))
        self._max_inline = (
            max_inline_bytes if max_inline_bytes is not None else env.max_inline_bytes
        )
        self._semconv: Normalizer | None = None
        if semconv:
            # Imported here: the dialects it reads cost more than the SDK to import.
            from ..export.semconv import Normalizer

            self._semconv = Normalizer.from_settings(semconv_exclude, semconv_mode)
        redact_keys, redact_patterns = list(redact_keys), list(redact_patterns)
        if redact_keys or redact_patterns or redact_hook is not None or redact_personal_data:
            configure_redaction(
                redact_keys, redact_patterns, redact_hook, personal_data=redact_personal_data
            )
        try:
            self._fingerprint = fingerprint(flags, seed, packages)
        except Exception as exc:
            warn_once("fingerprint", "otel-replay could not compute the fingerprint: %r", exc)
            self._fingerprint = {}

    @property
    def fingerprint(self) -> dict[str, Any]:
        return dict(self._fingerprint)

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        try:
            parent = span.parent
            if parent is None or parent.is_remote:
                span.set_attributes(self._fingerprint)
            ids = _baggage().get_all(parent_context)
            if ids:
                found = {BAGGAGE_IDS[k]: str(v) for k, v in ids.items() if k in BAGGAGE_IDS}
                if found:
                    span.set_attributes(found)
        except Exception as exc:  # tracing trouble must never reach the app
            warn_once("processor", "otel-replay processor error: %r", exc)

    def _on_ending(self, span: Span) -> None:
        # The SDK calls this on every processor before any on_end: the attributes
        # added here reach every exporter of the provider.
        normalizer = self._semconv
        if normalizer is not None:
            normalizer.add_to(span)
        try:  # after the semconv attributes: those derived from a secret are scrubbed too
            hide_in_ending(span)
        except Exception as exc:  # the span leaves as it was
            warn_once("scrub", "otel-replay could not scrub a span: %r", exc)
        if self._uploader is not None:
            try:  # after scrubbing: nothing leaves unscrubbed; before base64: bytes are kept
                self._keep_elsewhere(span, self._uploader)
            except Exception as exc:  # the span leaves as it was
                warn_once("payload-store", "otel-replay could not move a payload: %r", exc)
        if self._base64_bytes:
            try:
                attrs = span.attributes or {}
                text = {k: as_base64(v) for k, v in attrs.items() if _has_bytes(v)}
                if text:
                    update_attributes(span, text)
            except Exception as exc:  # the span leaves as it was
                warn_once("base64-bytes", "otel-replay could not rewrite bytes values: %r", exc)

    def _keep_elsewhere(self, span: Span, uploader: Uploader) -> None:
        """Exact bytes payloads over the inline size go to the payload store."""
        refs: dict[str, str] = {}
        for key, value in (span.attributes or {}).items():
            if (
                key.startswith(A.BYTES)
                and isinstance(value, bytes)
                and len(value) > self._max_inline
            ):
                ref = uploader.offer(value)
                if ref is not None:  # else the queue is full: it stays on the span
                    refs[key] = ref
        if refs:
            changes = {A.REF + key[len(A.BYTES) :]: ref for key, ref in refs.items()}
            update_attributes(span, changes, removed=list(refs))

    def on_end(self, span: ReadableSpan) -> None:
        return None

    @property
    def semconv(self) -> Normalizer | None:
        """The GenAI semconv settings applied to this provider's spans as they end."""
        return self._semconv

    def shutdown(self) -> None:
        if self._uploader is not None:
            self._uploader.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        if self._uploader is not None:
            return self._uploader.flush(timeout_millis / 1000)
        return True
