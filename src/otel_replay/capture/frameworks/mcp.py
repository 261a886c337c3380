"""MCP: ``ClientSession.call_tool``, through which an MCP client calls a server's tool.

Every MCP client (the SDK's ``Client``, and the agent frameworks that take MCP
servers as tool sources) calls tools through the session.  The call is
recorded as a tool call of its own (the tool's name and arguments; the
result as the ``CallToolResult`` the server sent, as JSON), and in a replay
it is answered from the recording: the server is not asked.  A recorded
result that is only the text the model was given (read from a trace that
kept no MCP content) comes back as one text content.  A result that says
``isError`` is a result, as MCP has it, not an exception.
"""

from __future__ import annotations

import functools
from typing import Any

from ._patch import Patches
from ._record import record_tool_call

MODULE = "mcp.client.session"


def install(patches: Patches) -> None:
    from mcp.client.session import ClientSession

    def make(original: Any) -> Any:
        @functools.wraps(original)
        async def call_tool(
            self: Any, name: str, arguments: dict[str, Any] | None = None, *args: Any, **kwargs: Any
        ) -> Any:
            kept: list[Any] = []

            async def run() -> Any:
                result = await original(self, name, arguments, *args, **kwargs)
                kept.append(result)
                return _as_json(result)

            value = await record_tool_call(name, dict(arguments or {}), run)
            if kept and value is not None and _as_json(kept[0]) == value:
                return kept[0]
            return _result(value)  # answered by a replay

        return call_tool

    patches.replace(ClientSession, "call_tool", make, expect=("self", "name", "arguments"))


def _as_json(result: Any) -> Any:
    dump = getattr(result, "model_dump", None)
    if callable(dump):
        return dump(mode="json", by_alias=True, exclude_none=True)
    return result


def _result(value: Any) -> Any:
    """The ``CallToolResult`` a recorded value stands for."""
    from mcp.types import CallToolResult, TextContent

    if isinstance(value, dict) and "content" in value:
        return CallToolResult.model_validate(value)
    text = value if isinstance(value, str) else _json_text(value)
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)
