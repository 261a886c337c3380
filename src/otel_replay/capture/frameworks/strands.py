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

import contextlib
import contextvars
import functools
import inspect
from typing import Any

from ..tool import tool_call_id
from ._patch import Patches
from ._record import recorded_function

MODULE = "strands.tools.decorator"
#: The names of the model's input to the call running (what Strands adds is not the call's).
_model_input: contextvars.ContextVar[set[str] | None] = contextvars.ContextVar(
    "otel_replay_strands_input", default=None
)


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from strands.tools.decorator import DecoratedFunctionTool

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def stream(self: Any, tool_use: Any, invocation_state: Any, **kwargs: Any) -> Any:
            _wrap_function(patches, self)
            model_input = tool_use.get("input") if hasattr(tool_use, "get") else None
            keys = _model_input.set(set(model_input) if isinstance(model_input, dict) else None)
            try:
                with tool_call_id(tool_use.get("toolUseId") if hasattr(tool_use, "get") else None):
                    async for event in original(self, tool_use, invocation_state, **kwargs):
                        yield event
            finally:
                with contextlib.suppress(ValueError):  # resumed in another context
                    _model_input.reset(keys)

        return stream

    patches.replace(
        DecoratedFunctionTool, "stream", make, expect=("self", "tool_use", "invocation_state")
    )


def _wrap_function(patches: Patches, tool: Any) -> None:
    """Wrap ``tool``'s function once (the tool object keeps it)."""
    fn = vars(tool).get("_tool_func")
    if fn is None or inspect.isasyncgenfunction(fn):
        return
    name = str(getattr(tool, "tool_name", None) or getattr(fn, "__name__", "tool"))

    def given(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        # Strands adds what the function asks for (agent, tool context) to the model's input.
        keys = _model_input.get()
        return {k: v for k, v in kwargs.items() if keys is None or k in keys}

    patches.replace(
        tool, "_tool_func", lambda original: recorded_function(original, name, given, fn.__doc__)
    )
