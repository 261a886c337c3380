"""The conformance agent on LangGraph: LangChain's ``create_agent`` with ChatOpenAI and three tools.

Written as LangChain's documentation shows it (``create_agent``, the current
form of LangGraph's prebuilt ReAct agent): ``@tool`` functions, a
``wrap_tool_call`` middleware that turns a tool's exception into an error
``ToolMessage`` for the model, ``invoke``/``ainvoke`` or, streamed,
``stream``/``astream`` with ``stream_mode="messages"``.  On LangGraph 0.x
(the previous major, no ``create_agent``) it is ``create_react_agent`` from
``langgraph.prebuilt``, whose tool node answers a raising tool with an error
``ToolMessage`` itself.  When the scenario has the framework run a raising tool again
(``scenario.ACTIVE.tool_retry``, in the stacks that opt in), LangChain's
``ToolRetryMiddleware`` does it, inside ``ToolErrors`` with ``on_failure="error"`` (as
LangChain's documentation composes them): the error of a call whose every attempt failed
goes on to ``ToolErrors``.  Each stack's
``agent.py`` sets up its tracing and calls :func:`main`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import scenario

try:
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware, ToolRetryMiddleware
except ImportError:  # LangGraph 0.x, the previous major: its prebuilt ReAct agent
    create_agent = None
    AgentMiddleware = object
    ToolRetryMiddleware = None
from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id: status, items and total."""
    return scenario.lookup_order(order_id)


@tool
def track_shipment(order_id: str) -> dict[str, Any]:
    """Track the shipment of an order with the carrier."""
    return scenario.track_shipment(order_id)


@tool
def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    """Open a support ticket about an order."""
    return scenario.open_ticket(order_id, reason)


class ToolErrors(AgentMiddleware):  # type: ignore[misc]
    """A tool that raises answers the model with the error instead of ending the run."""

    def wrap_tool_call(self, request: Any, handler: Callable[[Any], Any]) -> Any:
        try:
            return handler(request)
        except Exception as e:
            return self._error(request, e)

    async def awrap_tool_call(self, request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        try:
            return await handler(request)
        except Exception as e:
            return self._error(request, e)

    @staticmethod
    def _error(request: Any, e: Exception) -> ToolMessage:
        return ToolMessage(
            content=f"Error: {e}", tool_call_id=request.tool_call["id"], status="error"
        )


def build_agent(base_url: str, api: str) -> Any:
    model = ChatOpenAI(
        model="gpt-4o-mini",
        base_url=base_url,
        api_key="sk-conformance-dummy",
        temperature=0,
        use_responses_api=api == "responses",
    )
    if create_agent is None:
        from langgraph.prebuilt import create_react_agent

        return create_react_agent(
            model,
            tools=[lookup_order, track_shipment, open_ticket],
            prompt=scenario.SYSTEM_PROMPT,
        )
    middleware: list[Any] = [ToolErrors()]
    again = scenario.ACTIVE.tool_retry
    if again is not None:
        # At once (no backoff, no jitter): the retries are the scenario's, not the clock's.
        middleware.append(
            ToolRetryMiddleware(
                max_retries=again.retries,
                on_failure="error",
                initial_delay=0.0,
                backoff_factor=0.0,
                jitter=False,
            )
        )
    return create_agent(
        model,
        tools=[lookup_order, track_shipment, open_ticket],
        system_prompt=scenario.SYSTEM_PROMPT,
        middleware=middleware,
    )


def _text(message: BaseMessage) -> str:
    """A message's text (``.text`` is a method on langchain-core 0.x, a property on 1.x)."""
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if isinstance(b, dict))


def _inputs(question: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": question}]}


def ask(agent: Any, question: str, stream: bool) -> str:
    if not stream:
        return _text(agent.invoke(_inputs(question))["messages"][-1])
    state: dict[str, Any] = {}
    for kind, data in agent.stream(_inputs(question), stream_mode=["messages", "values"]):
        if kind == "values":
            state = data
    return _text(state["messages"][-1])


async def aask(agent: Any, question: str, stream: bool) -> str:
    if not stream:
        return _text((await agent.ainvoke(_inputs(question)))["messages"][-1])
    state: dict[str, Any] = {}
    async for kind, data in agent.astream(_inputs(question), stream_mode=["messages", "values"]):
        if kind == "values":
            state = data
    return _text(state["messages"][-1])


def main(flush: Callable[[], Any]) -> None:
    """Run the agent as the command line says, print each answer, then ``flush`` the telemetry."""
    args = scenario.agent_arguments(__doc__)
    agent = build_agent(args.base_url, args.api)
    questions = scenario.QUESTIONS[: args.runs]
    stream = args.mode in ("stream", "async_stream")
    if args.mode in ("sync", "stream"):
        answers = [scenario.said(lambda q=q: ask(agent, q, stream)) for q in questions]
    else:
        answers = asyncio.run(_run_async(agent, questions, stream, args.concurrent))
    for answer in answers:
        print(answer)
    flush()


async def _run_async(
    agent: Any, questions: tuple[str, ...], stream: bool, concurrent: bool
) -> list[str]:
    if concurrent:
        return list(
            await asyncio.gather(*(scenario.or_raised(aask(agent, q, stream)) for q in questions))
        )
    return [await scenario.or_raised(aask(agent, q, stream)) for q in questions]
