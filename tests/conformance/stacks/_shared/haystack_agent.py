"""The conformance agent as a Haystack ``Agent`` with ``OpenAIChatGenerator`` and function tools.

Written as Haystack's Agent documentation shows it: the three tools made from
plain functions with ``create_tool_from_function``, an ``Agent`` with the chat
generator (``OpenAIResponsesChatGenerator`` for ``--api responses``), the
system prompt, and ``run(messages=[ChatMessage.from_user(...)])``
(``run_async`` under asyncio; a ``streaming_callback`` for the streamed
modes).  A tool that raises is reported to the model as an error result
(``raise_on_tool_invocation_failure=False``, the default).  Each stack's
``agent.py`` sets up its tracing and calls :func:`main`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import scenario
from haystack.components.agents import Agent
from haystack.components.generators.chat import (
    OpenAIChatGenerator,
    OpenAIResponsesChatGenerator,
)
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack.tools import create_tool_from_function
from haystack.utils import Secret


def _tools() -> list[Any]:
    return [
        create_tool_from_function(function, name=name, description=scenario.TOOL_DESCRIPTIONS[name])
        for name, function in scenario.TOOLS.items()
    ]


def _ignore(chunk: StreamingChunk) -> None:
    """A streaming callback: the answer is read from the result, the chunks only stream."""


async def _aignore(chunk: StreamingChunk) -> None:
    """The async streaming callback ``run_async`` takes."""


def make_agent(args: Any) -> Agent:
    generator_class = (
        OpenAIResponsesChatGenerator if args.api == "responses" else OpenAIChatGenerator
    )
    generator = generator_class(
        api_key=Secret.from_token("sk-conformance-dummy"),
        model="gpt-4o-mini",
        api_base_url=args.base_url,
        generation_kwargs={
            "temperature": 0,
            "max_tokens" if args.api == "chat" else "max_output_tokens": 1024,
        },
    )
    return Agent(
        chat_generator=generator,
        tools=_tools(),
        system_prompt=scenario.SYSTEM_PROMPT,
        max_agent_steps=6,
    )


def ask(args: Any, question: str, stream: bool) -> str:
    agent = make_agent(args)
    result = agent.run(
        messages=[ChatMessage.from_user(question)],
        streaming_callback=_ignore if stream else None,
    )
    return str(result["last_message"].text)


async def aask(args: Any, question: str, stream: bool) -> str:
    agent = make_agent(args)
    result = await agent.run_async(
        messages=[ChatMessage.from_user(question)],
        streaming_callback=_aignore if stream else None,
    )
    return str(result["last_message"].text)


def main(flush: Callable[[], Any]) -> None:
    """Run the agent as the command line says, print each answer, then ``flush`` the telemetry."""
    scenario.print_answers(__doc__, ask, aask)
    flush()
