"""An OpenAI Agents SDK ``Agent`` (openai-agents) whose own tracing a bridge sends to OpenTelemetry.

(The agent of the ``openai_agents_*`` stacks; each stack's ``agent.py`` sets
its bridge up first.)  ``OpenAIChatCompletionsModel`` or
``OpenAIResponsesModel`` on an ``AsyncOpenAI`` client pointed at the model
server, the three tools as ``@function_tool``s (a raising tool's error goes
back to the model through the SDK's default failure message), run by
``Runner.run_sync``, ``Runner.run`` under asyncio, ``Runner.run_streamed``
for the streamed modes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import scenario
from agents import Agent, ModelSettings, Runner, function_tool
from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel
from agents.models.openai_responses import OpenAIResponsesModel
from openai import AsyncOpenAI


@function_tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.lookup_order(order_id)


@function_tool
def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier.

    Args:
        order_id: Order id, e.g. ORD-1234
    """
    return scenario.track_shipment(order_id)


@function_tool
def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order.

    Args:
        order_id: Order id, e.g. ORD-1234
        reason: Why the ticket is opened
    """
    return scenario.open_ticket(order_id, reason)


def make_agent(args: Any) -> Agent[Any]:
    client = AsyncOpenAI(base_url=args.base_url, api_key="sk-conformance-dummy")
    cls = OpenAIResponsesModel if args.api == "responses" else OpenAIChatCompletionsModel
    return Agent(
        name="support",
        instructions=scenario.SYSTEM_PROMPT,
        model=cls(model="gpt-4o-mini", openai_client=client),
        tools=[lookup_order, track_shipment, open_ticket],
        model_settings=ModelSettings(temperature=0, max_tokens=1024),
    )


def ask(args: Any, question: str, stream: bool) -> str:
    return str(Runner.run_sync(make_agent(args), question).final_output).strip()


async def aask(args: Any, question: str, stream: bool) -> str:
    agent = make_agent(args)
    if not stream:
        return str((await Runner.run(agent, question)).final_output).strip()
    result = Runner.run_streamed(agent, question)
    async for _ in result.stream_events():
        pass
    return str(result.final_output).strip()


def main(flush: Callable[[], Any]) -> None:
    """Run the agent as the command line says, print each answer, then ``flush`` the telemetry."""
    scenario.print_answers(__doc__, ask, aask)
    flush()
