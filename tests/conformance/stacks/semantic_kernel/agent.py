"""A Semantic Kernel ``ChatCompletionAgent`` with its built-in OpenTelemetry diagnostics.

Set up as Semantic Kernel's telemetry guide shows it: a TracerProvider and a
LoggerProvider with the SDK's OTLP/HTTP exporters (endpoint from
``OTEL_EXPORTER_OTLP_ENDPOINT``), a ``LoggingHandler`` on the
``semantic_kernel`` loggers (message content is sent as log records), and
``SEMANTICKERNEL_EXPERIMENTAL_GENAI_ENABLE_OTEL_DIAGNOSTICS[_SENSITIVE]``
in the environment.  The agent: ``OpenAIChatCompletion`` on an
``AsyncOpenAI`` client pointed at the model server, the three tools as
``@kernel_function`` methods of a plugin, automatic function calling (a
tool's exception goes back to the model as the error text), and
``get_response`` (``invoke_stream`` for the streamed modes); with
``--api responses`` an ``OpenAIResponsesAgent`` on the same client (the
Responses API, nothing stored on the server) instead.  Semantic
Kernel's agents are asyncio-only.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Annotated, Any

import scenario
from openai import AsyncOpenAI
from opentelemetry import trace
from opentelemetry._logs import set_logger_provider
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from semantic_kernel.agents import ChatCompletionAgent, OpenAIResponsesAgent
from semantic_kernel.connectors.ai.open_ai import OpenAIChatCompletion
from semantic_kernel.functions import kernel_function

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
trace.set_tracer_provider(tracer_provider)
logger_provider = LoggerProvider()
logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
set_logger_provider(logger_provider)
handler = LoggingHandler(logger_provider=logger_provider)
handler.addFilter(logging.Filter("semantic_kernel"))
logging.getLogger().addHandler(handler)
logging.getLogger().setLevel(logging.INFO)


class OrderPlugin:
    """The scenario's three tools as kernel functions."""

    @kernel_function(name="lookup_order", description=scenario.TOOL_DESCRIPTIONS["lookup_order"])
    def lookup_order(self, order_id: Annotated[str, "Order id, e.g. ORD-1234"]) -> str:
        return json.dumps(scenario.lookup_order(order_id), ensure_ascii=False)

    @kernel_function(
        name="track_shipment", description=scenario.TOOL_DESCRIPTIONS["track_shipment"]
    )
    def track_shipment(self, order_id: Annotated[str, "Order id, e.g. ORD-1234"]) -> str:
        return json.dumps(scenario.track_shipment(order_id), ensure_ascii=False)

    @kernel_function(name="open_ticket", description=scenario.TOOL_DESCRIPTIONS["open_ticket"])
    def open_ticket(
        self,
        order_id: Annotated[str, "Order id, e.g. ORD-1234"],
        reason: Annotated[str, "Why the ticket is opened"],
    ) -> str:
        return json.dumps(scenario.open_ticket(order_id, reason), ensure_ascii=False)


def make_agent(args: Any) -> ChatCompletionAgent | OpenAIResponsesAgent:
    client = AsyncOpenAI(api_key="sk-conformance-dummy", base_url=args.base_url)
    if args.api == "responses":
        return OpenAIResponsesAgent(
            ai_model_id="gpt-4o-mini",
            client=client,
            name="support",
            instructions=scenario.SYSTEM_PROMPT,
            plugins=[OrderPlugin()],
            store_enabled=False,
        )
    service = OpenAIChatCompletion(ai_model_id="gpt-4o-mini", async_client=client)
    return ChatCompletionAgent(
        service=service,
        name="support",
        instructions=scenario.SYSTEM_PROMPT,
        plugins=[OrderPlugin()],
    )


async def aask(args: Any, question: str, stream: bool) -> str:
    agent = make_agent(args)
    if stream:
        chunks = [str(chunk.content) async for chunk in agent.invoke_stream(messages=question)]
        return "".join(chunks)
    response = await agent.get_response(messages=question)
    return str(response.content)


def main() -> None:
    args = scenario.agent_arguments(__doc__)
    questions = scenario.QUESTIONS[: args.runs]
    answers = asyncio.run(
        scenario.answer_all(
            lambda q: scenario.or_raised(aask(args, q, args.mode == "async_stream")),
            questions,
            args.concurrent,
        )
    )
    for answer in answers:
        print(answer)
    tracer_provider.shutdown()
    logger_provider.shutdown()


if __name__ == "__main__":
    main()
