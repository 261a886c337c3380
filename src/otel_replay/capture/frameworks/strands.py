"""Strands Agents: a ``@tool`` function, called by ``DecoratedFunctionTool.stream``.

``stream`` validates the model's input, calls the function (in a thread when
it is synchronous) and turns what it returns, or raises, into Strands' tool
result.  The function itself is recorded and, in a replay, answered: each
tool's function is wrapped the first time the tool runs (tools are made by
the decorator, often before any setup), so that a replayed error becomes the
error result Strands made of it.  The tool-call id is the ``toolUseId``.
Async-generator tools (streaming their progress) are left to run.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any

from ..tool import tool_call_id
from ._patch import Patches
from ._record import record_tool_call, record_tool_call_sync

MODULE = "strands.tools.decorator"


def install(patches: Patches) -> None:
    from strands.tools.decorator import DecoratedFunctionTool

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def stream(self: Any, tool_use: Any, invocation_state: Any, **kwargs: Any) -> Any:
            _wrap_function(patches, self, tool_use)
            with tool_call_id(tool_use.get("toolUseId") if hasattr(tool_use, "get") else None):
                async for event in original(self, tool_use, invocation_state, **kwargs):
                    yield event

        return stream

    patches.replace(
        DecoratedFunctionTool, "stream", make, expect=("self", "tool_use", "invocation_state")
    )


def _wrap_function(patches: Patches, tool: Any, tool_use: Any) -> None:
    """Wrap ``tool``'s function once (the tool object keeps it)."""
    fn = vars(tool).get("_tool_func")
    if fn is None or inspect.isasyncgenfunction(fn):
        return
    name = str(getattr(tool, "tool_name", None) or getattr(fn, "__name__", "tool"))
    description = getattr(fn, "__doc__", None)

    def given(kwargs: dict[str, Any]) -> dict[str, Any]:
        # Strands adds what the function asks for (agent, tool context) to the model's input.
        model_input = tool_use.get("input") if hasattr(tool_use, "get") else None
        keys = set(model_input) if isinstance(model_input, dict) else set(kwargs)
        return {k: v for k, v in kwargs.items() if k in keys}

    def make(original: Any) -> Any:
        if inspect.iscoroutinefunction(original):

            @functools.wraps(original)
            async def call_async(**kwargs: Any) -> Any:
                return await record_tool_call(
                    name,
                    given(kwargs),
                    lambda: original(**kwargs),
                    description=description,
                    function=original,
                )

            return call_async

        @functools.wraps(original)
        def call(**kwargs: Any) -> Any:
            return record_tool_call_sync(
                name,
                given(kwargs),
                lambda: original(**kwargs),
                description=description,
                function=original,
            )

        return call

    patches.replace(tool, "_tool_func", make)
