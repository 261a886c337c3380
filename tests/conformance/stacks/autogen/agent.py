"""An AutoGen AgentChat ``AssistantAgent`` with AutoGen's built-in tracing, exported over OTLP/HTTP.

Set up as AutoGen's tracing guide shows it: a global ``TracerProvider`` with
an OTLP exporter (AgentChat's ``create_agent`` / ``invoke_agent`` spans and
autogen-core's ``execute_tool`` spans go to it), and the OpenAI client
instrumented by OpenLLMetry's ``OpenAIInstrumentor`` (AutoGen traces no
model call itself; ``TRACELOOP_TRACE_CONTENT=false`` leaves content out).
The agent: ``OpenAIChatCompletionClient`` pointed at the model server, the
three tools as plain functions (a tool's exception goes back to the model as
an error result), ``max_tool_iterations`` so it calls tools until it
answers; ``agent.run`` (``run_stream`` with a streaming client for the
streamed mode).  AgentChat is asyncio only.
"""

from __future__ import annotations

from typing import Any

import scenario
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import TextMessage
from autogen_ext.models.openai import OpenAIChatCompletionClient
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

provider = TracerProvider(resource=Resource.create({"service.name": "autogen-support"}))
provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(provider)
OpenAIInstrumentor().instrument()


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total."""
    return scenario.lookup_order(order_id)


def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier."""
    return scenario.track_shipment(order_id)


def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order."""
    return scenario.open_ticket(order_id, reason)


def make_agent(args: Any, stream: bool) -> AssistantAgent:
    client = OpenAIChatCompletionClient(
        model="gpt-4o-mini",
        base_url=args.base_url,
        api_key="sk-conformance-dummy",
        temperature=0,
        max_tokens=1024,
    )
    return AssistantAgent(
        name="support",
        model_client=client,
        tools=[lookup_order, track_shipment, open_ticket],
        system_message=scenario.SYSTEM_PROMPT,
        max_tool_iterations=5,
        model_client_stream=stream,
    )


def _answer(result: TaskResult) -> str:
    last = result.messages[-1]
    assert isinstance(last, TextMessage), last
    return last.content.strip()


def ask(args: Any, question: str, stream: bool) -> str:
    raise SystemExit("AgentChat is asyncio only")


async def aask(args: Any, question: str, stream: bool) -> str:
    agent = make_agent(args, stream)
    if not stream:
        return _answer(await agent.run(task=question))
    result = None
    async for item in agent.run_stream(task=question):
        if isinstance(item, TaskResult):
            result = item
    assert result is not None
    return _answer(result)


def main() -> None:
    scenario.print_answers(__doc__, ask, aask)
    provider.shutdown()


if __name__ == "__main__":
    main()
