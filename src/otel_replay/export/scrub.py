"""Secrets in any span, hidden before an exporter sends or writes it.

Capture scrubs what it records; spans of other instrumentations arrive as
their authors wrote them (an OpenInference ``llm.invocation_parameters``
holding an api key, ``url.full`` with ``?api_key=``, an exception message
quoting a token, an HTTP client span named after a URL with ``?api_key=``).
Here the one redaction engine goes over the name of a span, the name and
attributes of each of its events, the attributes of its links and its status
description, and the attributes of its resource and instrumentation scope:
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

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, Status

from .. import attributes as A
from ..redaction import PLACEHOLDER, Redactor, redactor
from .ending_span import (
    update_attributes,
    update_events,
    update_links,
    update_name,
    update_shared,
    update_status,
)

T = TypeVar("T")

#: Where a hidden span name is listed in ``otel_replay.redacted`` (no attribute key has a space).
SPAN_NAME = "span name"
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
    return _each(links, r, hidden, "links", lambda link, _, a: Link(link.context, a))


def _events(events: Any, r: Redactor, hidden: list[str]) -> list[Event] | None:
    return _each(events, r, hidden, "events", lambda e, n, a: Event(n, a, e.timestamp))


def _each(
    items: Any,
    r: Redactor,
    hidden: list[str],
    kind: str,
    rebuild: Callable[[Any, Any, Any], T],
) -> list[T] | None:
    """Events or links with their names and attributes scrubbed (None: nothing to hide)."""
    out: list[T] | None = None
    text = r.text
    for i, item in enumerate(items or ()):
        where = f"{kind}[{i}]"
        changes = attribute_changes(item.attributes, r, hidden, where + ".")
        name = getattr(item, "name", None)  # a link has none
        clean = name if type(name) is not str else text(name)
        if clean is not name:
            hidden.append(where + " name")
        if changes or clean is not name:
            if out is None:
                out = list(items)
            attrs = item.attributes
            out[i] = rebuild(item, clean, _attributes_like(attrs, changes) if changes else attrs)
    return out


def _attributes_like(attrs: Any, changes: Mapping[str, Any]) -> Any:
    """``attrs`` with ``changes``, as bounded as ``attrs`` was (its dropped count kept)."""
    merged = {**(attrs or {}), **changes}
    if not isinstance(attrs, BoundedAttributes):
        return merged
    out = BoundedAttributes(attrs.maxlen, merged, immutable=True, max_value_len=attrs.max_value_len)
    out.dropped = attrs.dropped
    return out


def _name(name: Any, r: Redactor, hidden: list[str]) -> str | None:
    """The span's name scrubbed (None: nothing to hide): an HTTP client span may be
    named after its URL, query string and all."""
    if type(name) is not str:
        return None
    clean = r.text(name)
    if clean is name:
        return None
    hidden.append(SPAN_NAME)
    return clean


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
    """Scrub an SDK span as it ends (see :mod:`otel_replay.export.ending_span`).

    Its name is the one it ends with (``update_name`` may have changed it
    since it started); links added at its start or later are all there.
    """
    r = redactor()
    update_shared(span, _resource(span.resource), _scope(span.instrumentation_scope))
    hidden: list[str] = []
    name = _name(span.name, r, hidden)
    changes = attribute_changes(span.attributes, r, hidden)
    events = _events(span.events, r, hidden)
    links = _links(span.links, r, hidden)
    status = _status(span.status, r, hidden)
    if len(_scrubbed) >= _SCRUBBED_MAX:
        _scrubbed.clear()
    if not hidden:
        _scrubbed[span.context.span_id] = r
        return
    # Marked clean only once every change is made: a span this SDK will not let us
    # change is scrubbed again by our exporters.
    done = True
    if name is not None:
        done &= update_name(span, name)
    if events is not None:
        done &= update_events(span, events)
    if links is not None:
        done &= update_links(span, links)
    if status is not None:
        done &= update_status(span, status)
    changes[A.REDACTED] = _redacted(span.attributes, hidden)
    done &= update_attributes(span, changes)
    if done:
        _scrubbed[span.context.span_id] = r


def hidden_copy(span: ReadableSpan) -> ReadableSpan:
    """``span`` itself when it holds no secret, else a copy with them hidden."""
    r = redactor()
    context = span.context
    if context is not None and _scrubbed.get(context.span_id) is r:
        return span  # scrubbed as it ended, by this provider's ReplaySpanProcessor
    hidden: list[str] = []
    name = _name(span.name, r, hidden)
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
        name=span.name if name is None else name,
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
