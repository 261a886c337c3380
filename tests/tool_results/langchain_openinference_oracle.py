"""What OpenInference's LangChain instrumentation records for generated tool results, beside
what langchain-openai sends: the oracle of the ``openinference`` dialect's tool messages.

Run with the Python of an install of openinference-instrumentation-langchain and
langchain-openai (``python langchain_openinference_oracle.py OUT.json [N] [SEED]``):
draws ``N`` ``ToolMessage`` contents (text, and lists of text blocks and bare
strings, with non-ASCII, control characters and empty texts; empty text and the
empty list, which it flattens to no content at all), records each as the
instrumentation records a chat model run's inputs (LangChain's serialized
messages, through its own ``_input_messages`` and ``_flatten``, and
``input.value`` through ``_convert_io``) and writes them beside the content
``_convert_message_to_dict`` puts in the Chat Completions request.
(OpenInference records no content block of another type, so none is drawn.)
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from langchain_core.load import dumpd
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai.chat_models.base import _convert_message_to_dict
from openinference.instrumentation.langchain._tracer import (
    _as_input,
    _convert_io,
    _flatten,
    _input_messages,
)

TEXTS = ["", "a", "é€×🙂", "tab\there\nline", "\u0000\u2028", '"quoted"', "[{}]", "42"]


def _item(rng: random.Random) -> Any:
    text = rng.choice(TEXTS) + rng.choice(TEXTS)
    return text if rng.random() < 0.2 else {"type": "text", "text": text}


def _content(rng: random.Random) -> Any:
    if rng.random() < 0.3:
        return rng.choice(TEXTS)
    return [_item(rng) for _ in range(rng.randrange(4))]


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    cases = []
    for i in range(n):
        message = ToolMessage(content=_content(rng), tool_call_id=f"call_{i}", name="t")
        # (A chat model run's inputs, as the tracer is given them: serialized messages.)
        inputs = {"messages": [[dumpd(HumanMessage(content="q")), dumpd(message)]]}
        attributes = dict(_flatten(_input_messages(inputs)))
        attributes.update(_as_input(_convert_io(inputs)))
        cases.append(
            {"attributes": attributes, "sent": _convert_message_to_dict(message)["content"]}
        )
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
