"""An order-status agent as a team might already have it: traced with the plain
OpenTelemetry API and the GenAI semantic conventions, and nothing else.

It does not know otel-replay exists.  Run it under ``opentelemetry-instrument``
with the environment variables in README.md and its runs are recorded for
replay; run it bare and it still works (the API is a no-op without an SDK).

The model is whatever object is handed in (``respond(messages, system=...,
tools=..., **params) -> message``); the default is a scripted stand-in so the
example runs offline.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from opentelemetry import trace

tracer = trace.get_tracer("order_status_agent", "1.0")

MODEL = "scripted-mini-2601"
SYSTEM = "You answer questions about order status. Look the order up before answering."
TOOLS = [
    {
        "type": "function",
        "name": "lookup_order",
        "description": "Status of one order by id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
    }
]
ORDERS = {"4430": {"item": "Widget Mini", "status": "processing"}}


def lookup_order(order_id: str) -> str:
    """Status of one order, as the JSON text the model is shown."""
    return json.dumps(ORDERS.get(order_id, {"status": "unknown"}))


class ScriptedModel:
    """Deterministic stand-in for a hosted model: look the order up, then answer."""

    def respond(self, messages: list[dict[str, Any]], **_: Any) -> dict[str, Any]:
        last = messages[-1]
        if last["role"] == "user":
            order_id = "".join(c for c in last["parts"][0]["content"] if c.isdigit())
            call = {
                "type": "tool_call",
                "id": "call_1",
                "name": "lookup_order",
                "arguments": {"order_id": order_id},
            }
            return {"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}
        order = json.loads(last["parts"][0]["response"])
        text = f"Your {order.get('item', 'order')} is {order['status']}."
        return {
            "role": "assistant",
            "parts": [{"type": "text", "content": text}],
            "finish_reason": "stop",
        }


def run(question: str, model: Any = None) -> str:
    """Answer ``question``; every model call and tool call is a GenAI span."""
    model = model or ScriptedModel()
    tools: dict[str, Callable[..., Any]] = {"lookup_order": lookup_order}
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": question}]}
    ]
    with tracer.start_as_current_span(
        "invoke_agent order_status",
        attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "order_status"},
    ):
        for _ in range(4):
            with tracer.start_as_current_span(f"chat {MODEL}") as span:
                span.set_attributes(
                    {
                        "gen_ai.operation.name": "chat",
                        "gen_ai.provider.name": "scripted",
                        "gen_ai.request.model": MODEL,
                        "gen_ai.request.temperature": 0.0,
                        "gen_ai.system_instructions": json.dumps(
                            [{"type": "text", "content": SYSTEM}]
                        ),
                        "gen_ai.tool.definitions": json.dumps(TOOLS),
                        "gen_ai.input.messages": json.dumps(messages),
                    }
                )
                reply = model.respond(messages, system=SYSTEM, tools=TOOLS, temperature=0.0)
                span.set_attributes(
                    {
                        "gen_ai.response.model": MODEL,
                        "gen_ai.output.messages": json.dumps([reply]),
                    }
                )
            messages.append(reply)
            calls = [p for p in reply["parts"] if p["type"] == "tool_call"]
            if not calls:
                return str(reply["parts"][0]["content"])
            for call in calls:
                with tracer.start_as_current_span(f"execute_tool {call['name']}") as span:
                    span.set_attributes(
                        {
                            "gen_ai.operation.name": "execute_tool",
                            "gen_ai.tool.name": call["name"],
                            "gen_ai.tool.call.id": call["id"],
                            "gen_ai.tool.call.arguments": json.dumps(call["arguments"]),
                        }
                    )
                    result = tools[call["name"]](**call["arguments"])
                    span.set_attribute("gen_ai.tool.call.result", result)
                messages.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": call["id"], "response": result}
                        ],
                    }
                )
    raise RuntimeError("no answer within 4 turns")


if __name__ == "__main__":
    print(run(sys.argv[1] if len(sys.argv) > 1 else "Where is order 4430?"))
