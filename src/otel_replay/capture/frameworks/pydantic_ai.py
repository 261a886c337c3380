"""pydantic-ai: ``FunctionToolset.call_tool``, the one place its function tools run.

Its own instrumentation opens an ``execute_tool`` span around the call; that
span is enriched (one span per call, pydantic-ai's attributes kept).  Without
it, an ``execute_tool`` span of ours is opened.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call

MODULE = "pydantic_ai"


def install(patches: Patches) -> None:
    from pydantic_ai.toolsets.function import FunctionToolset

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def call_tool(
            self: Any, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any
        ) -> Any:
            tool_def = getattr(tool, "tool_def", None)
            return await record_tool_call(
                name,
                tool_args,
                lambda: original(self, name, tool_args, ctx, tool),
                description=getattr(tool_def, "description", None),
            )

        return call_tool

    patches.replace(
        FunctionToolset, "call_tool", make, expect=("self", "name", "tool_args", "ctx", "tool")
    )


def agent_spans() -> None:
    """Turn pydantic-ai's own instrumentation on for every agent that does not set it."""
    from pydantic_ai import Agent

    Agent.instrument_all()
