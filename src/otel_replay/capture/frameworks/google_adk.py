"""Google ADK: ``FunctionTool.run_async``, which runs a Python function tool for the agent.

Wrapped there, ADK's own handling stays around the call: a recorded error
is raised where the function raised it, so the agent's
``on_tool_error_callback`` (or ADK's failure) deals with it as it did.  The
tool-call id is ADK's ``tool_context.function_call_id``.
"""

from __future__ import annotations

import functools
from typing import Any

from ..tool import tool_call_id
from ._patch import Patches
from ._record import record_tool_call

MODULE = "google.adk.tools.function_tool"


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from google.adk.tools.function_tool import FunctionTool

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def run_async(self: Any, *, args: dict[str, Any], tool_context: Any) -> Any:
            with tool_call_id(getattr(tool_context, "function_call_id", None)):
                return await record_tool_call(
                    str(self.name),
                    dict(args),
                    lambda: original(self, args=args, tool_context=tool_context),
                    description=getattr(self, "description", None),
                    function=getattr(self, "func", None),
                )

        return run_async

    patches.replace(FunctionTool, "run_async", make, expect=("self", "args", "tool_context"))
