"""Zero-code setup under ``opentelemetry-instrument``.

Registered as an ``opentelemetry_post_instrument`` hook: once the SDK is
configured, it adds :class:`ReplaySpanProcessor` to the tracer provider when
``OTEL_REPLAY_PROCESSOR`` is true, or when ``OTEL_TRACES_EXPORTER`` names
``otel_replay_file`` (the file exporter's entry point)::

    OTEL_TRACES_EXPORTER=otlp,otel_replay_file OTEL_REPLAY_FILE=runs.otlp \\
        opentelemetry-instrument python agent.py

Anything that goes wrong is logged once; the app starts regardless.
"""

from __future__ import annotations

import os
from typing import Any

from opentelemetry import trace

from .spans import warn_once

_TRUE = frozenset({"1", "true", "yes", "on"})


def enabled() -> bool:
    flag = os.environ.get("OTEL_REPLAY_PROCESSOR", "").strip().lower()
    if flag:
        return flag in _TRUE
    exporters = os.environ.get("OTEL_TRACES_EXPORTER", "")
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
        from .processor import ReplaySpanProcessor

        add(ReplaySpanProcessor())
        setattr(provider, "_otel_replay_installed", True)  # noqa: B010 - a marker on a foreign object
    except Exception as exc:
        warn_once("autoinstrument", "otel-replay could not install its processor: %r", exc)
