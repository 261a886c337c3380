"""A customer-support agent with two tools, as an application would write it.

The model is whatever object is handed in (``respond(messages, system=...,
tools=..., **params) -> message``): the scripted model of this example when
recording, ``session.model`` when replaying.

The bug of the story: ``lookup_order`` searches every customer's orders for
the query text, because the agent never passes the user id.  When the search
returns several candidates, the model picks the first: another user's order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import otel_replay
from otel_replay.messages import last_text, tool_calls

SYSTEM = (
    "You are the order-support assistant of Widgets & Co. Use lookup_order to find the "
    "customer's order before answering, and cancel_order only when asked to cancel. "
    "Answer in one sentence."
)
TOOLS = [
    {
        "type": "function",
        "name": "lookup_order",
        "description": "Find orders matching a free-text query.",
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string"}},
            "required": ["query"],
        },
    },
    {
        "type": "function",
        "name": "cancel_order",
        "description": "Cancel an order by id.",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "reason": {"type": "string"}},
            "required": ["order_id", "reason"],
        },
    },
]

#: The order database as it was on the day of the complaint.
ORDERS = [
    {"order_id": "4421", "user_id": "u_2001", "item": "Widget Pro", "status": "shipped"},
    {"order_id": "4430", "user_id": "u_7710", "item": "Widget Mini", "status": "processing"},
    {"order_id": "4452", "user_id": "u_3120", "item": "Widget Max", "status": "delivered"},
]


@otel_replay.tool
def lookup_order(query: str) -> list[dict[str, str]]:
    """Find orders matching a free-text query."""
    # BUG: every customer's orders are searched; "my order" matches them all.
    words = {w for w in query.lower().split() if w not in ("my", "the", "order")}
    return [o for o in ORDERS if not words or words & set(" ".join(o.values()).lower().split())]


@otel_replay.tool(name="lookup_order")
def lookup_order_fixed(query: str, user_id: str) -> list[dict[str, str]]:
    """Find the current user's orders matching a free-text query."""
    return [o for o in lookup_order.__wrapped__(query) if o["user_id"] == user_id]  # type: ignore[attr-defined]


@otel_replay.tool
def cancel_order(order_id: str, reason: str) -> dict[str, str]:
    """Cancel an order by id."""
    return {"order_id": order_id, "status": "cancelled", "reason": reason}


class Model(Protocol):
    def respond(
        self,
        messages: list[dict[str, Any]],
        *,
        system: Any = None,
        tools: Any = None,
        **params: Any,
    ) -> dict[str, Any]: ...


MODEL_ID = "scripted-sonnet-4-2510"


def run_agent(question: str, *, model: Model, user_id: str, fixed: bool = False) -> str:
    """Answer ``question`` for ``user_id``; ``fixed`` uses the repaired lookup."""
    tools: dict[str, Callable[..., Any]] = {
        "lookup_order": (
            (lambda query: lookup_order_fixed(query=query, user_id=user_id))
            if fixed
            else lookup_order
        ),
        "cancel_order": cancel_order,
    }
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": question}]}
    ]
    with otel_replay.agent_run("order_support", input=question) as run:
        for _ in range(8):
            with otel_replay.model_call(
                provider="scripted",
                model=MODEL_ID,
                messages=messages,
                system=SYSTEM,
                tools=TOOLS,
                temperature=0.7,
                seed=7,
            ) as call:
                reply = model.respond(messages, system=SYSTEM, tools=TOOLS, temperature=0.7, seed=7)
                call.record(reply, input_tokens=_tokens(messages), output_tokens=_tokens([reply]))
            messages.append(reply)
            calls = tool_calls([reply])
            if not calls:
                answer = last_text([reply]) or ""
                run.record(answer)
                return answer
            for c in calls:
                with otel_replay.tool_call_id(c["id"]):
                    result = tools[c["name"]](**c["arguments"])
                messages.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": c["id"], "response": result}
                        ],
                    }
                )
        raise RuntimeError("the agent did not answer within 8 turns")


def run_fixed_agent(question: str, *, model: Model, user_id: str) -> str:
    """The agent with its fix: the lookup is given the user id."""
    return run_agent(question, model=model, user_id=user_id, fixed=True)


def _tokens(messages: list[dict[str, Any]]) -> int:
    """A rough token count (words), so usage is recorded like a real client's."""
    return sum(
        len(str(p.get("content", p.get("response", p.get("arguments", "")))).split())
        for m in messages
        for p in m["parts"]
    )
