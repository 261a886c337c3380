"""Test helper: a small support agent, recorded the way users record theirs.

The model is scripted (a list of replies, in GenAI message shape); the loop
calls it, runs the tools it asks for through ``@otel_replay.tool`` and feeds
the results back, all inside ``agent_run`` / ``model_call`` spans written by
our processors to a real trace file.  Replayed, the same loop runs against
``session.model``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry import baggage, context

import otel_replay
from _recording import recording
from otel_replay.messages import last_text, tool_calls

SYSTEM = "You are the support agent. Use the tools."

#: What the tools see; tests change it to make runs differ.
WORLD: dict[str, Any] = {"orders": [{"order_id": "4421", "status": "shipped"}], "fail": 0}


@otel_replay.tool
def lookup_order(query: str) -> list[dict[str, Any]]:
    return [dict(o) for o in WORLD["orders"]]


@otel_replay.tool
def check_eligibility(order_id: str) -> dict[str, Any]:
    return {"order_id": order_id, "eligible": True}


@otel_replay.tool
def cancel_order(order_id: str, reason: str) -> dict[str, Any]:
    return {"order_id": order_id, "status": "cancelled"}


@otel_replay.tool
def flaky_lookup(query: str) -> list[dict[str, Any]]:
    """Times out while ``WORLD["fail"]`` is above zero (and counts it down)."""
    if WORLD["fail"] > 0:
        WORLD["fail"] -= 1
        raise TimeoutError("lookup timed out")
    return [dict(o) for o in WORLD["orders"]]


@otel_replay.tool
def fetch_price(sku: str) -> str:
    """Returns the raw body the pricing API sent (cut off when ``WORLD["body"]`` says so)."""
    body: str = WORLD.get("body", '{"sku": "w-1", "price": 12.5}')
    return body


TOOLS: dict[str, Callable[..., Any]] = {
    f.__name__: f
    for f in (lookup_order, check_eligibility, cancel_order, flaky_lookup, fetch_price)
}


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    """An assistant reply asking for one tool call."""
    return calls((name, call_id, arguments))


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    """An assistant reply asking for several tool calls at once."""
    parts = [{"type": "tool_call", "id": i, "name": n, "arguments": a} for n, i, a in items]
    return {"role": "assistant", "parts": parts}


def say(text: str) -> dict[str, Any]:
    return {"role": "assistant", "parts": [{"type": "text", "content": text}]}


class Scripted:
    """The model while recording: answers with the next scripted reply."""

    def __init__(self, replies: Sequence[dict[str, Any]]) -> None:
        self.replies = list(replies)

    def respond(self, messages: Any, **_: Any) -> dict[str, Any]:
        return json.loads(json.dumps(self.replies.pop(0)))

    __call__ = respond


def support_agent(question: str, model: Any, *, agent: str = "support", turns: int = 12) -> str:
    """Call the model, run each tool it asks for (errors go back to it as text), repeat."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": question}]}
    ]
    with otel_replay.agent_run(agent, input=question) as run:
        for _ in range(turns):
            with otel_replay.model_call(
                provider="scripted",
                model="scripted-1",
                messages=messages,
                system=SYSTEM,
                temperature=0.0,
                top_p=1.0,
                seed=7,
            ) as span:
                reply = model.respond(messages, system=SYSTEM, temperature=0.0, top_p=1.0, seed=7)
                span.record(reply, input_tokens=10 * len(messages), output_tokens=5)
            messages.append(reply)
            asked = tool_calls([reply])
            if not asked:
                answer = last_text([reply]) or ""
                run.record(answer)
                return answer
            for c in asked:
                try:
                    with otel_replay.tool_call_id(c["id"]):
                        result: Any = TOOLS[c["name"]](**c["arguments"])
                except TimeoutError as exc:
                    result = f"error: {exc}"
                messages.append(
                    {
                        "role": "tool",
                        "parts": [
                            {"type": "tool_call_response", "id": c["id"], "response": result}
                        ],
                    }
                )
    raise AssertionError("the agent did not answer")


@contextlib.contextmanager
def identity(user: str, session: str) -> Iterator[None]:
    ctx = baggage.set_baggage("user.id", user)
    ctx = baggage.set_baggage("session.id", session, ctx)
    ctx = baggage.set_baggage("tenant.id", "widgets", ctx)
    token = context.attach(ctx)
    try:
        yield
    finally:
        context.detach(token)


def record_run(
    path: Path,
    replies: Sequence[dict[str, Any]],
    *,
    question: str = "Where is my order?",
    agent: str = "support",
    user: str = "u_1",
    session: str = "s_1",
) -> str:
    """Record one run of the agent (appended to ``path``); returns its answer."""
    with recording(path, flags={"beta": False}), identity(user, session):
        return support_agent(question, Scripted(replies), agent=agent)


#: The plain story: look the order up, answer.
LOOKUP = [call("lookup_order", "c1", query="my order"), say("Order #4421 is shipped.")]
