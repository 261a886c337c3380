"""The hand-written Anthropic loop (``_shared/client_loop.py``) under OpenLLMetry's Anthropic instrumentation.

``AnthropicInstrumentor().instrument(...)`` as OpenLLMetry documents it;
``TRACELOOP_TRACE_CONTENT=false`` leaves content out.
"""

from client_loop import main
from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
from otlp_setup import flush, logger_provider, tracer_provider

AnthropicInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)

if __name__ == "__main__":
    main(flush)
