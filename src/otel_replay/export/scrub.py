"""Secrets in any span, hidden before an exporter sends or writes it.

Capture scrubs what it records; spans of other instrumentations arrive as
their authors wrote them (an OpenInference ``llm.invocation_parameters``
holding an api key, ``url.full`` with ``?api_key=``, an exception message
quoting a token, an HTTP client span named after a URL with ``?api_key=``).
Here the one redaction engine goes over the name of a span, the name and
attributes of each of its events, the attributes and trace states of its links,
its own trace state (another service's ``tracestate`` header) and its status
description, the attributes and schema URL of its resource, and the name,
version, schema URL and attributes of its instrumentation scope:
``ReplaySpanProcessor`` on each span of its provider as it ends (so every
exporter, OTLP included, sends the scrubbed span), and our exporters on each
span they write (a provider without the processor).

Byte-exact payloads we recorded (a value with its ``otel_replay.sha256.``
digest) were scrubbed when captured and their digest is of what was
written: they are left as they are.  Spans read back from a file or a
backend (``otel-replay convert`` and ``export``) are ``stored``: nothing in
them is trusted to be scrubbed, not even in a file our processor wrote (a
file proves nothing of who wrote it, and redaction is idempotent: a scrubbed
span comes out the same).  Their payloads are scrubbed too, and one that
changes is written as capture writes a payload it scrubbed: its digest of the
bytes kept, its key in ``otel_replay.redacted``.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar, cast

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, Span
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, Status
from opentelemetry.trace.span import TraceState

from .. import attributes as A
from ..otlp.sdk_fields import reads_as_sdk
from ..redaction import PLACEHOLDER, Redactor, redactor
from .ending_span import (
    update_attributes,
    update_context,
    update_events,
    update_links,
    update_name,
    update_shared,
    update_status,
)
from .scrub_payload import REMOVED as REMOVED
from .scrub_payload import payload_changes

T = TypeVar("T")

#: Where a hidden span name is listed in ``otel_replay.redacted`` (no attribute key has a space).
SPAN_NAME = "span name"
#: Where a hidden status description is listed.
STATUS = "status.description"
#: Where a hidden trace state is listed (a link's: ``links[0] trace state``).
TRACE_STATE = "trace state"
#: Our payload companions: scrubbed only with their payload, of a stored span (see the
#: module docstring).
_COMPANIONS = (A.SHA256, A.TYPE, A.BYTES, A.REF, A.SIZE)
_OURS = A.PREFIX


def attribute_changes(
    attrs: Mapping[str, Any] | None,
    r: Redactor,
    hidden: list[str],
    path: str = "",
    *,
    stored: bool = False,
    moved: Mapping[str, tuple[str, int]] | None = None,
) -> dict[str, Any]:
    """The values of ``attrs`` that hide a secret, by key; each hidden path added to ``hidden``.

    With ``stored`` the attributes were read from a file or backend, not made by
    this process's capture: nothing in them is trusted to be scrubbed, our own
    bookkeeping and byte-exact payloads included (see
    :func:`~otel_replay.export.scrub_payload.payload_changes`;
    ``moved`` maps a blob reference to that of the blob scrubbed, and its size).
    A change of :data:`REMOVED` takes its key off.

    A key whose own text holds a secret is renamed to its scrubbed text (suffixed
    `` (2)``, `` (3)``... when another key already has that name): its value moves
    there, scrubbed as any value, and the new name is listed in ``hidden``.
    """
    changes: dict[str, Any] = {}
    if not attrs:
        return changes
    attrs = getattr(attrs, "_dict", attrs)  # BoundedAttributes: its dict, without the lock
    names, others, skip = _plan(attrs, r, stored)
    if not names and not others:  # every value judged by itself alone (the common span)
        changes = r.changed_values(attrs)
        hidden += [path + key for key in changes]
        return changes
    text = r.text
    # The values judged by their text alone in one call; then those their names say more
    # of, each hidden path listed in the order of the attributes.
    found = r.changed_values(attrs, skip) if len(skip) < len(attrs) else {}
    payloads: set[str] = set()
    companions: list[str] = []
    for key, action in others:
        if action is _COMPANION:  # a payload's companion: the payload is scrubbed whole
            payloads.add(key[key.index(".", len(_OURS)) + 1 :])
            companions.append(key)
        elif action is _PAYLOAD:
            payloads.add(key)
        elif action is _SECRET:
            value = attrs[key]
            if value is not PLACEHOLDER and value != PLACEHOLDER:
                found[key] = PLACEHOLDER
    if found:
        changes = {key: found[key] for key in attrs if key in found}
        hidden += [path + names.get(key, key) for key in changes]
    for key in payloads:
        if payload_changes(attrs, key, r, changes, moved or {}):
            hidden.append(path + names.get(key, key))
    for key in companions:  # the text of a companion the payload left as it was
        value = attrs[key]
        if key not in changes and type(value) is str and text(value) is not value:
            changes[key] = text(value)
            hidden.append(path + names.get(key, key))
    for key, name in names.items():
        value = changes.get(key, attrs[key])
        if value is REMOVED:
            continue
        changes[key] = REMOVED
        changes[name] = value
        if path + name not in hidden:
            hidden.append(path + name)
    return changes


#: What ``attribute_changes`` does with a value, by its name (see ``_plan``).
_VALUE, _SECRET, _SKIP, _COMPANION, _PAYLOAD = "value", "secret", "skip", "companion", "payload"
_Plan = tuple[dict[str, str], list[tuple[str, str]], frozenset[str]]
#: Per tuple of attribute names and whether stored: the redactor that judged them, and
#: the plan (see ``_plan``).  An instrumentation sets the same names on every span: they
#: are judged once, not once a span.  Cleared when full.
_plans: dict[tuple[tuple[Any, ...], bool], tuple[Redactor, _Plan]] = {}
_PLANS_MAX = 1024


def _plan(attrs: Mapping[str, Any], r: Redactor, stored: bool) -> _Plan:
    """The new name of each key of ``attrs`` whose text hides a secret (see
    :func:`renamed_keys`); each key whose value is not scrubbed where it stands as any
    value is, with what ``attribute_changes`` does with it (in order); and those keys:
    all told by the names alone, and remembered per tuple of them."""
    key = (tuple(attrs), stored)
    known = _plans.get(key)
    if known is not None and known[0] is r:
        return known[1]
    others: list[tuple[str, str]] = []
    digests = any(type(k) is str and k.startswith(A.SHA256) for k in attrs)
    for k in attrs:
        secret = r.is_secret_key(k)  # (raises for a name that is no text, as before)
        if k.startswith(_OURS) and k.startswith(_COMPANIONS):
            others.append((k, _COMPANION if stored else _SKIP))
        elif not stored and k.startswith(_OURS) and (k == A.REDACTED or k.startswith(A.FP)):
            others.append((k, _SKIP))  # our bookkeeping: hidden paths, the fingerprint
        elif digests and (A.SHA256 + k) in attrs:
            # Our payload: scrubbed when captured, its digest of what was written (stored:
            # scrubbed whole, with its companions).
            others.append((k, _PAYLOAD if stored else _SKIP))
        elif secret:
            others.append((k, _SECRET))
    plan = (renamed_keys(attrs, r.text), others, frozenset(k for k, _ in others))
    if len(_plans) >= _PLANS_MAX:
        _plans.clear()
    _plans[key] = (r, plan)
    return plan


def renamed_keys(attrs: Mapping[str, Any], text: Callable[[str], str]) -> dict[str, str]:
    """The new name of each key of ``attrs`` whose text hides a secret: its scrubbed
    text, suffixed `` (2)``, `` (3)``... when that name is taken (never another
    attribute overwritten).  Empty, and cheap, when no key hides one."""
    out: dict[str, str] = {}
    taken: set[str] | None = None
    for key in attrs:
        if type(key) is not str:
            continue
        clean = text(key)
        if clean is key:
            continue
        if taken is None:
            taken = set(attrs)
        name, n = clean, 2
        while name in taken:
            name, n = f"{clean} ({n})", n + 1
        taken.add(name)
        out[key] = name
    return out


def _links(links: Any, r: Redactor, hidden: list[str], stored: bool = False) -> list[Link] | None:
    out = _each(links, r, hidden, "links", lambda link, _, a: Link(link.context, a), stored)
    for i, link in enumerate(out if out is not None else (links or ())):
        context = _trace_state(link.context, r, hidden, f"links[{i}] {TRACE_STATE}")
        if context is not None:
            if out is None:
                out = list(links)
            out[i] = Link(context, link.attributes)
    return out


def _trace_state(context: Any, r: Redactor, hidden: list[str], where: str) -> SpanContext | None:
    """``context`` with its trace state scrubbed (None: nothing to hide).

    A span's trace state is its parent's, taken from a ``tracestate`` header
    another service sent: any text of theirs.  Scrubbed as its header text is
    (as ``convert`` scrubs a stored one); members that no longer parse are left
    out.
    """
    state = getattr(context, "trace_state", None)
    if not state or not isinstance(context, SpanContext):
        return None
    header = state.to_header()
    clean = r.text(header)
    if clean is header:
        return None
    hidden.append(where)
    return SpanContext(
        context.trace_id,
        context.span_id,
        context.is_remote,
        context.trace_flags,
        TraceState.from_header([clean]),
    )


def _events(
    events: Any, r: Redactor, hidden: list[str], stored: bool = False
) -> list[Event] | None:
    return _each(events, r, hidden, "events", lambda e, n, a: Event(n, a, e.timestamp), stored)


def _each(
    items: Any,
    r: Redactor,
    hidden: list[str],
    kind: str,
    rebuild: Callable[[Any, Any, Any], T],
    stored: bool = False,
) -> list[T] | None:
    """Events or links with their names and attributes scrubbed (None: nothing to hide)."""
    out: list[T] | None = None
    text = r.text
    for i, item in enumerate(items or ()):
        here: list[str] = []  # (spelled with the item's place only when it hides something)
        changes = attribute_changes(item.attributes, r, here, stored=stored)
        name = getattr(item, "name", None)  # a link has none
        clean = name if type(name) is not str else text(name)
        if here or clean is not name:
            where = f"{kind}[{i}]"
            hidden += [f"{where}.{h}" for h in here]
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
    merged = changed(attrs, changes)
    if not isinstance(attrs, BoundedAttributes):
        return merged
    out = BoundedAttributes(attrs.maxlen, merged, immutable=True, max_value_len=attrs.max_value_len)
    out.dropped = attrs.dropped
    return out


def hidden_name(name: Any, r: Redactor, hidden: list[str]) -> str | None:
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
    hidden.append(STATUS)
    return Status(status.status_code, clean)


def changed(attrs: Mapping[str, Any] | None, changes: Mapping[str, Any]) -> dict[str, Any]:
    """``attrs`` with ``changes`` made (a key changed to :data:`REMOVED` taken off)."""
    merged = {**(attrs or {}), **changes}
    for key, value in changes.items():
        if value is REMOVED:
            del merged[key]
    return merged


def redacted(
    attrs: Mapping[str, Any] | None, hidden: list[str], changes: Mapping[str, Any] | None = None
) -> list[str]:
    """The ``otel_replay.redacted`` list of a span whose ``attrs`` had ``hidden`` hidden (the
    list it had, scrubbed in ``changes`` if it was, then the new paths)."""
    before = (changes or {}).get(A.REDACTED, (attrs or {}).get(A.REDACTED)) or ()
    if not isinstance(before, (list, tuple)):
        before = [str(before)]
    return [*before, *(h for h in hidden if h not in before)]


class _Shared:
    """Resources and scopes with their secrets hidden, made once per object.

    Many spans share one resource and a few scopes: each is scrubbed the
    first time it is seen under the redactor in force (holding the object
    keeps its id from being reused).
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[Any, Redactor, Any]] = {}
        self._lock = threading.Lock()

    def clean(self, obj: Any, scrub: Callable[[Any, Redactor], Any], r: Redactor) -> Any:
        if obj is None:
            return None
        hit = self._seen.get(id(obj))
        if hit is not None and hit[0] is obj and hit[1] is r:
            return hit[2]
        clean = scrub(obj, r)
        with self._lock:
            if len(self._seen) > 256:
                self._seen.clear()
            self._seen[id(obj)] = (obj, r, clean)
        return clean


