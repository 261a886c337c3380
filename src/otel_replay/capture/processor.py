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

It is the composition of the one-job processors of
:mod:`otel_replay.capture.span_processors`, each usable alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from .. import settings
from ..redaction import install_redactor, redactor_from_settings
from .span_processors import (
    BAGGAGE_IDS,
    BaggageIdsProcessor,
    Base64BytesProcessor,
    FingerprintProcessor,
    PayloadOffloadProcessor,
    RedactionProcessor,
    SemconvProcessor,
)

if TYPE_CHECKING:
    from ..export.semconv import Normalizer
    from ..redaction import Redactor

__all__ = ["BAGGAGE_IDS", "ReplaySpanProcessor"]


class ReplaySpanProcessor(SpanProcessor):
    """Fingerprint run roots, copy ids from baggage, hide secrets.

    ``flags`` (also ``OTEL_REPLAY_FLAGS``) are the feature flags active for
    the run; ``seed`` (also ``OTEL_REPLAY_SEED``) the seed the app uses;
    ``packages`` more distributions whose versions to record.  The redaction
    arguments add key patterns, value patterns, a hook or personal data (e-mail
    addresses, phone numbers) to what is hidden (see :mod:`otel_replay.redaction`);
    given any, the redactor they make is installed as the process's, as
    :func:`~otel_replay.redaction.configure_redaction` does, so that the capture
    helpers, the exporters and replay hide the same (undo with
    :func:`~otel_replay.redaction.install_redactor` and :attr:`replaced_redactor`).

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

    Each job is a processor of :mod:`otel_replay.capture.span_processors`
    (:attr:`processors`, in the order they run): :class:`FingerprintProcessor`,
    :class:`BaggageIdsProcessor`, :class:`SemconvProcessor`,
    :class:`RedactionProcessor` (with the process's redactor),
    :class:`PayloadOffloadProcessor`, :class:`Base64BytesProcessor`.
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
        redact_keys, redact_patterns = list(redact_keys), list(redact_patterns)
        self._replaced_redactor: Redactor | None = None
        if redact_keys or redact_patterns or redact_hook is not None or redact_personal_data:
            made = redactor_from_settings(
                redact_keys, redact_patterns, redact_hook, redact_personal_data
            )
            self._replaced_redactor = install_redactor(made)
        # Made after the install: the flags in the fingerprint are hidden by it.
        self._fingerprint = FingerprintProcessor(flags, seed, packages)
        self._semconv = (
            SemconvProcessor(semconv_exclude, semconv_mode)
            if (env.semconv if semconv is None else semconv)
            else None
        )
        store = payload_store or env.payload_store
        parts: list[SpanProcessor] = [self._fingerprint, BaggageIdsProcessor()]
        if self._semconv is not None:
            parts.append(self._semconv)
        # The process's redactor at each span: one configured later applies here too.
        parts.append(RedactionProcessor())
        if store:  # only a processor given a payload store starts its uploader
            parts.append(PayloadOffloadProcessor(store, max_inline_bytes))
        if env.base64_bytes if base64_bytes is None else base64_bytes:
            parts.append(Base64BytesProcessor())
        self._parts = tuple(parts)
        # Bound once, and only the parts that do something at each point: on every span.
        self._starting = tuple(p.on_start for p in parts if _overrides(p, "on_start"))
        self._ending = tuple(p._on_ending for p in parts if _overrides(p, "_on_ending"))

    @property
    def processors(self) -> tuple[SpanProcessor, ...]:
        """The one-job processors this one is made of, in the order they run."""
        return self._parts

    @property
    def fingerprint(self) -> dict[str, Any]:
        """The attributes set on each run root (a copy)."""
        return self._fingerprint.fingerprint

    @property
    def semconv(self) -> Normalizer | None:
        """The GenAI semconv settings applied to this provider's spans as they end."""
        return self._semconv.normalizer if self._semconv is not None else None

    @property
    def replaced_redactor(self) -> Redactor | None:
        """The process's redactor before this processor installed its own (None: none was
        made, or this processor installed none)."""
        return self._replaced_redactor

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        for start in self._starting:
            start(span, parent_context)

    def _on_ending(self, span: Span) -> None:
        # The SDK calls this on every processor before any on_end: the attributes
        # changed here reach every exporter of the provider.
        for ending in self._ending:
            ending(span)

    def on_end(self, span: ReadableSpan) -> None:
        return None

    def shutdown(self) -> None:
        for part in self._parts:
            part.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        done = True
        for part in self._parts:
            done = part.force_flush(timeout_millis) and done
        return done


def _overrides(part: SpanProcessor, name: str) -> bool:
    """Whether ``part`` does something at ``name`` (the SDK's own does nothing)."""
    return getattr(type(part), name) is not getattr(SpanProcessor, name)
