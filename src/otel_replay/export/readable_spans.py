"""Stored span records back to SDK ``ReadableSpan`` objects.

Any standard ``SpanExporter`` (OTLP over HTTP or gRPC, our file exporters)
takes ``ReadableSpan``: rebuilding them from what was read lets stored spans
be converted and re-sent with the exporters users already trust, instead of
a second hand-written encoder per format.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags

from ..otlp.records import SpanRecord

__all__ = ["copied", "readable_spans"]

_SAMPLED = TraceFlags(TraceFlags.SAMPLED)
_STATUS = {0: StatusCode.UNSET, 1: StatusCode.OK, 2: StatusCode.ERROR}


def _int(hex_id: str | None) -> int:
    return int(hex_id, 16) if hex_id else 0


def _context(trace_id: str, span_id: str | None) -> SpanContext:
    return SpanContext(_int(trace_id), _int(span_id), is_remote=False, trace_flags=_SAMPLED)


def _kind(otlp_kind: int) -> SpanKind:
    # OTLP numbers kinds from 1 (0 is UNSPECIFIED, which the SDK has no name for).
    try:
        return SpanKind(otlp_kind - 1)
    except ValueError:
        return SpanKind.INTERNAL


def readable_spans(records: Iterable[SpanRecord]) -> Iterator[ReadableSpan]:
    """One ``ReadableSpan`` per record, resource and scope objects shared as read.

    Spans of one stored ``ResourceSpans`` share one resource dict; sharing one
    ``Resource`` keeps them in one block when they are encoded again.
    """
    resources: dict[int, tuple[dict[str, Any], Resource]] = {}
    scopes: dict[tuple[str, str], InstrumentationScope] = {}
    for r in records:
        cached = resources.get(id(r.resource))
        if cached is None or cached[0] is not r.resource:
            # Keep the dict alive next to its Resource so its id() is not reused.
            cached = (r.resource, Resource(r.resource))
            resources[id(r.resource)] = cached
        scope = scopes.get((r.scope_name, r.scope_version))
        if scope is None:
            scope = InstrumentationScope(r.scope_name, r.scope_version or None)
            scopes[(r.scope_name, r.scope_version)] = scope
        status = _STATUS.get(r.status_code, StatusCode.UNSET)
        yield ReadableSpan(
            name=r.name,
            context=_context(r.trace_id, r.span_id),
            parent=_context(r.trace_id, r.parent_span_id) if r.parent_span_id else None,
            resource=cached[1],
            attributes=r.attributes,
            events=[Event(e.name, e.attributes, e.time_ns) for e in r.events],
            links=[Link(_context(lk.trace_id, lk.span_id), lk.attributes) for lk in r.links],
            kind=_kind(r.kind),
            status=Status(status, r.status_message if status is StatusCode.ERROR else None),
            start_time=r.start_ns,
            end_time=r.end_ns,
            instrumentation_scope=scope,
        )


def copied(span: ReadableSpan, **changes: Any) -> ReadableSpan:
    """A copy of ``span`` with the fields named in ``changes`` (``name=``, ``events=``...)
    replaced."""
    fields = {
        "name": span.name,
        "context": span.context,
        "parent": span.parent,
        "resource": span.resource,
        "attributes": span.attributes,
        "events": span.events,
        "links": span.links,
        "kind": span.kind,
        "status": span.status,
        "start_time": span.start_time,
        "end_time": span.end_time,
        "instrumentation_scope": span.instrumentation_scope,
    }
    return ReadableSpan(**{**fields, **changes})
