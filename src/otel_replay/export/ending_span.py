"""Name, attributes, events, links, status and trace state of an SDK span changed as it
ends, before any exporter sees it.

The SDK calls every processor's ``_on_ending`` after it has frozen the span's
attributes and before any ``on_end``: a change made there reaches every
exporter of the provider, whatever the order the processors were added in.
The SDK gives no public way to write then, so the frozen ``BoundedAttributes``
is replaced by a new one with the same limits.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, Span
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, Status


def update_attributes(span: Span, changes: Mapping[str, Any], removed: Sequence[str] = ()) -> bool:
    """Set ``changes`` on an ending ``span`` (and take the ``removed`` keys off it); False
    when this SDK's span has another layout.

    The span's own attributes stay first: a new key that does not fit the
    attribute limit is left out and counted in the span's dropped attributes.
    """
    frozen = span._attributes  # the SDK gives no public way in
    if not isinstance(frozen, BoundedAttributes):
        return False
    if not changes and not removed:
        return True
    merged = dict(frozen)
    for key in removed:
        merged.pop(key, None)
    left_out = 0
    for key, value in changes.items():
        if key in merged or frozen.maxlen is None or len(merged) < frozen.maxlen:
            merged[key] = value
        else:
            left_out += 1
    replaced = BoundedAttributes(
        frozen.maxlen, merged, immutable=True, max_value_len=frozen.max_value_len
    )
    replaced.dropped = frozen.dropped + left_out
    span._attributes = replaced
    return True


def update_events(span: Span, events: Sequence[Event]) -> bool:
    """Replace an ending ``span``'s events; False when this SDK's span has another layout."""
    return _replace_list(span, "_events", events)


def update_links(span: Span, links: Sequence[Link]) -> bool:
    """Replace an ending ``span``'s links; False when this SDK's span has another layout."""
    return _replace_list(span, "_links", links)


def _replace_list(span: Span, name: str, items: Sequence[Any]) -> bool:
    """A span's bounded list of events or links replaced, its bound and dropped count kept."""
    current = getattr(span, name, None)  # the SDK gives no public way in
    if not isinstance(current, BoundedList):
        return False
    replaced: BoundedList[Any] = BoundedList(current._dq.maxlen)  # type: ignore[attr-defined]
    replaced.extend(items)
    replaced.dropped = current.dropped
    setattr(span, name, replaced)
    return True


def update_name(span: Span, name: str) -> bool:
    """Rename an ending ``span`` (``update_name`` refuses once it has ended); False when
    this SDK's span has another layout."""
    if not isinstance(getattr(span, "_name", None), str):
        return False
    span._name = name
    return True


def update_status(span: Span, status: Status) -> bool:
    """Replace an ending ``span``'s status; False when this SDK's span has another layout."""
    if not isinstance(getattr(span, "_status", None), Status):
        return False
    span._status = status
    return True


def update_context(span: Span, context: SpanContext) -> bool:
    """Give an ending ``span`` another context (its own ids, its trace state scrubbed); False
    when this SDK's span has another layout."""
    if not isinstance(getattr(span, "_context", None), SpanContext):
        return False
    span._context = context
    return True


def update_shared(span: Span, resource: Resource, scope: InstrumentationScope | None) -> None:
    """Give an ending ``span`` another resource and scope (the same ones, scrubbed)."""
    if resource is not span.resource and hasattr(span, "_resource"):
        span._resource = resource
    if scope is not span.instrumentation_scope and hasattr(span, "_instrumentation_scope"):
        span._instrumentation_scope = scope
