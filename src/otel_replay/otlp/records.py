"""Spans and log records as read back from storage: plain values, no SDK or protobuf types."""

from __future__ import annotations

import dataclasses
from typing import Any, TypeAlias


@dataclasses.dataclass(slots=True)
class EventRecord:
    name: str
    time_ns: int
    attributes: dict[str, Any]


@dataclasses.dataclass(slots=True)
class LinkRecord:
    trace_id: str
    span_id: str
    attributes: dict[str, Any]


@dataclasses.dataclass(slots=True, eq=False)
class SpanRecord:
    """One stored span.

    Ids are lowercase hex (trace 32 chars, span 16); attribute values are
    ``str``, ``bool``, ``int``, ``float``, ``bytes``, ``list`` or ``dict``
    (OTLP ``kvlist_value``).  ``resource`` is shared by the spans of one
    ``ResourceSpans`` and must not be mutated.  A reader may decode the fields
    past the ids, times, resource and scope when first read (a subclass, see
    :meth:`plain`); the record is the same either way.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    events: list[EventRecord]
    status_code: int  # 0 unset, 1 ok, 2 error
    status_message: str
    resource: dict[str, Any]
    scope_name: str
    scope_version: str
    source: str = ""
    links: list[LinkRecord] = dataclasses.field(default_factory=list)
    #: What the reader could not tell from the stored span, one sentence each (an
    #: attribute whose type the store does not keep and the text leaves open): the
    #: replay-kit check says them of the span's step.
    notes: tuple[str, ...] = ()

    def plain(self) -> SpanRecord:
        """This record with every field decoded (itself, unless its reader decodes fields
        when first read): the one to read many fields of, many times."""
        return self

    def __eq__(self, other: object) -> bool:
        # As the dataclass compares, whichever reader (and class) made either record.
        if not isinstance(other, SpanRecord):
            return NotImplemented
        return values(self) == values(other)

    __hash__ = None  # type: ignore[assignment]


def values(record: SpanRecord) -> tuple[Any, ...]:
    """The fields of ``record``, in order."""
    return tuple(getattr(record, f.name) for f in dataclasses.fields(SpanRecord))


@dataclasses.dataclass(slots=True)
class LogRecord:
    """One stored log record (an OTel event when :attr:`event_name` is set).

    ``trace_id`` and ``span_id`` are lowercase hex, empty when the record is
    tied to no span.  ``event_name`` is the record's ``event_name`` field, or
    the ``event.name`` attribute older SDKs wrote instead.  ``body`` and
    attribute values are plain Python values as in :class:`SpanRecord`.
    ``time_ns`` falls back to the observed time when the record has none.
    """

    trace_id: str
    span_id: str
    time_ns: int
    event_name: str
    body: Any
    attributes: dict[str, Any]
    severity_number: int
    severity_text: str
    resource: dict[str, Any]
    scope_name: str
    scope_version: str
    source: str = ""


#: What a reader yields: the records of the traces and logs signals.
Record: TypeAlias = "SpanRecord | LogRecord"
