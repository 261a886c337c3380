"""Test helper: the order-support scenario's agent loop, for replaying recorded runs.

The loop every third-party case ran (the corpus scripts' ``scenario.py``):
call the model, run each tool it asks for, feed the results back, until it
answers.  Run against a replay session it must walk the recorded path: the
pinned model serves the recorded answers and the tools are stubbed.
"""

from __future__ import annotations

import json
import runpy
from collections.abc import Callable
from typing import Any

import otel_replay
from _data import SCENARIO_SCRIPT
from _ground_truth import value


@otel_replay.tool(name="lookup_order")
def lookup_order(order_id: str) -> str:
    # Run live only if the stubs failed: an answer the recording never had, so replay diverges.
    return json.dumps({"order_id": order_id, "status": "not stubbed"})


@otel_replay.tool(name="cancel_order")
def cancel_order(order_id: str, reason: str) -> str:
    return json.dumps({"order_id": order_id, "cancelled": "not stubbed"})


TOOLS = {"lookup_order": lookup_order, "cancel_order": cancel_order}


def scenario_agent(
    model: otel_replay.PinnedModel,
    system_apart: bool,
    tool_output: Callable[[str], str] = str,
) -> str:
    """The scenario's loop: call the model, run each tool it asks for, feed results back.

    ``tool_output`` turns a tool's result into the text sent to the model, as
    the recorded framework did.
    """
    scenario = runpy.run_path(str(SCENARIO_SCRIPT))
    system = scenario["SYSTEM_PROMPT"]
    messages: list[dict[str, Any]] = [{"role": "user", "content": scenario["USER_PROMPT"]}]
    if not system_apart:  # OpenAI clients send it as the first message
        messages.insert(0, {"role": "system", "content": system})
    for _ in range(6):
        reply = model(messages, system=system if system_apart else None)
        messages.append(reply)
        calls = [p for p in reply["parts"] if p["type"] == "tool_call"]
        if not calls:
            return "".join(p["content"] for p in reply["parts"] if p["type"] == "text")
        for c in calls:
            result = tool_output(TOOLS[c["name"]](**value(c["arguments"])))
            messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    raise AssertionError("the agent did not finish")