_shared = _Shared()


def hidden_text(value: Any, r: Redactor) -> Any:
    """A name, version or schema URL scrubbed (itself when it hides nothing, or is no text)."""
    return r.text(value) if type(value) is str else value


def _resource_scrubbed(resource: Resource, r: Redactor) -> Resource:
    # Stored: a resource read from a file is scrubbed whole, and one of an SDK holds
    # none of our bookkeeping for the difference to cost anything.
    changes = attribute_changes(resource.attributes, r, [], stored=True)
    schema_url = hidden_text(resource.schema_url, r)
    if not changes and schema_url is resource.schema_url:
        return resource
    return Resource(changed(resource.attributes, changes), schema_url)


def _scope_scrubbed(scope: InstrumentationScope, r: Redactor) -> InstrumentationScope:
    """``scope`` itself when it holds no secret, else a copy with them hidden: its name,
    version and schema URL (an instrumentation may be named after an endpoint, key and
    all) and its attributes."""
    changes = attribute_changes(scope.attributes, r, [], stored=True)
    name, version, schema_url = (
        hidden_text(v, r) for v in (scope.name, scope.version, scope.schema_url)
    )
    if (
        not changes
        and name is scope.name
        and version is scope.version
        and schema_url is scope.schema_url
    ):
        return scope
    attrs = changed(scope.attributes, changes) if changes else scope.attributes
    return InstrumentationScope(name, version, schema_url, attrs)


