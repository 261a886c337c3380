"""The crew every CrewAI stack runs, as CrewAI's documentation shows it (1.x and 0.x alike).

The three tools as ``@tool`` functions, an ``Agent`` (the scenario's system
prompt as its backstory) on the ``llm`` given, a ``Task`` whose description
is the question; :func:`crew` puts them in a ``Crew``.
"""

from __future__ import annotations

from typing import Any

import scenario
from crewai import Agent, Crew, Task
from crewai.tools import tool


@tool("lookup_order")
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total."""
    return scenario.lookup_order(order_id)


@tool("track_shipment")
def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier."""
    return scenario.track_shipment(order_id)


@tool("open_ticket")
def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order."""
    return scenario.open_ticket(order_id, reason)


def crew(llm: Any, question: str, **options: Any) -> Crew:
    """A crew of one support agent on ``llm`` whose task is ``question`` (``options``: the Crew's)."""
    agent = Agent(
        role="Support agent",
        goal="Answer the customer about their order",
        backstory=scenario.SYSTEM_PROMPT,
        tools=[lookup_order, track_shipment, open_ticket],
        llm=llm,
        max_iter=6,
        verbose=False,
    )
    task = Task(description=question, expected_output="The answer to the customer", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False, **options)
