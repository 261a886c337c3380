"""The hand-written OpenAI loop (``_shared/client_loop.py``) under OpenLLMetry's OpenAI instrumentation.

``OpenAIInstrumentor().instrument()`` as OpenLLMetry documents it (content as
span attributes; ``CONFORMANCE_OPENLLMETRY_EVENTS`` set: ``use_attributes=False``,
content as log records); ``TRACELOOP_TRACE_CONTENT=false`` leaves content out.
"""

import os

from client_loop import main
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from otlp_setup import flush, logger_provider, tracer_provider

events = bool(os.environ.get("CONFORMANCE_OPENLLMETRY_EVENTS"))
OpenAIInstrumentor(use_attributes=not events).instrument(
    tracer_provider=tracer_provider, logger_provider=logger_provider
)

if __name__ == "__main__":
    main(flush)
