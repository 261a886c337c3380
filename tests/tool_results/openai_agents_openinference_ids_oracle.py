"""What OpenInference's openai-agents instrumentation records of generated Chat Completions
call ids, beside the messages the OpenAI Agents SDK's model call had: the oracle of the
``openinference`` dialect's call ids there.

Run with the Python of an install of openinference-instrumentation-openai-agents
(``python openai_agents_openinference_ids_oracle.py OUT.json [N] [SEED]``): draws ``N``
model calls (a question, an answer of one to three calls, their results, and the answer
the call got: calls or text), each call's id drawn from the shapes servers give (unique,
a counter that restarts in each answer, the empty id of a server that gives none), and
records them as the instrumentation records a generation span (its own
``_get_attributes_from_chat_completions_input`` and ``..._output``), beside the ids sent
(the calls', then their results') and answered.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from openinference.instrumentation.openai_agents._processor import (
    _get_attributes_from_chat_completions_input,
    _get_attributes_from_chat_completions_output,
)


def _id(rng: random.Random, shape: str, i: int) -> str:
    if shape == "empty":
        return ""
    if shape == "counter":
        return f"call_{i}"
    return "call_" + "".join(rng.choice("abcXYZ019") for _ in range(8))


def _calls(rng: random.Random, shape: str) -> list[dict[str, Any]]:
    return [
        {
            "id": _id(rng, shape, i),
            "type": "function",
            "function": {"name": rng.choice(["a", "b"]), "arguments": json.dumps({"n": i})},
        }
        for i in range(1 + rng.randrange(3))
    ]


def _ids(message: dict[str, Any]) -> list[str]:
    return [c["id"] for c in message.get("tool_calls") or []]


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    cases = []
    for _ in range(n):
        shape = rng.choice(["unique", "counter", "empty"])
        calls = _calls(rng, shape)
        sent = [
            {"role": "system", "content": "s"},
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": None, "tool_calls": calls},
            *({"role": "tool", "tool_call_id": c["id"], "content": "r"} for c in calls),
        ]
        if rng.random() < 0.7:
            answer = {"role": "assistant", "content": None, "tool_calls": _calls(rng, shape)}
        else:
            answer = {"role": "assistant", "content": "done"}
        attributes = dict(_get_attributes_from_chat_completions_input(sent))
        attributes.update(_get_attributes_from_chat_completions_output([answer]))
        ids = [c["id"] for c in calls] * 2  # the calls, then their results
        cases.append({"attributes": attributes, "sent": ids, "answered": _ids(answer)})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
