"""pydantic-ai: ``FunctionToolset.call_tool``, the one place its function tools run.

Its own instrumentation opens an ``execute_tool`` span around the call; that
span is enriched (one span per call, pydantic-ai's attributes kept).  Without
it, an ``execute_tool`` span of ours is opened.  A tool's ``ModelRetry`` is
recorded by pydantic-ai as its ``ToolRetryError``: replayed, ``call_tool``
raises the ``ModelRetry`` again.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call

MODULE = "pydantic_ai.toolsets.function"


def install(patches: Patches) -> None:
    # optional: the framework's own package
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
                replayed_error=_as_raised,
            )

        return call_tool

    patches.replace(
        FunctionToolset, "call_tool", make, expect=("self", "name", "tool_args", "ctx", "tool")
    )


#: What pydantic-ai 1.0 appends to a retry's message when it tells the model.
_RETRY_SUFFIX = "\n\nFix the errors and try again."


def _as_raised(error: BaseException) -> BaseException:
    """The exception the tool raised for the one pydantic-ai recorded.

    pydantic-ai turns a tool's ``ModelRetry`` into its ``ToolRetryError`` outside
    ``call_tool``, and records that: ``call_tool`` raises the ``ModelRetry``.
    """
    if type(error).__name__ != "ToolRetryError":
        return error
    # optional: the framework's own package
    from pydantic_ai import ModelRetry

    # Rebuilt from the recorded message: as its argument, or (a class whose __init__
    # took it for a RetryPromptPart) as ``tool_retry``.
    shown = error.args[0] if error.args else getattr(error, "tool_retry", None)
    message = shown if isinstance(shown, str) else str(error)
    return ModelRetry(message.removesuffix(_RETRY_SUFFIX))


def agent_spans() -> None:
    """Turn pydantic-ai's own instrumentation on for every agent that does not set it."""
    # optional: the framework's own package
    from pydantic_ai import Agent

    Agent.instrument_all()
