"""The hand-written Anthropic loop (``_shared/client_loop.py``) under OpenLLMetry's Anthropic instrumentation.

``AnthropicInstrumentor().instrument(...)`` as OpenLLMetry documents it (content
as span attributes; ``CONFORMANCE_OPENLLMETRY_EVENTS`` set: ``use_attributes=False``,
content as log records); ``TRACELOOP_TRACE_CONTENT=false`` leaves content out.
"""

import os

from client_loop import main
from opentelemetry.instrumentation.anthropic import AnthropicInstrumentor
from otlp_setup import flush, logger_provider, tracer_provider

events = bool(os.environ.get("CONFORMANCE_OPENLLMETRY_EVENTS"))
AnthropicInstrumentor(use_attributes=not events).instrument(
    tracer_provider=tracer_provider, logger_provider=logger_provider
)

if __name__ == "__main__":
    main(flush)