def _resource(resource: Resource, r: Redactor) -> Resource:
    return cast("Resource", _shared.clean(resource, _resource_scrubbed, r))


def _scope(scope: InstrumentationScope | None, r: Redactor) -> InstrumentationScope | None:
    return cast("InstrumentationScope | None", _shared.clean(scope, _scope_scrubbed, r))


#: Spans scrubbed as they ended, by span id: the span itself (weakly) and the redactor
#: then in force.  An exporter of the same provider need not go over them again; a span
#: of another provider that happens to have the same id (a process that seeds
#: ``random``, which the SDK draws ids from, makes ids again) is not that span.
#: Bounded: cleared when full.
_scrubbed: dict[int, tuple[weakref.ref[Any], Redactor]] = {}
_SCRUBBED_MAX = 65536


def hide_in_ending(span: Span, r: Redactor | None = None) -> None:
    """Scrub an SDK span as it ends (see :mod:`otel_replay.export.ending_span`).

    Its name is the one it ends with (``update_name`` may have changed it
    since it started); links added at its start or later are all there.
    ``r``: the redactor to hide with (None: the process's, :func:`redactor`).
    """
    if r is None:
        r = redactor()
    update_shared(span, _resource(span.resource, r), _scope(span.instrumentation_scope, r))
    hidden: list[str] = []
    name = hidden_name(span.name, r, hidden)
    changes = attribute_changes(span.attributes, r, hidden)
    events = _events(span.events, r, hidden)
    links = _links(span.links, r, hidden)
    status = _status(span.status, r, hidden)
    context = _trace_state(span.context, r, hidden, TRACE_STATE)
    if len(_scrubbed) >= _SCRUBBED_MAX:
        _scrubbed.clear()
    if not hidden:
        _scrubbed[span.context.span_id] = (weakref.ref(span), r)
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
    if context is not None:
        done &= update_context(span, context)
    changes[A.REDACTED] = redacted(span.attributes, hidden)
    removed = [key for key, value in changes.items() if value is REMOVED]
    for key in removed:  # a key renamed: its secret-holding name taken off
        del changes[key]
    done &= update_attributes(span, changes, removed)
    if done:
        _scrubbed[span.context.span_id] = (weakref.ref(span), r)


