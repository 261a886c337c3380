"""What OpenLLMetry's LangChain instrumentation records for generated tool results, beside
what langchain-openai sends: the oracle of ``openllmetry.tool_content``.

Run with the Python of an install of opentelemetry-instrumentation-langchain and
langchain-openai (``python langchain_openllmetry_oracle.py OUT.json [N] [SEED]``):
draws ``N`` ``ToolMessage`` contents (text, JSON-looking text, lists of text and
other content blocks with non-ASCII and control characters), records each through
the instrumentation's ``set_chat_request`` on a span that keeps its attributes,
and writes the recorded ``gen_ai.input.messages`` beside the message
``_convert_message_to_dict`` puts in the Chat Completions request.
"""

from __future__ import annotations

import json
import os
import random
import sys
from typing import Any

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_openai.chat_models.base import _convert_message_to_dict
from opentelemetry.instrumentation.langchain.span_utils import SpanHolder, set_chat_request

TEXTS = ["", "a", "é€×🙂", "tab\there\nline", "\u0000\u2028", '"quoted"', "[{}]", "42"]


class _Span:
    """A span that keeps the attributes set on it."""

    def __init__(self) -> None:
        self.attributes: dict[str, Any] = {}

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value

    def is_recording(self) -> bool:
        return True


def _block(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.8:
        return {"type": "text", "text": rng.choice(TEXTS) + rng.choice(TEXTS)}
    return {"type": "json", "json": {rng.choice(["a", "é"]): rng.choice([1, None, "ü", [2.5]])}}


def _content(rng: random.Random) -> Any:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice(TEXTS)
    if kind == 1:  # text that looks like recorded blocks, with other spacing
        return json.dumps([_block(rng)], ensure_ascii=False, separators=(",", ":"))
    return [_block(rng) for _ in range(1 + rng.randrange(3))]


def main() -> None:
    os.environ.setdefault("TRACELOOP_TRACE_CONTENT", "true")
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    cases = []
    for i in range(n):
        message = ToolMessage(content=_content(rng), tool_call_id=f"call_{i}")
        span = _Span()
        holder = SpanHolder(
            span,
            token=None,
            context=None,
            children=[],
            workflow_name="w",
            entity_name="e",
            entity_path="",
        )
        set_chat_request(span, {}, [[HumanMessage(content="q"), message]], {}, holder)
        cases.append(
            {
                "recorded": span.attributes["gen_ai.input.messages"],
                "sent": _convert_message_to_dict(message)["content"],
            }
        )
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
