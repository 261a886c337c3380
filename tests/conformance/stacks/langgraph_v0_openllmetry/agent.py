"""LangGraph agent (0.x, the previous major) traced by OpenLLMetry's LangChain instrumentation, exported over OTLP/HTTP.

Tracing as the instrumentation's README shows it: a TracerProvider with the
SDK's OTLP/HTTP exporter in a BatchSpanProcessor (endpoint from
``OTEL_EXPORTER_OTLP_ENDPOINT``), ``LangchainInstrumentor().instrument()``;
the provider is shut down (flushed) at exit.  ``TRACELOOP_TRACE_CONTENT=false``
turns content capture off.
"""

from langgraph_agent import main
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.langchain import LangchainInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
LangchainInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush=tracer_provider.shutdown)
