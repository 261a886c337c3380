"""The hand-written OpenAI loop (``_shared/client_loop.py``) under the OpenTelemetry openai-v2 instrumentation.

``OpenAIInstrumentor().instrument(...)`` from
``opentelemetry-instrumentation-openai-v2``; content per
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` (``SPAN_ONLY``,
``EVENT_ONLY``)
and ``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental``.
"""

from client_loop import main
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
from otlp_setup import flush, logger_provider, tracer_provider

OpenAIInstrumentor().instrument(tracer_provider=tracer_provider, logger_provider=logger_provider)

if __name__ == "__main__":
    main(flush)
