"""A LlamaIndex FunctionAgent traced by OpenInference's LlamaIndex instrumentation, over OTLP/HTTP.

The agent as LlamaIndex's documentation shows it: plain functions as tools
(``FunctionTool``), ``FunctionAgent`` with the ``OpenAI`` LLM (or
``OpenAIResponses`` for the Responses API), ``await agent.run(user_msg=...)``;
with ``streaming`` the LLM is called with streamed responses and the events
are read as they come (``handler.stream_events()``).  A tool that raises is
answered with its error by the agent itself.  The agent runs on asyncio only.
Tracing as OpenInference documents it: a TracerProvider with the SDK's
OTLP/HTTP exporter in a BatchSpanProcessor, ``LlamaIndexInstrumentor().instrument()``;
the provider is shut down (flushed) at exit.
"""

from __future__ import annotations

import asyncio
from typing import Any

import scenario
from llama_index.core.agent.workflow import FunctionAgent
from llama_index.core.tools import FunctionTool
from llama_index.llms.openai import OpenAI, OpenAIResponses
from openinference.instrumentation.llama_index import LlamaIndexInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
LlamaIndexInstrumentor().instrument(tracer_provider=tracer_provider)


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total."""
    return scenario.lookup_order(order_id)


def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier."""
    return scenario.track_shipment(order_id)


def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order."""
    return scenario.open_ticket(order_id, reason)


def build_agent(base_url: str, api: str, stream: bool) -> FunctionAgent:
    llm_class = OpenAIResponses if api == "responses" else OpenAI
    llm = llm_class(
        model="gpt-4o-mini",
        api_base=base_url,
        api_key="sk-conformance-dummy",
        temperature=0,
    )
    tools = [FunctionTool.from_defaults(fn) for fn in (lookup_order, track_shipment, open_ticket)]
    return FunctionAgent(
        tools=tools, llm=llm, system_prompt=scenario.SYSTEM_PROMPT, streaming=stream
    )


async def ask(agent: FunctionAgent, question: str, stream: bool) -> str:
    handler = agent.run(user_msg=question)
    if stream:
        async for _event in handler.stream_events():
            pass
    return str(await handler)


async def run(args: Any) -> list[str]:
    stream = args.mode == "async_stream"
    agent = build_agent(args.base_url, args.api, stream)
    questions = scenario.QUESTIONS[: args.runs]
    return await scenario.answer_all(
        lambda q: scenario.or_raised(ask(agent, q, stream)), questions, args.concurrent
    )


def main() -> None:
    args = scenario.agent_arguments(__doc__)
    for answer in asyncio.run(run(args)):
        print(answer)
    tracer_provider.shutdown()


if __name__ == "__main__":
    main()