def _marked_clean(span: ReadableSpan, span_id: int, r: Redactor) -> bool:
    """Whether this very span was scrubbed as it ended, under ``r``."""
    hit = _scrubbed.get(span_id)
    return hit is not None and hit[1] is r and hit[0]() is span


#: What ``hidden_copy`` reads of a span: the SDK's properties of these names.
_READ: Final = (
    "name",
    "context",
    "attributes",
    "events",
    "links",
    "status",
    "resource",
    "instrumentation_scope",
)
_Read = tuple[Any, Any, Any, Any, Any, Status, Resource, Any]


def _read(span: ReadableSpan) -> _Read:
    """A span's name, context, attributes, events, links, status, resource and scope,
    read past the SDK's properties where the span's class keeps them."""
    if reads_as_sdk(type(span), _READ):
        return (
            span._name,
            span._context,
            span._attributes or {},
            span._events,
            span._links,
            span._status,
            span._resource,
            span._instrumentation_scope,
        )
    return (
        span.name,
        span.context,
        span.attributes or {},
        span.events,
        span.links,
        span.status,
        span.resource,
        span.instrumentation_scope,
    )


def hidden_copy(span: ReadableSpan, *, stored: bool = False) -> ReadableSpan:
    """``span`` itself when it holds no secret, else a copy with them hidden.

    A ``stored`` span was read from a file or a backend: nothing in it is trusted to
    be scrubbed (see :func:`attribute_changes`), even a span our processor wrote.
    """
    r = redactor()
    (
        given_name,
        context,
        given_attrs,
        given_events,
        given_links,
        given_status,
        given_resource,
        given_scope,
    ) = _read(span)
    if not stored and context is not None and _marked_clean(span, context.span_id, r):
        return span  # scrubbed as it ended, by this provider's ReplaySpanProcessor
    hidden: list[str] = []
    name = hidden_name(given_name, r, hidden)
    changes = attribute_changes(given_attrs, r, hidden, stored=stored)
    events = _events(given_events, r, hidden, stored) if given_events else None
    links = _links(given_links, r, hidden, stored) if given_links else None
    status = _status(given_status, r, hidden)
    clean_context = _trace_state(context, r, hidden, TRACE_STATE)
    resource = _resource(given_resource, r)
    scope = _scope(given_scope, r)
    if not hidden and resource is given_resource and scope is given_scope:
        return span
    attrs = dict(given_attrs)
    if hidden:
        attrs = changed(attrs, changes)
        attrs[A.REDACTED] = redacted(given_attrs, hidden, changes)
    return ReadableSpan(
        name=given_name if name is None else name,
        context=context if clean_context is None else clean_context,
        parent=span.parent,
        resource=resource,
        attributes=attrs,
        events=tuple(given_events) if events is None else events,
        links=tuple(given_links) if links is None else links,
        kind=span.kind,
        status=given_status if status is None else status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=scope,
    )
