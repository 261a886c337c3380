"""The hand-written Anthropic loop (``_shared/client_loop.py``) under OpenInference's Anthropic instrumentation.

``AnthropicInstrumentor().instrument(tracer_provider=...)``; the SDK's own
tracing is left as it is by default (``ANTHROPIC_OPEN_TELEMETRY`` unset).
"""

from client_loop import main
from openinference.instrumentation.anthropic import AnthropicInstrumentor
from otlp_setup import flush, tracer_provider

AnthropicInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush)
