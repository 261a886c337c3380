"""A CrewAI crew of one agent, traced by OpenInference's CrewAI and OpenAI instrumentations.

The crew as CrewAI's documentation shows it: the three tools as ``@tool``
functions, an ``Agent`` (the scenario's system prompt as its backstory) on
``LLM(model="openai/gpt-4o-mini", base_url=...)`` (CrewAI's own OpenAI
provider, on the OpenAI SDK; ``api="responses"`` for the Responses API), a
``Task`` whose description is the question, ``Crew(...).kickoff()``
(``akickoff`` under asyncio; with ``stream=True`` the crew streams and its
chunks are read before the result).  The model calls the tools natively; a
tool's exception goes back to the model as an error result.

Tracing as OpenInference documents it: a TracerProvider with the SDK's
OTLP/HTTP exporter in a BatchSpanProcessor, ``CrewAIInstrumentor`` for the
crew, task, agent and tool spans and ``OpenAIInstrumentor`` for the model
calls; with ``CONFORMANCE_CREWAI_EVENTS=1`` the CrewAI instrumentor runs in
its event-listener mode instead, and makes the model spans itself from
CrewAI's events.  CrewAI's own telemetry is off.
"""

from __future__ import annotations

import argparse
import os

import crewai_crew
import scenario
from crewai import Crew
from openinference.instrumentation.crewai import CrewAIInstrumentor
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
if os.environ.get("CONFORMANCE_CREWAI_EVENTS") == "1":
    CrewAIInstrumentor().instrument(tracer_provider=tracer_provider, use_event_listener=True)
else:
    CrewAIInstrumentor().instrument(tracer_provider=tracer_provider)
    OpenAIInstrumentor().instrument(tracer_provider=tracer_provider)


def build_crew(args: argparse.Namespace, question: str, stream: bool) -> Crew:
    api = "responses" if args.api == "responses" else "completions"
    return crewai_crew.crew(
        args.base_url, question, llm={"api": api, "stream": stream}, stream=stream
    )


def ask(args: argparse.Namespace, question: str, stream: bool) -> str:
    crew = build_crew(args, question, stream)
    output = crew.kickoff()
    if stream:
        for _ in output:
            pass
        output = output.result
    return str(output.raw)


async def aask(args: argparse.Namespace, question: str, stream: bool) -> str:
    crew = build_crew(args, question, stream)
    output = await crew.akickoff()
    if stream:
        async for _ in output:
            pass
        output = output.result
    return str(output.raw)


if __name__ == "__main__":
    try:
        scenario.print_answers(__doc__, ask, aask)
    finally:
        tracer_provider.shutdown()
