"""Test helper: an agent whose tools are MCP tools, recorded, and run again against a replay.

    python tests/_mcp_agent.py record TRACE [--no-capture]
    python tests/_mcp_agent.py replay BASE_URL

``record``: a real MCP server (the ``mcp`` package's ``Server``, Streamable
HTTP, on 127.0.0.1) gives the agent two tools, one of which fails
(``isError``); the agent (the OpenAI SDK, async, its model scripted through
the SDK's HTTP transport) lists them with the ``mcp`` package's ``Client``,
asks the model, which calls both at once, and calls them through the client.
Everything is traced into TRACE: the model calls by otel-replay's recording
transport, the MCP messages by the ``mcp`` package's own spans (client and
server, one trace), and, unless ``--no-capture``, each MCP tool call
byte-exactly by otel-replay's MCP integration.

``replay``: the same agent, untraced, its model base URL ``BASE_URL/v1`` and
its MCP server ``BASE_URL/mcp`` (``otel-replay serve --mcp``).  Both print
the agent's answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

QUESTION = "Where is ORD-5521?"
SYSTEM = "You are the order-support agent. Use the tools."


def tool_server(status: str = "en préparation") -> Any:
    """The MCP server: ``lookup_order`` answers (the order has ``status``), ``track_shipment``
    fails."""
    import mcp_types as types
    from mcp.server import Server

    schema = {"type": "object", "properties": {"order_id": {"type": "string"}}}

    async def list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name="lookup_order", description="Look up an order.", input_schema=schema
                ),
                types.Tool(name="track_shipment", description="Track it.", input_schema=schema),
            ]
        )

    async def call_tool(ctx: Any, params: Any) -> Any:
        order = params.arguments["order_id"]
        if params.name == "track_shipment":
            text = "the carrier is not answering"
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        found = {"order_id": order, "status": status, "total": "24,98 €"}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(found, ensure_ascii=False))],
            structured_content=found,
        )

    return Server("orders", on_list_tools=list_tools, on_call_tool=call_tool)


@contextlib.contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on a free port of 127.0.0.1, from a thread."""
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)


def scripted_model() -> Any:
    """The model: both tools at once, then an answer from what they said."""
    import httpx2

    def answer(request: Any) -> Any:
        messages = json.loads(request.content)["messages"]
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if results:
            message: dict[str, Any] = {"role": "assistant", "content": " / ".join(results)}
            finish = "stop"
        else:
            args = json.dumps({"order_id": "ORD-5521"})
            calls = [
                {"id": f"call_{n}", "type": "function", "function": {"name": n, "arguments": args}}
                for n in ("lookup_order", "track_shipment")
            ]
            message, finish = (
                {"role": "assistant", "content": None, "tool_calls": calls},
                "tool_calls",
            )
        body = {
            "id": f"chatcmpl-{len(messages)}",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 40, "completion_tokens": 9, "total_tokens": 49},
        }
        return httpx2.Response(200, json=body)

    return httpx2.MockTransport(answer)


async def run_agent(model: Any, mcp_url: str) -> str:
    """The agent: the MCP server's tools offered to the model, its calls made through MCP."""
    from mcp import Client

    async with Client(mcp_url) as mcp:
        listed = await mcp.list_tools()
        tools = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in listed.tools
        ]
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": QUESTION},
        ]
        while True:
            reply = await model.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=tools, temperature=0
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = await mcp.call_tool(
                    call.function.name, json.loads(call.function.arguments)
                )
                text = "".join(c.text for c in result.content if c.type == "text")
                text = f"error: {text}" if result.is_error else text
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})


def record(trace: Path, capture: bool) -> str:
    import httpx2
    import openai
    from opentelemetry import trace as otel_trace
    from opentelemetry.sdk.trace import TracerProvider

    import otel_replay

    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(trace))
    )
    otel_trace.set_tracer_provider(provider)  # the mcp package traces to the global provider
    if capture:
        otel_replay.instrument_framework("mcp")
    model = openai.AsyncOpenAI(
        api_key="unused",
        base_url="http://model.invalid/v1",
        http_client=httpx2.AsyncClient(
            transport=otel_replay.AsyncRecordingTransport(scripted_model())
        ),
    )
    server = tool_server()
    app = server.streamable_http_app(stateless_http=True, json_response=True)
    with serving(app) as url:
        with provider.get_tracer("mcp-agent").start_as_current_span("invoke_agent support"):
            answer = asyncio.run(run_agent(model, url + "/mcp"))
    provider.shutdown()
    return answer


def replay(base_url: str) -> str:
    import openai

    model = openai.AsyncOpenAI(api_key="unused", base_url=base_url + "/v1")
    return asyncio.run(run_agent(model, base_url + "/mcp"))


if __name__ == "__main__":
    if sys.argv[1] == "record":
        print(record(Path(sys.argv[2]), capture="--no-capture" not in sys.argv))
    else:
        print(replay(sys.argv[2]))
