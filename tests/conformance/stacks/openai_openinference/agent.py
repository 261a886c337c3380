"""The hand-written OpenAI loop (``_shared/client_loop.py``) under OpenInference's OpenAI instrumentation.

``OpenAIInstrumentor().instrument(tracer_provider=...)`` as OpenInference
documents it; ``OPENINFERENCE_HIDE_INPUTS`` / ``OPENINFERENCE_HIDE_OUTPUTS``
leave content out.
"""

from client_loop import main
from openinference.instrumentation.openai import OpenAIInstrumentor
from otlp_setup import flush, tracer_provider

OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush)
