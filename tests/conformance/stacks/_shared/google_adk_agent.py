"""The Google ADK agent every ADK stack runs: an ``LlmAgent`` with ADK's built-in tracing, over OTLP/HTTP.

Set up as ADK's observability guide shows it: ``maybe_set_otel_providers()``
adds OTLP exporters for traces and logs from ``OTEL_EXPORTER_OTLP_ENDPOINT``;
message content follows ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``
(and ADK's ``ADK_CAPTURE_MESSAGE_CONTENT_IN_SPANS``), with
``OTEL_SEMCONV_STABILITY_OPT_IN=gen_ai_latest_experimental`` for the current
GenAI conventions.  The agent: ``LlmAgent`` on ADK's ``LiteLlm`` model
pointed at the model server (OpenAI-compatible), the three tools as plain
functions, an ``on_tool_error_callback`` that hands a raising tool's error
back to the model (ADK's documented way), run with ``InMemoryRunner``:
``runner.run`` (``run_async`` under asyncio, SSE streaming for the streamed
modes).
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

import scenario
from google.adk.agents import LlmAgent
from google.adk.agents.run_config import RunConfig, StreamingMode
from google.adk.models.lite_llm import LiteLlm
from google.adk.runners import InMemoryRunner
from google.adk.telemetry.setup import maybe_set_otel_providers
from google.genai import types

maybe_set_otel_providers()


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.lookup_order(order_id)


def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.track_shipment(order_id)


def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order.

    Args:
        order_id: Order id, e.g. ORD-1234
        reason: Why the ticket is opened
    """
    return scenario.open_ticket(order_id, reason)


def tool_error(
    tool: Any, args: dict[str, Any], tool_context: Any, error: Exception
) -> dict[str, Any]:
    """The raising tool's error, as the tool's response to the model."""
    return {"error": str(error)}


def make_runner(args: Any) -> InMemoryRunner:
    model = LiteLlm(
        model="openai/gpt-4o-mini",
        api_base=args.base_url,
        api_key="sk-conformance-dummy",
        temperature=0,
        max_tokens=1024,
    )
    agent = LlmAgent(
        name="support",
        model=model,
        instruction=scenario.SYSTEM_PROMPT,
        tools=[lookup_order, track_shipment, open_ticket],
        on_tool_error_callback=tool_error,
    )
    return InMemoryRunner(agent=agent, app_name="conformance")


def _config(stream: bool) -> RunConfig:
    return RunConfig(streaming_mode=StreamingMode.SSE if stream else StreamingMode.NONE)


def _answer(events: list[Any]) -> str:
    finals = [e for e in events if e.is_final_response() and e.content and e.content.parts]
    return "".join(p.text or "" for p in finals[-1].content.parts).strip()


def ask(args: Any, question: str, stream: bool) -> str:
    runner = make_runner(args)
    session = asyncio.run(
        runner.session_service.create_session(app_name="conformance", user_id="customer")
    )
    message = types.Content(role="user", parts=[types.Part(text=question)])
    events = list(
        runner.run(
            user_id="customer",
            session_id=session.id,
            new_message=message,
            run_config=_config(stream),
        )
    )
    return _answer(events)


async def aask(args: Any, question: str, stream: bool) -> str:
    runner = make_runner(args)
    session = await runner.session_service.create_session(
        app_name="conformance", user_id="customer", session_id=str(uuid.uuid4())
    )
    message = types.Content(role="user", parts=[types.Part(text=question)])
    events = [
        e
        async for e in runner.run_async(
            user_id="customer",
            session_id=session.id,
            new_message=message,
            run_config=_config(stream),
        )
    ]
    return _answer(events)


def main(description: str | None) -> None:
    """The agent's command line (``description``: the stack's), its answers, its traces flushed."""
    # LiteLLM prints its own help to stdout when a call fails: the answers get it alone.
    answers, sys.stdout = sys.stdout, sys.stderr
    try:
        scenario.print_answers(description, ask, aask, out=answers)
    finally:
        sys.stdout = answers
    from opentelemetry import _logs, trace

    trace.get_tracer_provider().shutdown()  # type: ignore[attr-defined]
    _logs.get_logger_provider().shutdown()  # type: ignore[attr-defined]
