"""The crew every CrewAI stack runs, as CrewAI's documentation shows it (1.x and 0.x alike).

The three tools as ``@tool`` functions, an ``Agent`` (the scenario's system
prompt as its backstory) on ``LLM(model="openai/gpt-4o-mini", base_url=...)``,
a ``Task`` whose description is the question; :func:`crew` puts them in a
``Crew``.
"""

from __future__ import annotations

from typing import Any

import scenario
from crewai import LLM, Agent, Crew, Task
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


def crew(base_url: str, question: str, llm: dict[str, Any], **options: Any) -> Crew:
    """A crew of one support agent on the model server at ``base_url`` whose task is
    ``question`` (``llm``: more options of the LLM; ``options``: the Crew's)."""
    model = LLM(
        model="openai/gpt-4o-mini",
        base_url=base_url,
        api_key="sk-conformance-dummy",
        **llm,
    )
    agent = Agent(
        role="Support agent",
        goal="Answer the customer about their order",
        backstory=scenario.SYSTEM_PROMPT,
        tools=[lookup_order, track_shipment, open_ticket],
        llm=model,
        max_iter=6,
        verbose=False,
    )
    task = Task(description=question, expected_output="The answer to the customer", agent=agent)
    return Crew(agents=[agent], tasks=[task], verbose=False, **options)
