"""Record one run of the agent to a local trace file, as production would."""

from __future__ import annotations

import os
import sys

from opentelemetry import baggage, context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider

import otel_replay

from .agent import run_agent
from .scripted_model import ScriptedModel

QUESTION = "Where is my order?"
#: Who asked: carried as OTel baggage, so every span of the run knows it.
USER = {"user.id": "u_7710", "tenant.id": "widgets-eu", "session.id": "s_0314"}


def record(path: str | os.PathLike[str], question: str = QUESTION, *, fixed: bool = False) -> str:
    """Run the agent once with tracing to ``path``; returns its answer (``fixed``: the fix)."""
    provider = TracerProvider(resource=Resource.create({"service.name": "order-support"}))
    provider.add_span_processor(otel_replay.ReplaySpanProcessor(flags={"lookup_v2": fixed}, seed=7))
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
    )
    # An app would call trace.set_tracer_provider(provider) once at start-up;
    # the example records several times per process, so it scopes the provider.
    previous = otel_replay.use_tracer_provider(provider)
    ctx = context.get_current()
    for key, value in USER.items():
        ctx = baggage.set_baggage(key, value, ctx)
    token = context.attach(ctx)
    try:
        return run_agent(question, model=ScriptedModel(), user_id=USER["user.id"], fixed=fixed)
    finally:
        context.detach(token)
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


if __name__ == "__main__":
    # python -m examples.order_support.record [PATH [QUESTION...]]: one run per question.
    where = sys.argv[1] if len(sys.argv) > 1 else "order_support.otlp"
    for asked in sys.argv[2:] or [QUESTION]:
        print(record(where, asked))
