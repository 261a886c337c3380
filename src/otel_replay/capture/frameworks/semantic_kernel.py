"""Semantic Kernel: ``KernelFunctionFromMethod._invoke_internal``, which calls a native function.

The kernel calls a plugin's function there with the model's arguments and
stores what it returns in the invocation context as a ``FunctionResult``;
the tool's name is the function's fully qualified one (``Plugin-function``),
as the model calls it.  Replayed, the recorded value becomes that result
(the function does not run); a replayed error is raised there, where the
kernel turns it into what it tells the model.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call

MODULE = "semantic_kernel.functions.kernel_function_from_method"


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from semantic_kernel.functions.function_result import FunctionResult
    from semantic_kernel.functions.kernel_function_from_method import KernelFunctionFromMethod

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def _invoke_internal(self: Any, context: Any) -> None:
            names = {p.name for p in getattr(self.metadata, "parameters", None) or []}
            given = dict(getattr(context, "arguments", None) or {})
            arguments = {k: v for k, v in given.items() if k in names}

            async def run() -> Any:
                await original(self, context)
                return getattr(context.result, "value", None)

            value = await record_tool_call(
                str(self.fully_qualified_name),
                arguments,
                run,
                description=getattr(self, "description", None),
                function=getattr(self, "method", None),
            )
            if context.result is None or context.result.value is not value:
                context.result = FunctionResult(
                    function=self.metadata,
                    value=value,
                    metadata={"arguments": context.arguments, "used_arguments": arguments},
                )

        return _invoke_internal

    patches.replace(KernelFunctionFromMethod, "_invoke_internal", make, expect=("self", "context"))
