"""Tool I/O for agent frameworks that run the user's tools, with no decorator in the user's code.

:func:`instrument_pydantic_ai` and :func:`instrument_openai_agents` wrap the
one place each framework calls a function tool, and record that call as
``@otel_replay.tool`` would: byte-exact argument and result payloads with
their digests, errors, the model's tool-call id.  During a replay session the
call is handed to the replayer, which answers from the recording (the tool
is not run).

- pydantic-ai (``FunctionToolset.call_tool``): its own instrumentation opens
  an ``execute_tool`` span around the call; that span is enriched (one span
  per call, pydantic-ai's attributes kept).  Without its instrumentation, an
  ``execute_tool`` span of ours is opened.
- openai-agents (``_invoke_function_tool_with_metadata``, the SDK's internal
  function every function-tool call goes through): the SDK's tracing is not
  OpenTelemetry, so an ``execute_tool`` span of ours is opened in the current
  OpenTelemetry context, with the SDK's tool-call id.

Both patch the framework's internals, checked when installed: a version
whose layout differs is left alone, with a warning.  Calls are idempotent.
With ``OTEL_SDK_DISABLED=true`` they patch nothing (and return False).
An ``@otel_replay.tool`` of the same name inside a recorded call is not
recorded twice.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from .spans import sdk_disabled, warn_once
from .tool import _Call, _framework_tool

__all__ = ["instrument_openai_agents", "instrument_pydantic_ai", "record_tool_call"]

_MARK = "__otel_replay_wrapped__"


class _Named:
    """What :class:`~otel_replay.capture.tool._Call` needs to know of a tool."""

    framework = True
    #: The framework calls the function; its return annotation is not ours to read.
    fn = None

    def __init__(self, name: str, description: str | None) -> None:
        self.name = name
        self.description = (description or "").strip().split("\n", 1)[0]

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        return kwargs


async def record_tool_call(
    name: str,
    arguments: dict[str, Any],
    run: Callable[[], Awaitable[Any]],
    *,
    description: str | None = None,
) -> Any:
    """Run ``run()`` (a framework's call of tool ``name``) recorded, or answered by a replay."""
    call = _Call.begin(_Named(name, description), (), dict(arguments))  # type: ignore[arg-type]
    token = _framework_tool.set(name)
    try:
        if call is None:
            return await run()
        with call:
            if call.resolution is not None and call.resolution.action != "live":
                return call.finish_resolved()
            try:
                result = await run()
            except BaseException as exc:
                call.fail(exc)
                raise
            return call.succeed(result)
    finally:
        _framework_tool.reset(token)


def _disabled(framework: str) -> bool:
    if not sdk_disabled():
        return False
    warn_once(
        "sdk-disabled-" + framework,
        "otel-replay: OTEL_SDK_DISABLED is true; %s tool calls are not instrumented",
        framework,
    )
    return True


def instrument_pydantic_ai(*, agent_spans: bool = False) -> bool:
    """Record every pydantic-ai function-tool call; False when pydantic-ai is not usable.

    ``agent_spans`` also turns pydantic-ai's own instrumentation on for every
    agent that does not set it (``Agent.instrument_all()``): its agent, chat
    and ``execute_tool`` spans, to the global tracer provider.
    """
    if _disabled("pydantic-ai"):
        return False
    try:
        from pydantic_ai.toolsets.function import FunctionToolset
    except ImportError:
        return False
    if agent_spans:
        try:
            from pydantic_ai import Agent

            Agent.instrument_all()
        except Exception as exc:
            warn_once(
                "pydantic-ai-spans", "otel-replay could not turn on pydantic-ai spans: %r", exc
            )
    original = FunctionToolset.call_tool
    if getattr(original, _MARK, False):
        return True
    try:

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

        setattr(call_tool, _MARK, True)
        FunctionToolset.call_tool = call_tool  # type: ignore[method-assign]
    except Exception as exc:
        warn_once("pydantic-ai", "otel-replay could not instrument pydantic-ai tools: %r", exc)
        return False
    return True


def _json_arguments(text: Any) -> dict[str, Any]:
    if isinstance(text, str):
        try:
            value = json.loads(text) if text.strip() else {}
        except ValueError:
            return {"input": text}
        return value if isinstance(value, dict) else {"input": value}
    return {"input": text}


def instrument_openai_agents() -> bool:
    """Record every openai-agents function-tool call; False when openai-agents is not usable."""
    if _disabled("openai-agents"):
        return False
    try:
        from agents import tool as agents_tool
        from agents.run_internal import tool_execution
    except ImportError:
        return False
    original = getattr(tool_execution, "_invoke_function_tool_with_metadata", None)
    result_type = getattr(agents_tool, "_FunctionToolInvocationResult", None)
    if original is None or result_type is None:
        warn_once(
            "openai-agents",
            "otel-replay: this openai-agents version runs tools differently; "
            "its tool calls are not recorded byte-exactly",
        )
        return False
    if getattr(original, _MARK, False):
        return True

    @functools.wraps(original)
    async def invoke(*, function_tool: Any, context: Any, arguments: str) -> Any:
        kept: list[Any] = []

        async def run() -> Any:
            outcome = await original(
                function_tool=function_tool, context=context, arguments=arguments
            )
            kept.append(outcome)
            return outcome.output

        from .tool import tool_call_id

        with tool_call_id(getattr(context, "tool_call_id", None)):
            output = await record_tool_call(
                str(getattr(function_tool, "name", "tool")),
                _json_arguments(arguments),
                run,
                description=getattr(function_tool, "description", None),
            )
        if kept and kept[0].output is output:
            return kept[0]
        return result_type(output)  # answered by a replay

    setattr(invoke, _MARK, True)
    name = "_invoke_function_tool_with_metadata"
    setattr(tool_execution, name, invoke)
    if getattr(agents_tool, name, None) is original:
        setattr(agents_tool, name, invoke)
    return True
