"""A stand-in for a hosted model, so the example runs with no key and no network.

It behaves like the model of the story: it looks the order up, and when the
lookup returns several candidates it trusts the first one.
"""

from __future__ import annotations

import itertools
from typing import Any


class ScriptedModel:
    """Deterministic model: same conversation in, same message out."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)

    def respond(
        self,
        messages: list[dict[str, Any]],
        *,
        system: Any = None,
        tools: Any = None,
        **params: Any,
    ) -> dict[str, Any]:
        last = messages[-1]
        if last["role"] == "user":
            text = last["parts"][0]["content"]
            query = "my order" if "my order" in text.lower() else text.rstrip("?")
            return self._call("lookup_order", {"query": query})
        response = last["parts"][0]["response"]
        if not response:
            return self._say(
                "I could not find an order for you; could you give me the order number?"
            )
        order = response[0]  # several candidates: the model trusts the top hit
        return self._say(f"Order #{order['order_id']} ({order['item']}) is {order['status']}.")

    def _call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        call_id = f"call_{next(self._ids)}"
        return {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}],
            "finish_reason": "tool_calls",
        }

    @staticmethod
    def _say(text: str) -> dict[str, Any]:
        return {
            "role": "assistant",
            "parts": [{"type": "text", "content": text}],
            "finish_reason": "stop",
        }
