"""The openai-agents agent (``_shared/openai_agents_agent.py``) bridged by OpenInference.

``OpenAIAgentsInstrumentor().instrument(tracer_provider=...)`` from
``openinference-instrumentation-openai-agents``: its processor replaces the
SDK's default one (nothing is uploaded), the SDK's agent, generation and
function spans become OpenInference spans.
"""

from openai_agents_agent import main
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from otlp_setup import flush, tracer_provider

OpenAIAgentsInstrumentor().instrument(tracer_provider=tracer_provider)

if __name__ == "__main__":
    main(flush)
