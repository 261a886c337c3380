"""GenAI semconv on every exporter: spans of other instrumentations leave with current ``gen_ai.*``.

:class:`~otel_replay.capture.processor.ReplaySpanProcessor` adds the GenAI
attributes the loader's dialects compute
(:func:`otel_replay.dialects.registry.genai_attributes`) to each span of its
provider as the span ends (:meth:`Normalizer.add_to`, from the SDK's
``_on_ending`` hook, which runs before any processor's ``on_end``), so every
exporter of that provider sends them, whatever the order the processors were
added in: OTLP to any backend, the console, ours
(:mod:`~otel_replay.export.ending_span`: the span's own attributes kept first,
an added attribute that does not fit the limit left out and counted as
dropped).

:class:`GenAISemconvExporter` does the same work on an exporter's thread, for
spans of a provider without the processor: it wraps any ``SpanExporter`` and
hands it normalized copies (public ``ReadableSpan`` constructor).

Settings (argument, else environment variable):

- ``exclude`` / ``OTEL_REPLAY_SEMCONV_EXCLUDE``: comma-separated attribute
  families not to add (:data:`FAMILIES`)
- ``mode`` / ``OTEL_REPLAY_SEMCONV_MODE``: ``repair`` (default: add what is
  missing and replace values the span's stack is known to write wrongly, as
  the loader does) or ``missing`` (only add attributes the span lacks; every
  original value is left as it was)
- ``OTEL_REPLAY_SEMCONV=false`` turns it off in ``ReplaySpanProcessor``.

A value the SDK would not take as an attribute (a dict, a list of dicts, a
mixed list) is written as JSON text, as the semconv says for span attributes
(the Python SDK takes no structured span attributes).  A value our capture
recorded byte-exactly (it has an ``otel_replay.sha256.`` companion) is never
replaced, and our own capture's spans, already in the current semconv, are
not looked at.  Normalizing never raises: a span that fails is exported as it
was, counted in :attr:`Normalizer.failures` and logged once.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, Span
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from .. import attributes as A
from .. import settings
from ..dialects.registry import genai_attributes
from ..dialects.span import SpanView
from .ending_span import update_attributes
from .scrub import hidden_copy

__all__ = [
    "FAMILIES",
    "GenAISemconvExporter",
    "Normalizer",
    "family",
]

logger = logging.getLogger("otel_replay")

#: Attribute families, by the prefix of their names (first match wins).
_PREFIXES: tuple[tuple[str, str], ...] = (
    (A.OPERATION_NAME, "operation"),
    (A.PROVIDER_NAME, "provider"),
    ("gen_ai.input.messages", "messages"),
    ("gen_ai.output.messages", "messages"),
    (A.SYSTEM_INSTRUCTIONS, "system_instructions"),
    (A.TOOL_DEFINITIONS, "tool_definitions"),
    ("gen_ai.tool.", "tool_call"),
    ("gen_ai.usage.", "usage"),
    ("gen_ai.request.", "request"),
    ("gen_ai.response.", "response"),
    ("gen_ai.agent.", "agent"),
    ("gen_ai.conversation.", "agent"),
)
FAMILIES: tuple[str, ...] = (
    "operation",
    "provider",
    "request",
    "response",
    "messages",
    "system_instructions",
    "tool_definitions",
    "tool_call",
    "usage",
    "agent",
    "other",
)
MODES = ("repair", "missing")
_SHA = A.SHA256


def family(key: str) -> str:
    """The family of a GenAI attribute name (``other`` when none fits)."""
    for prefix, name in _PREFIXES:
        if key.startswith(prefix):
            return name
    return "other"


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, bool, int, float, bytes))


def attribute_value(value: Any) -> Any:
    """``value`` as an OTel attribute value: primitives and homogeneous lists kept, else JSON."""
    if _scalar(value):
        return value
    if isinstance(value, (list, tuple)) and value:
        first = type(value[0])
        if _scalar(value[0]) and all(type(v) is first for v in value):
            return list(value)
    if value is None or (isinstance(value, (list, tuple, dict)) and not value):
        return None
    return json.dumps(value, ensure_ascii=False, default=str)


class _NormalizedSpan(ReadableSpan):
    """A normalized copy: keeps the original's dropped counts; never normalized again."""

    _dropped = 0

    @property
    def dropped_attributes(self) -> int:
        return self._dropped


