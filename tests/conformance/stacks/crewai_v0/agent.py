"""A CrewAI 0.x crew of one agent, traced by OpenInference's CrewAI and LiteLLM instrumentations.

CrewAI's last 0.x release works the ReAct way: the tools are described in
the system prompt, the model answers in text (``Thought:``, ``Action:``,
``Action Input:``, or ``Final Answer:``), one action at a time, and each
result goes back as ``Observation:`` text appended to the model's answer; a
tool's exception is such an observation too.  The model is called through
LiteLLM (``LLM(model="openai/gpt-4o-mini", base_url=...)``).  The crew as
CrewAI's documentation shows it: the three tools as ``@tool`` functions, an
``Agent`` (the scenario's system prompt as its backstory), a ``Task`` whose
description is the question, ``Crew(...).kickoff()`` (``kickoff_async``
under asyncio; ``stream=True`` on the LLM for streamed answers).

Tracing as OpenInference documents it: a TracerProvider with the SDK's
OTLP/HTTP exporter in a BatchSpanProcessor, ``CrewAIInstrumentor`` and
``LiteLLMInstrumentor``.  CrewAI's own telemetry is off.
"""

from __future__ import annotations

import argparse
import sys

import crewai_crew
import scenario
from crewai import Crew
from openinference.instrumentation.crewai import CrewAIInstrumentor
from openinference.instrumentation.litellm import LiteLLMInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
CrewAIInstrumentor().instrument(tracer_provider=tracer_provider)
LiteLLMInstrumentor().instrument(tracer_provider=tracer_provider)


def build_crew(args: argparse.Namespace, question: str, stream: bool) -> Crew:
    return crewai_crew.crew(args.base_url, question, llm={"stream": stream})


def ask(args: argparse.Namespace, question: str, stream: bool) -> str:
    return str(build_crew(args, question, stream).kickoff().raw)


async def aask(args: argparse.Namespace, question: str, stream: bool) -> str:
    return str((await build_crew(args, question, stream).kickoff_async()).raw)


if __name__ == "__main__":
    # CrewAI prints a streamed answer as it comes, to stdout: the answers get it alone.
    answers, sys.stdout = sys.stdout, sys.stderr
    try:
        scenario.print_answers(__doc__, ask, aask, out=answers)
    finally:
        tracer_provider.shutdown()
