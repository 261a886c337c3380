"""``otel-replay serve --mcp``: a recorded run's tool calls, served as an MCP server.

An agent whose tools are MCP tools replays them by pointing its MCP client at
``BASE/mcp`` (Streamable HTTP) instead of the real server: ``tools/list``
lists the tools the run's model was offered (their recorded definitions),
and ``tools/call`` answers each call from the run's recorded tool calls,
matched as a replay session matches them (by name and arguments, in
recorded order).  A call the recording does not have is refused with a
JSON-RPC error that names the closest recorded call, so the agent fails
loudly instead of going on with a made-up result.  A recorded error comes
back as a tool result with ``isError``, as an MCP server reports a failing
tool.

The MCP protocol comes from the ``mcp`` package (the ``mcp`` extra),
imported only when a server with ``--mcp`` starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...capture.frameworks.mcp import call_result
from ...capture.hooks import ToolInvocation
from ...payload import codec as payload
from ...runs.model import Run
from ..divergence import ReplayDivergence, ReplayError
from ..tool_stubs import ToolStubs

#: JSON-RPC's "invalid params": the call is not one the recording has.
NOT_RECORDED_CODE = -32602


class RecordedTools:
    """The tool calls of one run, answered as an MCP server answers ``tools/call``."""

    def __init__(self, run: Run, log: Callable[[str], None] | None = None) -> None:
        self.run = run
        # What an MCP server answers is text content: a result known only as the text
        # the model was sent is answered with that text.
        self.stubs = ToolStubs(run, from_messages="text")
        self.log = log or (lambda line: None)
        self._lock = threading.Lock()

    def definitions(self) -> list[dict[str, Any]]:
        """``name``, ``description``, ``inputSchema`` of each tool the run's model was offered
        (else of each tool it called)."""
        found: dict[str, dict[str, Any]] = {}
        for step in self.run.model_steps():
            for tool in (step.model.tool_definitions if step.model else None) or []:
                inner = tool.get("function")
                spec: Mapping[str, Any] = inner if isinstance(inner, Mapping) else tool
                name = spec.get("name")
                if isinstance(name, str) and name not in found:
                    schema = spec.get("parameters") or spec.get("input_schema")
                    found[name] = {
                        "name": name,
                        "description": spec.get("description") or "",
                        "inputSchema": schema if isinstance(schema, Mapping) else _ANY_OBJECT,
                    }
        for step in self.stubs.steps:
            if step.tool is not None and step.tool.tool_name not in found:
                name = step.tool.tool_name
                found[name] = {"name": name, "description": "", "inputSchema": _ANY_OBJECT}
        return list(found.values())

    def call(self, name: str, arguments: Mapping[str, Any] | None) -> dict[str, Any]:
        """The recorded ``CallToolResult`` (as JSON) of this call; :class:`ReplayError` when the
        recording has no such call."""
        args = dict(arguments or {})
        invocation = ToolInvocation(name, None, args, payload.encode(args))
        with self._lock:
            try:
                resolution = self.stubs.resolve(invocation)
            except ReplayDivergence as err:
                self.log(f"mcp: {str(err).splitlines()[0]}")
                raise ReplayError(str(err)) from None
            if resolution.action == "raise":
                error = resolution.error
                text = str(resolution.value) if resolution.has_value else str(error)
                result = {**call_result(text), "isError": True}
            else:
                result = call_result(resolution.value)
            self.stubs.complete(resolution, result, None)
        step = resolution.token
        self.log(f"mcp: {step.label() if step is not None else name} served")
        return result


_ANY_OBJECT: dict[str, Any] = {"type": "object"}


def mcp_app(tools: RecordedTools, host: str, allow_hosts: Sequence[str] = ()) -> Any:
    """The MCP server (Streamable HTTP, at ``/mcp``) as an ASGI application, with its lifespan.

    ``allow_hosts``: names clients may use besides the loopback ones and ``host`` (as
    ``serve --allow-host``); the MCP package's own DNS-rebinding check takes them too.
    """
    # optional: the mcp extra
    import mcp_types as types
    from mcp.server import Server
    from mcp.server.transport_security import TransportSecuritySettings
    from mcp.shared.exceptions import MCPError

    async def list_tools(ctx: Any, params: Any) -> Any:
        listed = [
            types.Tool(name=d["name"], description=d["description"], input_schema=d["inputSchema"])
            for d in tools.definitions()
        ]
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx: Any, params: Any) -> Any:
        try:
            result = tools.call(params.name, params.arguments)
        except ReplayError as exc:
            raise MCPError(NOT_RECORDED_CODE, str(exc)) from None
        return types.CallToolResult.model_validate(result)

    server: Any = Server("otel-replay", on_list_tools=list_tools, on_call_tool=call_tool)
    security = None
    if allow_hosts:
        # Host names are matched as clients send them: lower case (as the gate compares).
        names = ["127.0.0.1", "localhost", "[::1]", *(n.lower() for n in (host, *allow_hosts))]
        security = TransportSecuritySettings(
            allowed_hosts=[h for n in names for h in (n, f"{n}:*")],
            allowed_origins=[
                f"{scheme}://{n}{port}"
                for n in names
                for scheme in ("http", "https")
                for port in ("", ":*")
            ],
        )
    return server.streamable_http_app(
        stateless_http=True, json_response=True, host=host, transport_security=security
    )
