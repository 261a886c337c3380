"""Secrets in any span, hidden before an exporter sends or writes it.

Capture scrubs what it records; spans of other instrumentations arrive as
their authors wrote them (an OpenInference ``llm.invocation_parameters``
holding an api key, ``url.full`` with ``?api_key=``, an exception message
quoting a token).  Here the one redaction engine goes over every attribute,
event and link attribute and the status description of a span, and the
attributes of its resource and instrumentation scope:
``ReplaySpanProcessor`` on each span of its provider as it ends (so every
exporter, OTLP included, sends the scrubbed span), and our exporters on each
span they write (a provider without the processor).

Byte-exact payloads we recorded (a value with its ``otel_replay.sha256.``
digest) were scrubbed when captured and their digest is of what was
written: they are left as they are.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar, cast

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, Status

from .. import attributes as A
from ..redaction import PLACEHOLDER, Redactor, redactor
from .ending_span import update_attributes, update_events, update_shared, update_status

T = TypeVar("T")

#: Our payload companions: never scrubbed here (see the module docstring).
_COMPANIONS = (A.SHA256, A.TYPE, A.BYTES, A.REF, A.SIZE)
_OURS = A.PREFIX


def attribute_changes(
    attrs: Mapping[str, Any] | None, r: Redactor, hidden: list[str], path: str = ""
) -> dict[str, Any]:
    """The values of ``attrs`` that hide a secret, by key; each hidden path added to ``hidden``."""
    changes: dict[str, Any] = {}
    if not attrs:
        return changes
    attrs = getattr(attrs, "_dict", attrs)  # BoundedAttributes: its dict, without the lock
    secret = r.is_secret_key
    text = r.text
    for key, value in attrs.items():
        if key.startswith(_OURS) and (
            key.startswith(_COMPANIONS) or key == A.REDACTED or key.startswith(A.FP)
        ):
            continue  # our bookkeeping: payload companions, hidden paths, the fingerprint
        if (A.SHA256 + key) in attrs:
            continue  # our payload: scrubbed when captured, its digest of what was written
        t = type(value)
        if secret(key):
            new: Any = PLACEHOLDER
        elif t is str:
            new = text(value)
        elif t is bool or t is int or t is float:
            continue
        elif t is bytes:
            new = r.data(value)
        elif t is tuple or t is list:
            new = r.scrub(value, key, [])
        else:
            continue
        if new is not value and new != value:
            changes[key] = new
            hidden.append(path + key)
    return changes


def _links(links: Any, r: Redactor, hidden: list[str]) -> list[Link] | None:
    return _each(links, r, hidden, "links", lambda link, a: Link(link.context, a))


def _events(events: Any, r: Redactor, hidden: list[str]) -> list[Event] | None:
    return _each(events, r, hidden, "events", lambda e, a: Event(e.name, a, e.timestamp))


def _each(
    items: Any, r: Redactor, hidden: list[str], name: str, rebuild: Callable[[Any, Any], T]
) -> list[T] | None:
    """Events or links with their attributes scrubbed (None: nothing to hide)."""
    out: list[T] | None = None
    for i, item in enumerate(items or ()):
        changes = attribute_changes(item.attributes, r, hidden, f"{name}[{i}].")
        if changes:
            if out is None:
                out = list(items)
            out[i] = rebuild(item, {**(item.attributes or {}), **changes})
    return out


def _status(status: Status, r: Redactor, hidden: list[str]) -> Status | None:
    text = status.description
    if not text:
        return None
    clean = r.text(text)
    if clean is text:
        return None
    hidden.append("status.description")
    return Status(status.status_code, clean)


def _redacted(attrs: Mapping[str, Any] | None, hidden: list[str]) -> list[str]:
    before = (attrs or {}).get(A.REDACTED) or ()
    return [*before, *(h for h in hidden if h not in before)]


class _Shared:
    """Resources and scopes with their secrets hidden, made once per object.

    Many spans share one resource and a few scopes: each is scrubbed the
    first time it is seen (holding the object keeps its id from being reused).
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def clean(self, obj: Any, rebuild: Callable[[Any, dict[str, Any]], Any]) -> Any:
        if obj is None:
            return None
        hit = self._seen.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        changes = attribute_changes(obj.attributes, redactor(), [])
        clean = rebuild(obj, {**obj.attributes, **changes}) if changes else obj
        with self._lock:
            if len(self._seen) > 256:
                self._seen.clear()
            self._seen[id(obj)] = (obj, clean)
        return clean


_shared = _Shared()


def _resource(resource: Resource) -> Resource:
    return cast("Resource", _shared.clean(resource, lambda r, a: Resource(a, r.schema_url)))


def _scope(scope: InstrumentationScope | None) -> InstrumentationScope | None:
    return cast(
        "InstrumentationScope | None",
        _shared.clean(scope, lambda s, a: InstrumentationScope(s.name, s.version, s.schema_url, a)),
    )


#: Span ids scrubbed as they ended, under the redactor then in force: an exporter of
#: the same provider need not go over them again.  Bounded: cleared when full.
_scrubbed: dict[int, Redactor] = {}
_SCRUBBED_MAX = 65536


def hide_in_ending(span: Span) -> None:
    """Scrub an SDK span as it ends (see :mod:`otel_replay.export.ending_span`)."""
    r = redactor()
    update_shared(span, _resource(span.resource), _scope(span.instrumentation_scope))
    hidden: list[str] = []
    changes = attribute_changes(span.attributes, r, hidden)
    events = _events(span.events, r, hidden)
    status = _status(span.status, r, hidden)
    if len(_scrubbed) >= _SCRUBBED_MAX:
        _scrubbed.clear()
    _scrubbed[span.context.span_id] = r
    if not hidden:
        return
    if events is not None:
        update_events(span, events)
    if status is not None:
        update_status(span, status)
    changes[A.REDACTED] = _redacted(span.attributes, hidden)
    update_attributes(span, changes)


def hidden_copy(span: ReadableSpan) -> ReadableSpan:
    """``span`` itself when it holds no secret, else a copy with them hidden."""
    r = redactor()
    context = span.context
    if context is not None and _scrubbed.get(context.span_id) is r:
        return span  # scrubbed as it ended, by this provider's ReplaySpanProcessor
    hidden: list[str] = []
    changes = attribute_changes(span.attributes, r, hidden)
    events = _events(span.events, r, hidden)
    links = _links(span.links, r, hidden)
    status = _status(span.status, r, hidden)
    resource = _resource(span.resource)
    scope = _scope(span.instrumentation_scope)
    if not hidden and resource is span.resource and scope is span.instrumentation_scope:
        return span
    attrs = dict(span.attributes or {})
    if hidden:
        attrs.update(changes)
        attrs[A.REDACTED] = _redacted(span.attributes, hidden)
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=resource,
        attributes=attrs,
        events=span.events if events is None else events,
        links=span.links if links is None else links,
        kind=span.kind,
        status=span.status if status is None else status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=scope,
    )
