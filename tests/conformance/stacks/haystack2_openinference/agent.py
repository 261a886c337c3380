"""A Haystack Agent traced by OpenInference's Haystack instrumentation, exported over OTLP/HTTP.

Tracing as OpenInference documents it: a TracerProvider with the SDK's
OTLP/HTTP exporter in a BatchSpanProcessor (endpoint from
``OTEL_EXPORTER_OTLP_ENDPOINT``), ``HaystackInstrumentor().instrument()``
once Haystack's components are imported (it wraps the components registered
then); the provider is shut down (flushed) at exit.
"""

from haystack_agent import main
from openinference.instrumentation.haystack import HaystackInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
HaystackInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush=tracer_provider.shutdown)
