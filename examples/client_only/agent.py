"""A hand-written OpenAI tool loop traced by a client-only instrumentation (OpenInference).

Client-only instrumentations trace each model call and nothing else: the tool
results exist only as the next request's messages, so ``otel-replay check``
rates the run ``model-only``.  One ``@otel_replay.tool`` per tool function
records each call byte-exactly, in the same trace, and the run becomes
``full``.  The model is a scripted stand-in (an httpx transport), so this
runs offline:

    python -m examples.client_only [OUT_DIR]

records the loop twice, without and with the decorator, and prints each
run's verdict.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import openai
from opentelemetry.sdk.trace import TracerProvider

import otel_replay

ORDERS = {"ORD-5521": {"status": "processing", "total": 42.5}}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Look up an order by its id.",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    }
]


def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order by its id."""
    return ORDERS.get(order_id, {"error": "not found"})


def scripted_model() -> httpx2.MockTransport:
    """Answers a tool call first, then text (what a real model would do here)."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        messages = json.loads(request.content)["messages"]
        if messages[-1]["role"] == "tool":
            result = json.loads(messages[-1]["content"])
            message: dict[str, Any] = {
                "role": "assistant",
                "content": f"ORD-5521 is {result['status']}.",
            }
            finish = "stop"
        else:
            call = {"order_id": "ORD-5521"}
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup_order", "arguments": json.dumps(call)},
                    }
                ],
            }
            finish = "tool_calls"
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


def run_agent(client: openai.OpenAI, tool: Callable[..., dict[str, Any]]) -> str:
    """The loop: ask, run each tool call, send the results back, until text."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are an order-support agent."},
        {"role": "user", "content": "Where is ORD-5521?"},
    ]
    while True:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS, temperature=0
        )
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            with otel_replay.tool_call_id(call.id):  # lets replay match by call id
                result = tool(**json.loads(call.function.arguments))
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
            )


def record(path: Path, *, decorate: bool) -> str:
    """Run the agent once, traced by OpenInference's OpenAI instrumentation, into ``path``."""
    from openinference.instrumentation.openai import OpenAIInstrumentor

    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
    )
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    previous = otel_replay.use_tracer_provider(provider)
    tracer = provider.get_tracer("client-only-example")
    try:
        client = openai.OpenAI(
            api_key="unused",
            base_url="http://model.invalid/v1",
            http_client=httpx2.Client(transport=scripted_model()),
        )
        # The one line that upgrades the run: @otel_replay.tool on each tool function.
        tool = otel_replay.tool(lookup_order) if decorate else lookup_order
        # One parent span puts the model calls and the tool calls in one trace.
        with tracer.start_as_current_span("order-support"):
            return run_agent(client, tool)
    finally:
        instrumentor.uninstrument()
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


def main(out: Path) -> dict[str, str]:
    out.mkdir(parents=True, exist_ok=True)
    verdicts = {}
    for name, decorate in (("plain", False), ("decorated", True)):
        path = out / f"client_only_{name}.otlp"
        path.unlink(missing_ok=True)
        answer = record(path, decorate=decorate)
        (run,) = otel_replay.load(path)
        verdicts[name] = run.kit.verdict
        print(f"{name:10} {run.kit.verdict:12} {answer}")
    return verdicts


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "out"))
