"""MCP: ``ClientSession.call_tool``, through which an MCP client calls a server's tool.

Every MCP client (the SDK's ``Client``, and the agent frameworks that take MCP
servers as tool sources) calls tools through the session.  The call is
recorded as a tool call of its own (the tool's name and arguments; the
result as the ``CallToolResult`` the server sent, as JSON), and in a replay
it is answered from the recording: the server is not asked.  A recorded
result that is only the text the model was given (read from a trace that
kept no MCP content) comes back as one text content (:func:`call_result`,
which ``otel-replay serve --mcp`` answers with too).  A result that says
``isError`` is a result, as MCP has it, not an exception.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from ...payload import codec as payload
from ._patch import Patches
from ._record import record_tool_call

MODULE = "mcp.client.session"


def install(patches: Patches) -> None:
    # optional: the mcp extra
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
    # optional: the mcp extra
    from mcp.types import CallToolResult

    return CallToolResult.model_validate(call_result(value))


def call_result(value: Any) -> dict[str, Any]:
    """A recorded tool result as a ``CallToolResult`` (JSON): one recorded from an MCP client
    as it is; text as one text content; an object as its JSON text, and as structured
    content when it is a JSON object."""
    if isinstance(value, Mapping) and isinstance(value.get("content"), list):
        return dict(value)
    if isinstance(value, str):
        return {"content": [{"type": "text", "text": value}]}
    plain = payload.plain(value)
    result: dict[str, Any] = {
        "content": [{"type": "text", "text": json.dumps(plain, ensure_ascii=False)}]
    }
    if isinstance(plain, dict):
        result["structuredContent"] = plain
    return result
