"""Haystack: ``Tool.invoke`` (and ``invoke_async``), which run a tool for its agents.

``ToolInvoker`` and the ``Agent`` call ``tool.invoke(**arguments)``; the tool
turns its function's error into a ``ToolInvocationError``, which they tell
the model.  A replayed error whose recorded type is Haystack's
``ToolInvocationError`` is raised as one again.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call, record_tool_call_sync

MODULE = "haystack.tools"


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from haystack.tools import Tool
    from haystack.tools.errors import ToolInvocationError

    def replayed_error(tool: Any) -> Any:
        def raised(error: BaseException) -> BaseException:
            if type(error).__name__ != "ToolInvocationError" or isinstance(
                error, ToolInvocationError
            ):
                return error
            message = str(error.args[0]) if error.args else str(error)
            again: BaseException = ToolInvocationError(message, tool_name=str(tool.name))
            return again

        return raised

    def make(original: Any) -> Any:
        @functools.wraps(original)
        def invoke(self: Any, **kwargs: Any) -> Any:
            return record_tool_call_sync(
                str(self.name),
                kwargs,
                lambda: original(self, **kwargs),
                description=getattr(self, "description", None),
                replayed_error=replayed_error(self),
                function=getattr(self, "function", None),
            )

        return invoke

    def make_async(original: Any) -> Any:
        @functools.wraps(original)
        async def invoke_async(self: Any, **kwargs: Any) -> Any:
            return await record_tool_call(
                str(self.name),
                kwargs,
                lambda: original(self, **kwargs),
                description=getattr(self, "description", None),
                replayed_error=replayed_error(self),
                function=getattr(self, "function", None),
            )

        return invoke_async

    patches.replace(Tool, "invoke", make, expect=("self", "kwargs"))
    if "invoke_async" in vars(Tool):
        patches.replace(Tool, "invoke_async", make_async, expect=("self", "kwargs"))
