"""openai-agents: ``_invoke_function_tool_with_metadata``, which every function tool goes through.

The SDK's tracing is not OpenTelemetry, so an ``execute_tool`` span of ours
is opened in the current OpenTelemetry context, with the SDK's tool-call id.
The SDK turns a failing tool's error into the text it tells the model inside
the wrapped function: a recorded error replays as that text when the trace
kept it.
"""

from __future__ import annotations

import functools
from typing import Any

from ..tool import tool_call_id
from ._patch import LayoutChanged, Patches
from ._record import json_arguments, record_tool_call

MODULE = "agents.run_internal.tool_execution"
_NAME = "_invoke_function_tool_with_metadata"


def install(patches: Patches) -> None:
    # optional: the framework's own package
    from agents import tool as agents_tool
    from agents.run_internal import tool_execution

    result_type = getattr(agents_tool, "_FunctionToolInvocationResult", None)
    if result_type is None:
        raise LayoutChanged("agents.tool._FunctionToolInvocationResult is missing")
    original = getattr(tool_execution, _NAME, None)

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def invoke(*, function_tool: Any, context: Any, arguments: str) -> Any:
            kept: list[Any] = []

            async def run() -> Any:
                outcome = await original(
                    function_tool=function_tool, context=context, arguments=arguments
                )
                kept.append(outcome)
                return outcome.output

            with tool_call_id(getattr(context, "tool_call_id", None)):
                output = await record_tool_call(
                    str(getattr(function_tool, "name", "tool")),
                    json_arguments(arguments),
                    run,
                    description=getattr(function_tool, "description", None),
                    errors_caught=True,
                )
            if kept and kept[0].output is output:
                return kept[0]
            return result_type(output)  # answered by a replay

        return invoke

    expect = ("function_tool", "context", "arguments")
    wrapper = patches.replace(tool_execution, _NAME, make, expect=expect)
    if getattr(agents_tool, _NAME, None) is original:
        patches.replace(agents_tool, _NAME, lambda _: wrapper)
