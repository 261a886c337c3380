"""Zero-code setup under ``opentelemetry-instrument``.

Registered as an ``opentelemetry_post_instrument`` hook: once the SDK is
configured, it adds :class:`ReplaySpanProcessor` to the tracer provider when
``OTEL_REPLAY_PROCESSOR`` is true, or when ``OTEL_TRACES_EXPORTER`` names
``otel_replay_file`` (the file exporter's entry point)::

    OTEL_TRACES_EXPORTER=otlp,otel_replay_file OTEL_REPLAY_FILE=runs.otlp \\
        opentelemetry-instrument python agent.py

Every exporter the SDK built from ``OTEL_TRACES_EXPORTER`` (``otlp``,
``console``...) then sends the GenAI semconv attributes third-party
instrumentations lack, as the processor adds them to each span as it ends
(``OTEL_REPLAY_SEMCONV=false`` to leave the spans alone).

Frameworks that run the user's tools get their tool calls recorded
byte-exactly too (:mod:`otel_replay.capture.frameworks`: each one
installed); ``OTEL_REPLAY_FRAMEWORK_TOOLS=false`` to
leave them alone.  pydantic-ai's own spans are turned on for agents that do
not set their instrumentation (``Agent.instrument_all()``;
``OTEL_REPLAY_PYDANTIC_AI_SPANS=false`` to leave that to the app).

With ``OTEL_SDK_DISABLED=true`` nothing is installed or patched, whatever
the other variables say.  Anything that goes wrong is logged once; the app
starts regardless.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import trace

from .. import settings
from .spans import sdk_disabled, warn_once


def enabled() -> bool:
    """Whether to install: never with ``OTEL_SDK_DISABLED=true`` (the SDK is off too)."""
    if sdk_disabled():
        return False
    env = settings.current()
    if env.processor is not None:
        return env.processor
    exporters = env.otel_traces_exporter or ""
    return "otel_replay_file" in {e.strip() for e in exporters.split(",")}


def install(*args: Any, **kwargs: Any) -> None:
    """Add the processor to the configured SDK provider (idempotent)."""
    try:
        if not enabled():
            return
        provider = trace.get_tracer_provider()
        add = getattr(provider, "add_span_processor", None)
        if add is None:
            warn_once(
                "autoinstrument",
                "otel-replay: no SDK tracer provider is configured (install "
                "opentelemetry-distro); ReplaySpanProcessor not added",
            )
            return
        if getattr(provider, "_otel_replay_installed", False):
            return
        # Imported once enabled: the entry point loads in every instrumented app.
        from .processor import ReplaySpanProcessor

        processor = ReplaySpanProcessor()
        add(processor)
        setattr(provider, "_otel_replay_installed", True)  # noqa: B010 - a marker on a foreign object
        if settings.current().framework_tools:
            instrument_frameworks()
    except Exception as exc:
        warn_once("autoinstrument", "otel-replay could not install its processor: %r", exc)


def instrument_frameworks() -> list[str]:
    """Record the tool calls of the agent frameworks (each once the app imports it).

    Returns the names of those wrapped already (imported before this ran).
    """
    # The framework registry on use: the entry point loads in every instrumented app.
    from . import frameworks

    spans = settings.current().pydantic_ai_spans
    for name in frameworks.FRAMEWORKS:
        if name == "pydantic_ai":
            frameworks.instrument_pydantic_ai(agent_spans=spans)
        else:
            frameworks.instrument(name)
    return frameworks.installed()
