"""A LiteLLM tool loop traced by OpenInference's LiteLLM instrumentation, exported over OTLP/HTTP.

Tracing as OpenInference documents it: a TracerProvider with the SDK's
OTLP/HTTP exporter in a BatchSpanProcessor (endpoint from
``OTEL_EXPORTER_OTLP_ENDPOINT``), ``LiteLLMInstrumentor().instrument()``;
the provider is shut down (flushed) at exit.
"""

from litellm_agent import main
from openinference.instrumentation.litellm import LiteLLMInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
LiteLLMInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush=tracer_provider.shutdown)
