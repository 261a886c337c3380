"""The OpenTelemetry SDK set up as the instrumentations' guides show it, exporting over OTLP/HTTP.

A ``TracerProvider`` and a ``LoggerProvider`` (for instrumentations that send
content as log records, also through the Events API), each with the SDK's OTLP/HTTP exporter in a batch
processor (endpoint from ``OTEL_EXPORTER_OTLP_ENDPOINT``), made the global
ones; :func:`flush` shuts both down at exit.
"""

from __future__ import annotations

from opentelemetry import _logs, trace
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(tracer_provider)
logger_provider = LoggerProvider()
logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
_logs.set_logger_provider(logger_provider)
try:  # the Events API, which instrumentations on the older conventions send content through
    from opentelemetry import _events
    from opentelemetry.sdk._events import EventLoggerProvider

    _events.set_event_logger_provider(EventLoggerProvider(logger_provider))
except ImportError:  # an SDK without it
    pass


def flush() -> None:
    tracer_provider.shutdown()
    logger_provider.shutdown()
