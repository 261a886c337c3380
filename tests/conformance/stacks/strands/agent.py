"""A Strands Agents agent with its built-in OpenTelemetry tracing, exported over OTLP/HTTP.

Set up as the Strands observability guide shows it: ``StrandsTelemetry()
.setup_otlp_exporter()`` (endpoint from ``OTEL_EXPORTER_OTLP_ENDPOINT``); the
semantic-convention flavour comes from ``OTEL_SEMCONV_STABILITY_OPT_IN``
(legacy per-message events by default, ``gen_ai_latest_experimental`` for the
current conventions, ``gen_ai_span_attributes_only`` for content as span
attributes).  The agent: ``OpenAIModel`` pointed at the model server, the
three tools as ``@tool`` functions (a tool's exception goes back to the model
as an error result), ``agent(question)`` (``invoke_async`` under asyncio,
``stream_async`` for the streamed modes).  With ``CONFORMANCE_STRANDS_RETRIES=agent``
a failed model request is retried by Strands itself, not by the OpenAI client
(``max_retries=0``; the agent's ``retry_strategy``: its ``ModelRetryStrategy``
without the wait, which also retries the server's 5xx errors, as its documentation
says to widen it): each failed attempt is a model span of its own, ended with the error.
With ``CONFORMANCE_STRANDS_MODEL=bedrock`` the model is Strands' default provider instead,
``BedrockModel`` (boto3's ``bedrock-runtime`` client pointed at the model server, dummy
credentials): the Converse API, or ConverseStream with ``CONFORMANCE_STRANDS_STREAMING=1``.
"""

from __future__ import annotations

import os
from typing import Any

import boto3
import openai
import scenario
from strands import Agent, ModelRetryStrategy, tool
from strands.models import BedrockModel, Model
from strands.models.openai import OpenAIModel
from strands.telemetry import StrandsTelemetry

telemetry = StrandsTelemetry().setup_otlp_exporter()


@tool(description=scenario.TOOL_DESCRIPTIONS["lookup_order"])
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.lookup_order(order_id)


@tool(description=scenario.TOOL_DESCRIPTIONS["track_shipment"])
def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.track_shipment(order_id)


@tool(description=scenario.TOOL_DESCRIPTIONS["open_ticket"])
def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket.

    Args:
        order_id: Order id, e.g. ORD-1234
        reason: Why the ticket is opened
    """
    return scenario.open_ticket(order_id, reason)


class Retries(ModelRetryStrategy):
    """Strands' retries of a throttled model call, and of a server error too."""

    def is_retryable(self, exception: Exception) -> bool:
        return super().is_retryable(exception) or isinstance(exception, openai.InternalServerError)


def bedrock_model(args: Any) -> Model:
    """Strands' default provider, Bedrock, on the model server (``--base-url``)."""
    session = boto3.Session(
        aws_access_key_id="AKIDCONFORMANCEDUMMY",
        aws_secret_access_key="conformance-dummy-secret",
        region_name="us-east-1",
    )
    return BedrockModel(
        boto_session=session,
        endpoint_url=args.base_url,
        model_id="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        streaming=os.environ.get("CONFORMANCE_STRANDS_STREAMING") == "1",
        temperature=0,
        max_tokens=1024,
    )


def make_agent(args: Any) -> Agent:
    client_args: dict[str, Any] = {"api_key": "sk-conformance-dummy", "base_url": args.base_url}
    options: dict[str, Any] = {}
    if os.environ.get("CONFORMANCE_STRANDS_RETRIES") == "agent":
        client_args["max_retries"] = 0
        options["retry_strategy"] = Retries(initial_delay=0)
    model: Model = OpenAIModel(
        client_args=client_args,
        model_id="gpt-4o-mini",
        params={"temperature": 0, "max_tokens": 1024},
    )
    if os.environ.get("CONFORMANCE_STRANDS_MODEL") == "bedrock":
        model = bedrock_model(args)
    return Agent(
        model=model,
        tools=[lookup_order, track_shipment, open_ticket],
        system_prompt=scenario.SYSTEM_PROMPT,
        callback_handler=None,
        **options,
    )


def ask(args: Any, question: str) -> str:
    return str(make_agent(args)(question)).strip()


async def aask(args: Any, question: str, stream: bool) -> str:
    agent = make_agent(args)
    if not stream:
        return str(await agent.invoke_async(question)).strip()
    result = None
    async for event in agent.stream_async(question):
        if "result" in event:
            result = event["result"]
    return str(result).strip()


def main() -> None:
    scenario.print_answers(__doc__, lambda args, q, _stream: ask(args, q), aask)
    telemetry.tracer_provider.shutdown()


if __name__ == "__main__":
    main()
