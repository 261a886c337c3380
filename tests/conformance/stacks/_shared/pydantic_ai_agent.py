"""A pydantic-ai ``Agent`` with pydantic-ai's own OpenTelemetry instrumentation, exported over OTLP/HTTP.

(The agent of the ``pydantic_ai`` and ``pydantic_ai_v1`` stacks, whose ``agent.py`` runs it.)

Set up as pydantic-ai's guide shows it without Logfire: the global SDK
providers with OTLP exporters (``otlp_setup``), and ``Agent.instrument_all(InstrumentationSettings(...))``:
the data format ``version`` from ``CONFORMANCE_PYDANTIC_AI_VERSION`` (the
library's default when unset), ``include_content=False`` when
``CONFORMANCE_NO_CONTENT`` is set.  The agent: ``OpenAIChatModel`` (or
``OpenAIResponsesModel``) pointed at the model server, the three tools as
``@agent.tool_plain`` functions; a raising tool's error goes back to the
model as ``ModelRetry`` (pydantic-ai's documented way).  ``run_sync``,
``run`` under asyncio, ``run_stream`` for the streamed modes.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import scenario
from otlp_setup import flush
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.providers.openai import OpenAIProvider

settings: dict[str, Any] = {"include_content": not os.environ.get("CONFORMANCE_NO_CONTENT")}
if os.environ.get("CONFORMANCE_PYDANTIC_AI_VERSION"):
    settings["version"] = int(os.environ["CONFORMANCE_PYDANTIC_AI_VERSION"])
Agent.instrument_all(InstrumentationSettings(**settings))


def _retry_on_error(tool: Callable[..., Any], *args: Any) -> Any:
    """What ``tool`` returns; the error of a tool that raises (whichever the scenario makes
    raise) goes back to the model as ``ModelRetry``."""
    try:
        return tool(*args)
    except scenario.TOOL_ERRORS as e:
        raise ModelRetry(str(e)) from e


def make_agent(args: Any) -> Agent[None, str]:
    provider = OpenAIProvider(base_url=args.base_url, api_key="sk-conformance-dummy")
    if args.api == "responses":
        from pydantic_ai.models.openai import OpenAIResponsesModel

        model: Any = OpenAIResponsesModel("gpt-4o-mini", provider=provider)
    else:
        from pydantic_ai.models.openai import OpenAIChatModel

        model = OpenAIChatModel("gpt-4o-mini", provider=provider)
    agent = Agent(
        model,
        name="support",
        instructions=scenario.SYSTEM_PROMPT,
        model_settings={"temperature": 0, "max_tokens": 1024},
        # A scenario may call the raising tool again (in its turn or a later one): each
        # failure is a retry the model is told of, past pydantic-ai's default of one.
        retries=3,
    )

    @agent.tool_plain
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id: status, items and total."""
        return _retry_on_error(scenario.lookup_order, order_id)

    @agent.tool_plain
    def track_shipment(order_id: str) -> dict[str, Any]:
        """Track the shipment of an order with the carrier."""
        return _retry_on_error(scenario.track_shipment, order_id)

    @agent.tool_plain
    def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
        """Open a support ticket about an order."""
        return _retry_on_error(scenario.open_ticket, order_id, reason)

    return agent


def ask(args: Any, question: str, stream: bool) -> str:
    return str(make_agent(args).run_sync(question).output).strip()


async def aask(args: Any, question: str, stream: bool) -> str:
    agent = make_agent(args)
    if not stream:
        return str((await agent.run(question)).output).strip()
    async with agent.run_stream(question) as result:
        return (await result.get_output()).strip()


def main() -> None:
    scenario.print_answers(__doc__, ask, aask)
    flush()


if __name__ == "__main__":
    main()
