"""otel-replay: make LLM-agent failures reproducible from OpenTelemetry traces.

Capture with :class:`ReplaySpanProcessor`, :func:`tool` and :func:`model_call`;
write local files with :class:`FileSpanExporter` (under the SDK's
``BatchSpanProcessor`` or our never-dropping :class:`RecordingSpanProcessor`);
read them back with :func:`load`; replay with :func:`replay`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

# Public name -> defining module.  Imported on first use so that ``import
# otel_replay`` stays cheap for the traced app and the CLI.
_EXPORTS = {
    "ReplaySpanProcessor": "otel_replay.capture.processor",
    "FingerprintProcessor": "otel_replay.capture.span_processors",
    "BaggageIdsProcessor": "otel_replay.capture.span_processors",
    "SemconvProcessor": "otel_replay.capture.span_processors",
    "RedactionProcessor": "otel_replay.capture.span_processors",
    "PayloadOffloadProcessor": "otel_replay.capture.span_processors",
    "Base64BytesProcessor": "otel_replay.capture.span_processors",
    "tool": "otel_replay.capture.tool",
    "tool_call_id": "otel_replay.capture.tool",
    "model_call": "otel_replay.capture.model_call",
    "ModelCallRecorder": "otel_replay.capture.model_call",
    "agent_run": "otel_replay.capture.agent_run",
    "configure_redaction": "otel_replay.redaction",
    "install_redactor": "otel_replay.redaction",
    "redactor_from_settings": "otel_replay.redaction",
    "snapshot": "otel_replay.capture.snapshot",
    "use_tracer_provider": "otel_replay.capture.spans",
    "RecordingTransport": "otel_replay.capture.http_recorder",
    "AsyncRecordingTransport": "otel_replay.capture.http_recorder",
    "FileSpanExporter": "otel_replay.export.file_exporter",
    "RecordingSpanProcessor": "otel_replay.export.recording_processor",
    "GenAISemconvExporter": "otel_replay.export.semconv",
    "instrument_pydantic_ai": "otel_replay.capture.frameworks",
    "instrument_openai_agents": "otel_replay.capture.frameworks",
    "instrument_framework": "otel_replay.capture.frameworks",
    "uninstrument_framework": "otel_replay.capture.frameworks",
    "load": "otel_replay.runs.load",
    "Runs": "otel_replay.runs.load",
    "LoadWarning": "otel_replay.runs.load",
    "iter_runs": "otel_replay.runs.stream",
    "Run": "otel_replay.runs.model",
    "Step": "otel_replay.runs.model",
    "FormatError": "otel_replay.otlp.errors",
    "replay": "otel_replay.replay.session",
    "ReplaySession": "otel_replay.replay.session",
    "call_agent": "otel_replay.replay.agent_call",
    "ReplayDivergence": "otel_replay.replay.divergence",
    "ReplayError": "otel_replay.replay.divergence",
    "ReplayRefused": "otel_replay.replay.divergence",
    "ReplayReport": "otel_replay.replay.session",
    "ReplayOptions": "otel_replay.replay.options",
    "NetworkBlocked": "otel_replay.replay.network",
    "PinnedModel": "otel_replay.replay.pinned_model",
    "register_type": "otel_replay.trusted_types",
    "RecordedBaseException": "otel_replay.trusted_types",
}

__all__ = [
    "AsyncRecordingTransport",
    "BaggageIdsProcessor",
    "Base64BytesProcessor",
    "FileSpanExporter",
    "FingerprintProcessor",
    "FormatError",
    "GenAISemconvExporter",
    "LoadWarning",
    "ModelCallRecorder",
    "NetworkBlocked",
    "PayloadOffloadProcessor",
    "PinnedModel",
    "RecordedBaseException",
    "RecordingSpanProcessor",
    "RecordingTransport",
    "RedactionProcessor",
    "ReplayDivergence",
    "ReplayError",
    "ReplayOptions",
    "ReplayRefused",
    "ReplayReport",
    "ReplaySession",
    "ReplaySpanProcessor",
    "Run",
    "Runs",
    "SemconvProcessor",
    "Step",
    "agent_run",
    "call_agent",
    "configure_redaction",
    "install_redactor",
    "instrument_framework",
    "instrument_openai_agents",
    "instrument_pydantic_ai",
    "iter_runs",
    "load",
    "model_call",
    "redactor_from_settings",
    "register_type",
    "replay",
    "snapshot",
    "tool",
    "tool_call_id",
    "uninstrument_framework",
    "use_tracer_provider",
]

if TYPE_CHECKING:
    from .capture.agent_run import agent_run
    from .capture.frameworks import (
        instrument_framework,
        instrument_openai_agents,
        instrument_pydantic_ai,
        uninstrument_framework,
    )
    from .capture.http_recorder import AsyncRecordingTransport, RecordingTransport
    from .capture.model_call import ModelCallRecorder, model_call
    from .capture.processor import ReplaySpanProcessor
    from .capture.snapshot import snapshot
    from .capture.span_processors import (
        BaggageIdsProcessor,
        Base64BytesProcessor,
        FingerprintProcessor,
        PayloadOffloadProcessor,
        RedactionProcessor,
        SemconvProcessor,
    )
    from .capture.spans import use_tracer_provider
    from .capture.tool import tool, tool_call_id
    from .export.file_exporter import FileSpanExporter
    from .export.recording_processor import RecordingSpanProcessor
    from .export.semconv import GenAISemconvExporter
    from .otlp.errors import FormatError
    from .redaction import configure_redaction, install_redactor, redactor_from_settings
    from .replay.agent_call import call_agent
    from .replay.divergence import ReplayDivergence, ReplayError, ReplayRefused
    from .replay.network import NetworkBlocked
    from .replay.options import ReplayOptions
    from .replay.pinned_model import PinnedModel
    from .replay.session import ReplayReport, ReplaySession, replay
    from .runs.load import LoadWarning, Runs, load
    from .runs.model import Run, Step
    from .runs.stream import iter_runs
    from .trusted_types import RecordedBaseException, register_type


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if not name.isidentifier():  # one name of the package's own, never a dotted path
            raise AttributeError(f"module 'otel_replay' has no attribute {name!r}")
        try:  # a subpackage (otel_replay.runs, ...) reached as an attribute
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError:
            raise AttributeError(f"module 'otel_replay' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])
