"""What two instrumentations record of an answer with text beside its tool calls: the
oracle of the reader's rebuild of such answers (``tests/unit/dialects/test_text_beside_calls.py``).

Run with the Python of an install of the instrumentation named first
(``python text_beside_calls_oracle.py openai_v2|openai_agents|semantic_kernel OUT.json
[N] [SEED]``).
It draws ``N`` Chat Completions answers: text (empty, non-ASCII, control
characters) beside one to four calls whose arguments are spelled as a model may
spell them, and writes each beside what the instrumentation's own code records:

- ``openai_v2`` (opentelemetry-instrumentation-openai-v2): the GenAI messages its
  ``_prepare_output_messages`` makes of the answer and its ``_prepare_input_messages``
  of the next request, which sends the answer back;
- ``openai_agents`` (the openai-agents SDK with opentelemetry-instrumentation-openai-
  agents-v2): the generation span's output as the bridge's
  ``_normalize_output_messages_to_role_parts`` records the SDK's ``[message.model_dump()]``,
  and the next request as the SDK builds it (``Converter.message_to_output_items``,
  then ``items_to_messages``) and the bridge records it;
- ``semantic_kernel``: the body of the ``gen_ai.choice`` log record its
  model diagnostics write of the answer (``ChatMessageContent.to_dict()``).
"""

from __future__ import annotations

import json
import random
import sys
import types
from typing import Any

TEXTS = ["", "Je regarde ça…", "é€×🙂", "tab\there\nline", "\u2028 \u0000", '"quoted"', "x" * 80]
SYSTEM = {"role": "system", "content": "You are a support agent."}
USER = {"role": "user", "content": "Où est ma commande ? 🙏"}


def _arguments(rng: random.Random, i: int) -> str:
    value = {"order_id": f"ORD-{i}", "note": rng.choice(TEXTS[1:])}
    if rng.random() < 0.5:
        value = dict(reversed(list(value.items())))
    return json.dumps(
        value, ensure_ascii=rng.random() < 0.5, separators=rng.choice([None, (",", ":")])
    )


def _answer(rng: random.Random, n: int) -> dict[str, Any]:
    calls = [
        {
            "id": f"call_{n}_{k}",
            "type": "function",
            "function": {
                "name": rng.choice(["lookup", "track", "open_ticket"]),
                "arguments": _arguments(rng, k),
            },
        }
        for k in range(1 + rng.randrange(4))
    ]
    return {"role": "assistant", "content": rng.choice(TEXTS), "tool_calls": calls}


def _results(answer: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in answer["tool_calls"]
    ]


def _openai_v2(answer: dict[str, Any]) -> dict[str, Any]:
    from openai.types.chat import ChatCompletionMessage
    from opentelemetry.instrumentation.openai_v2 import utils

    choice = types.SimpleNamespace(
        message=ChatCompletionMessage.model_validate(answer), finish_reason="tool_calls"
    )
    (output,) = utils._prepare_output_messages([choice])
    request = [SYSTEM, USER, answer, *_results(answer)]
    return {
        "output": [_plain(output)],
        "next_input": [_plain(m) for m in utils._prepare_input_messages(request)],
    }


def _plain(message: Any) -> Any:
    import dataclasses

    return json.loads(json.dumps(dataclasses.asdict(message), default=str))


def _openai_agents(answer: dict[str, Any]) -> dict[str, Any]:
    from agents.models.chatcmpl_converter import Converter
    from openai.types.chat import ChatCompletionMessage
    from opentelemetry.instrumentation.openai_agents.span_processor import GenAISemanticProcessor

    processor = GenAISemanticProcessor(include_sensitive_data=True)
    processor.include_sensitive_data = True  # (whatever the environment says)
    message = ChatCompletionMessage.model_validate(answer)
    span_data = types.SimpleNamespace(output=[message.model_dump()], response=None)
    output = processor._normalize_output_messages_to_role_parts(span_data)
    items = [
        item.model_dump(exclude_unset=True) for item in Converter.message_to_output_items(message)
    ]
    outputs = [
        {"type": "function_call_output", "call_id": c["id"], "output": "ok"}
        for c in answer["tool_calls"]
    ]
    request = [SYSTEM, *Converter.items_to_messages([USER, *items, *outputs])]
    return {"output": output, "next_input": processor._normalize_messages_to_role_parts(request)}


def _semantic_kernel(answer: dict[str, Any]) -> dict[str, Any]:
    from semantic_kernel.contents import ChatMessageContent, FunctionCallContent, TextContent
    from semantic_kernel.contents.utils.author_role import AuthorRole

    items: list[Any] = [TextContent(text=answer["content"])]
    for call in answer["tool_calls"]:
        fn = call["function"]
        items.append(FunctionCallContent(id=call["id"], name=fn["name"], arguments=fn["arguments"]))
    message = ChatMessageContent(role=AuthorRole.ASSISTANT, items=items)
    # The body of the gen_ai.choice record its model_diagnostics write for an answer.
    return {"choice": json.dumps({"message": message.to_dict(), "finish_reason": "tool_calls"})}


def main() -> None:
    which, out = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 35)
    record = {
        "openai_v2": _openai_v2,
        "openai_agents": _openai_agents,
        "semantic_kernel": _semantic_kernel,
    }[which]
    cases = []
    for i in range(n):
        answer = _answer(rng, i)
        cases.append({"sent": answer, "results": _results(answer), **record(answer)})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
