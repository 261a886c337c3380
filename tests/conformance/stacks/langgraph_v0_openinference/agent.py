"""LangGraph agent (0.x, the previous major) traced by OpenInference's LangChain instrumentation, exported over OTLP/HTTP.

Tracing as OpenInference documents it: a TracerProvider with the SDK's
OTLP/HTTP exporter in a BatchSpanProcessor (endpoint from
``OTEL_EXPORTER_OTLP_ENDPOINT``), ``LangChainInstrumentor().instrument()``;
the provider is shut down (flushed) at exit.
"""

from langgraph_agent import main
from openinference.instrumentation.langchain import LangChainInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
LangChainInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush=tracer_provider.shutdown)
