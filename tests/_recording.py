"""Test helper: record spans the way users do, into a real trace file."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from typing import Any

from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay


@contextlib.contextmanager
def recording(
    path: str | os.PathLike[str],
    wrap: Callable[[SpanExporter], SpanExporter] | None = None,
    **processor_kwargs: Any,
) -> Iterator[TracerProvider]:
    """Capture helpers write to ``path`` through the recommended processors (the file
    exporter given to ``wrap`` first, when given: what a pipeline does on the way)."""
    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor(**processor_kwargs))
    exporter: SpanExporter = otel_replay.FileSpanExporter(path)
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(wrap(exporter) if wrap else exporter)
    )
    previous = otel_replay.use_tracer_provider(provider)
    try:
        yield provider
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


@contextlib.contextmanager
def instrumented(
    path: str | os.PathLike[str], instrumentor: Any, ours: bool = True
) -> Iterator[TracerProvider]:
    """A third-party ``instrumentor`` (OpenInference's, OpenLLMetry's) traces into ``path``,
    beside our processor (``ours``; else its spans alone, as a stack exports them);
    undone at the end."""
    provider = TracerProvider()
    if ours:
        provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    provider.add_span_processor(SimpleSpanProcessor(otel_replay.FileSpanExporter(path)))
    previous = otel_replay.use_tracer_provider(provider)
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield provider
    finally:
        instrumentor.uninstrument()
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


@contextlib.contextmanager
def in_memory(
    limits: SpanLimits | None = None, **processor_kwargs: Any
) -> Iterator[InMemorySpanExporter]:
    """Capture helpers write to memory (for inspecting attributes)."""
    provider = TracerProvider(span_limits=limits)
    provider.add_span_processor(otel_replay.ReplaySpanProcessor(**processor_kwargs))
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    previous = otel_replay.use_tracer_provider(provider)
    try:
        yield exporter
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
