"""``otel_replay.snapshot(name, state)``: record agent state at a point of the run.

The state (memory, context variables, anything the payload codec encodes) is
written as an ``otel_replay.snapshot`` event on the current span, byte-exact
like a tool result: display form, digest, type tag and, when needed, the exact
bytes (moved to the blob store by the file exporter when large).  A replay
gives it back with ``session.state_at(step)`` or ``session.state_at(name)``.

Like every capture helper it never raises into the traced app: a problem is
logged once and the app goes on.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from .. import attributes as A
from ..payload.attributes import to_attributes
from .content import capture_content
from .spans import length_limit, max_inline, scrubbed_payload, tracer, tracing_on, warn_once


def snapshot(name: str, state: Any) -> None:
    """Record ``state`` under ``name`` as an event on the current span.

    With no recording span current (tracing off, or outside any span) a short
    ``otel_replay.snapshot <name>`` span carries it, when tracing is on.
    """
    try:
        span = trace.get_current_span()
        if span.is_recording():
            _add(span, name, state)
            return
        if tracing_on():
            with tracer().start_as_current_span(f"{A.SNAPSHOT_EVENT} {name}") as own:
                _add(own, name, state)
    except Exception as exc:  # never let recording break the app
        warn_once("snapshot", "otel-replay could not record snapshot %r: %r", name, exc)


def _add(span: Any, name: str, state: Any) -> None:
    attrs: dict[str, Any] = {A.SNAPSHOT_NAME: str(name)}
    if capture_content():
        hidden: list[str] = []
        clean, encoded = scrubbed_payload(state, A.SNAPSHOT_STATE, hidden)
        # Event attributes obey the SDK's general length limit, span ones their own: the tighter.
        limits = [n for n in (length_limit(span), _event_limit(span)) if n is not None]
        attrs.update(
            to_attributes(
                A.SNAPSHOT_STATE,
                clean,
                length_limit=min(limits) if limits else None,
                max_inline=max_inline(),
                encoded=encoded,
            )
        )
        if hidden:
            attrs[A.REDACTED] = hidden
    else:
        attrs[A.CONTENT] = "NO_CONTENT"
    span.add_event(A.SNAPSHOT_EVENT, attrs)


def _event_limit(span: Any) -> int | None:
    value = getattr(getattr(span, "_limits", None), "max_attribute_length", None)
    return value if isinstance(value, int) else None
