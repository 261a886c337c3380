"""Test helper: the worked example's agent as a user changes it, for ``otel-replay cohort``."""

from __future__ import annotations

import json
import os
from typing import Any

from examples.order_support.agent import lookup_order, run_agent

import otel_replay


def fixed_agent(question: str, *, model: Any, user_id: str) -> str:
    """The fix of the story: the lookup is given the user id."""
    return run_agent(question, model=model, user_id=user_id, fixed=True)


def exclaiming_agent(question: str, *, model: Any, user_id: str) -> str:
    """A change in how the answer is worded: the same tool calls, another answer (and a
    line printed, as agents do)."""
    print("asking the model")
    return run_agent(question, model=model, user_id=user_id) + " Anything else?"


def crashing_agent(question: str, *, model: Any, user_id: str) -> str:
    """A change that breaks the agent before it asks the model anything."""
    raise RuntimeError(f"no answer for {user_id}")


def lenient_judge(recorded: Any, replayed: Any) -> bool:
    """Answers naming the same order are the same answer."""
    said = recorded.final_output() or ""
    return any(
        f"#{n}" in said and f"#{n}" in (replayed.answer or "") for n in ("4421", "4430", "4452")
    )


def live_lookup(query: str, user_id: str | None = None) -> list[dict[str, str]]:
    """The order lookup as a tool run live: the fixed one when given the user id.  Each
    call leaves a line in the file ``COHORT_TOOL_LOG`` names, so a test sees it ran."""
    log = os.environ.get("COHORT_TOOL_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"query": query, "user_id": user_id}) + "\n")
    found: list[dict[str, str]] = lookup_order.__wrapped__(query)  # type: ignore[attr-defined]
    return [o for o in found if user_id is None or o["user_id"] == user_id]


def failing_lookup(query: str, user_id: str | None = None) -> list[dict[str, str]]:
    """A live tool that fails: the model is told so."""
    raise LookupError(f"the order service is down (asked for {query!r})")


def http_agent(question: str, *, base_url: str, user_id: str) -> str:
    """The example agent as an application on the OpenAI SDK writes it: its client made
    from the base URL it is given, its tools the example's."""
    import openai
    from examples.order_support.agent import MODEL_ID, SYSTEM, TOOLS, cancel_order

    tools = {"lookup_order": lookup_order, "cancel_order": cancel_order}
    functions = [
        {"type": "function", "function": {k: t[k] for k in ("name", "description", "parameters")}}
        for t in TOOLS
    ]
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": question},
    ]
    with openai.OpenAI(base_url=base_url, api_key="unused", max_retries=0) as client:
        for _ in range(8):
            reply = (
                client.chat.completions.create(
                    model=MODEL_ID, messages=messages, tools=functions, temperature=0.7, seed=7
                )
                .choices[0]
                .message
            )
            messages.append(reply.model_dump(exclude_none=True))
            if not reply.tool_calls:
                return reply.content or ""
            for call in reply.tool_calls:
                with otel_replay.tool_call_id(call.id):
                    result = tools[call.function.name](**json.loads(call.function.arguments))
                messages.append(
                    {"role": "tool", "tool_call_id": call.id, "content": json.dumps(result)}
                )
    raise RuntimeError("the agent did not answer within 8 turns")


def thanking_model(messages: Any, **given: Any) -> dict[str, Any]:
    """The example's model as a user's own: the same calls, its answers begun with thanks."""
    from examples.order_support.scripted_model import ScriptedModel

    reply = ScriptedModel().respond(messages, **given)
    for part in reply["parts"]:
        if part.get("type") == "text":
            part["content"] = "Thanks! " + part["content"]
    return reply
