"""The openai-agents agent (``_shared/openai_agents_agent.py``) bridged by the OpenTelemetry contrib instrumentation.

``OpenAIAgentsInstrumentor().instrument(tracer_provider=...)`` from
``opentelemetry-instrumentation-openai-agents-v2`` (GenAI conventions); it
adds its processor beside the SDK's default one, which would upload traces,
so the default processors are dropped first (``set_trace_processors([])``).
"""

from agents import set_trace_processors
from openai_agents_agent import main
from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from otlp_setup import flush, tracer_provider

set_trace_processors([])
OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush)