@dataclasses.dataclass(frozen=True)
class Normalizer:
    """Computes the GenAI attributes of a span and makes the normalized copy.

    ``exclude``: families not to add; ``mode``: ``repair`` or ``missing``
    (None: the ``OTEL_REPLAY_SEMCONV_*`` variables, else all families and
    ``repair``).
    """

    exclude: frozenset[str] = frozenset()
    mode: str = "repair"
    _stats: dict[str, int] = dataclasses.field(
        default_factory=lambda: {"failures": 0, "normalized": 0}, compare=False, repr=False
    )

    @classmethod
    def from_settings(
        cls, exclude: Iterable[str] | None = None, mode: str | None = None
    ) -> Normalizer:
        names = (
            [e.strip().lower() for e in exclude]
            if exclude is not None
            else [e.lower() for e in settings.current().semconv_exclude]
        )
        unknown = sorted(set(names) - set(FAMILIES))
        if unknown:
            logger.warning(
                "otel-replay: unknown GenAI attribute families %s (known: %s)",
                ", ".join(unknown),
                ", ".join(FAMILIES),
            )
        raw = (mode if mode is not None else settings.current().semconv_mode).strip()
        chosen = raw.lower() or "repair"
        if chosen not in MODES:
            logger.warning("otel-replay: semconv mode %r is not repair or missing: repair", raw)
            chosen = "repair"
        return cls(frozenset(names) & frozenset(FAMILIES), chosen)

    @property
    def failures(self) -> int:
        """Spans exported as they were because normalizing them failed."""
        return self._stats["failures"]

    @property
    def normalized(self) -> int:
        """Spans exported with GenAI attributes added."""
        return self._stats["normalized"]

    def added(self, span: ReadableSpan) -> dict[str, Any]:
        """The attributes normalization adds to (or replaces on) ``span``."""
        attrs = span.attributes or {}
        scope = span.instrumentation_scope
        view = SpanView(
            attrs,
            name=span.name,
            scope=scope.name if scope is not None else "",
            events=[{"name": e.name, "attributes": e.attributes or {}} for e in span.events],
            scope_version=(scope.version or "") if scope is not None else "",
        )
        out: dict[str, Any] = {}
        exclude, missing_only = self.exclude, self.mode == "missing"
        for key, value in genai_attributes(view).items():
            if key in A.READER_HINTS:
                continue
            if key in attrs and (missing_only or _SHA + key in attrs):
                continue  # an original value; byte-exact ones are never rewritten
            if exclude and family(key) in exclude:
                continue
            converted = attribute_value(value)
            if converted is not None and attrs.get(key) != converted:
                out[key] = converted
        return out

    def span(self, span: ReadableSpan) -> ReadableSpan:
        """A copy of ``span`` with the GenAI attributes added; ``span`` itself when none."""
        if isinstance(span, _NormalizedSpan):
            return span
        try:
            extra = self.added(span)
            if not extra:
                return span
            copy = _NormalizedSpan(
                name=span.name,
                context=span.context,
                parent=span.parent,
                resource=span.resource,
                attributes={**(span.attributes or {}), **extra},
                events=span.events,
                links=span.links,
                kind=span.kind,
                status=span.status,
                start_time=span.start_time,
                end_time=span.end_time,
                instrumentation_scope=span.instrumentation_scope,
            )
            copy._dropped = span.dropped_attributes
        except Exception as exc:  # the span leaves as it was
            self._failed(span, exc)
            return span
        self._stats["normalized"] += 1
        return copy

    def add_to(self, span: Span) -> None:
        """Add the GenAI attributes to an SDK span that is ending (its attributes frozen).

        Called from the processor's ``_on_ending``: every processor's ``on_end``
        then sees them.  Never raises.
        """
        try:
            scope = span.instrumentation_scope
            if scope is not None and scope.name == A.SCOPE_NAME:
                return
            extra = self.added(span)
            if not extra or not update_attributes(span, extra):
                return
        except Exception as exc:  # the span leaves as it was
            self._failed(span, exc)
            return
        self._stats["normalized"] += 1

    def _failed(self, span: ReadableSpan, exc: Exception) -> None:
        self._stats["failures"] += 1
        if self._stats["failures"] == 1:
            logger.warning(
                "otel-replay: could not add GenAI attributes to span %r (%r); "
                "exported as it was (failures are counted)",
                getattr(span, "name", "?"),
                exc,
            )

    def spans(self, spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
        return [self.span(s) for s in spans]


class GenAISemconvExporter(SpanExporter):
    """Any ``SpanExporter``, fed spans that carry the current GenAI semconv attributes.

    ``GenAISemconvExporter(OTLPSpanExporter())``: spans of OpenInference,
    OpenLLMetry, pydantic-ai, the openai-agents bridges, ... reach the backend
    with ``gen_ai.input.messages``, ``gen_ai.provider.name``, ... added, their
    own attributes kept.  ``exclude`` and ``mode``: see :class:`Normalizer`.  Secrets
    in them are hidden as ``FileSpanExporter`` hides them (:mod:`otel_replay.export.scrub`):
    the wrapped exporter never sends one, with ``ReplaySpanProcessor`` or without.
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        exclude: Iterable[str] | None = None,
        mode: str | None = None,
    ) -> None:
        self.exporter = exporter
        self.normalizer = Normalizer.from_settings(exclude, mode)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        # Scrubbed after the attributes are added: those derived from a secret are hidden too.
        return self.exporter.export([hidden_copy(s) for s in self.normalizer.spans(spans)])

    def shutdown(self) -> None:
        self.exporter.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.exporter.force_flush(timeout_millis)

    def __getattr__(self, name: str) -> Any:
        # Settings of the wrapped exporter (path, dropped, ...) stay reachable.
        if name == "exporter":
            raise AttributeError(name)
        return getattr(self.exporter, name)
