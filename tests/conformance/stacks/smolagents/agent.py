"""A smolagents ``ToolCallingAgent`` traced by OpenInference's smolagents instrumentation, over OTLP/HTTP.

The agent as smolagents' documentation shows it: the three tools as
``@tool`` functions, ``OpenAIServerModel`` pointed at the model server,
``ToolCallingAgent(tools=..., model=...)`` and ``agent.run(question)``; with
``stream_outputs=True`` the model is called with streamed responses.  The
model calls tools natively (parallel calls run in threads) and ends by
calling smolagents' own ``final_answer`` tool; what the tools returned goes
back to the model as text in the conversation ("Calling tools: ...",
"Observation: ..."), a tool's exception as "Error: ...".  With
``CONFORMANCE_SMOLAGENTS_AGENT=code`` the agent is a ``CodeAgent``: the model
writes Python that calls the tools as functions (smolagents runs it in its
own interpreter) and ends with ``final_answer(...)``; what the code printed,
or its error, goes back as text.  smolagents has no asyncio API.  Tracing as OpenInference documents it: a TracerProvider with
the SDK's OTLP/HTTP exporter in a BatchSpanProcessor,
``SmolagentsInstrumentor().instrument(tracer_provider=...)``; the provider is
shut down (flushed) at exit.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from typing import Any

import scenario
from openinference.instrumentation.smolagents import SmolagentsInstrumentor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from smolagents import CodeAgent, OpenAIServerModel, ToolCallingAgent, tool

tracer_provider = TracerProvider()
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
SmolagentsInstrumentor().instrument(tracer_provider=tracer_provider)


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.lookup_order(order_id)


@tool
def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.track_shipment(order_id)


@tool
def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order.

    Args:
        order_id: Order id, e.g. ORD-1234
        reason: Why the ticket is opened
    """
    return scenario.open_ticket(order_id, reason)


def ask(args: argparse.Namespace, question: str, stream: bool) -> str:
    model = OpenAIServerModel(
        model_id="gpt-4o-mini", api_base=args.base_url, api_key="sk-conformance-dummy"
    )
    kind = (
        CodeAgent if os.environ.get("CONFORMANCE_SMOLAGENTS_AGENT") == "code" else ToolCallingAgent
    )
    agent = kind(
        tools=[lookup_order, track_shipment, open_ticket],
        model=model,
        instructions=scenario.SYSTEM_PROMPT,
        stream_outputs=stream,
        max_steps=6,
    )
    # Its log and live display write to stdout, where the answers go.
    with contextlib.redirect_stdout(sys.stderr):
        return str(agent.run(question))


async def aask(args: argparse.Namespace, question: str, stream: bool) -> str:
    raise SystemExit("smolagents has no asyncio API")


if __name__ == "__main__":
    try:
        scenario.print_answers(__doc__, ask, aask)
    finally:
        tracer_provider.shutdown()
