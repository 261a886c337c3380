"""Test helper: stored span records built by hand, for the layers above the readers."""

from __future__ import annotations

from typing import Any

from otel_replay.otlp.records import SpanRecord


def span_record(
    trace_id: str,
    span_id: str,
    parent: str | None,
    start: int,
    name: str,
    attrs: dict[str, Any],
    *,
    duration: int = 10,
    resource: dict[str, Any] | None = None,
    scope: str = "s",
    source: str = "run.otlp",
) -> SpanRecord:
    return SpanRecord(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=1,
        start_ns=start,
        end_ns=start + duration,
        attributes=attrs,
        events=[],
        status_code=0,
        status_message="",
        resource=resource if resource is not None else {},
        scope_name=scope,
        scope_version="",
        source=source,
    )
