"""What OpenTelemetry's openai-agents bridge records for generated tool messages: the oracle
of the ``openai_agents`` dialect's repair of them.

Run with the Python of an install of opentelemetry-instrumentation-openai-agents-v2
(``python openai_agents_otel_oracle.py OUT.json [N] [SEED]``): draws ``N`` Chat
Completions tool messages (text, and lists of text blocks, other blocks and bare
strings, with non-ASCII and control characters) and writes each beside the
GenAI message the bridge's own ``_normalize_messages_to_role_parts`` makes of it
(the result twice: as text parts and as a ``tool_call_response``).
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from opentelemetry.instrumentation.openai_agents.span_processor import GenAISemanticProcessor

TEXTS = ["a", "é€×🙂", "tab\there\nline", "\u0000\u2028", '"quoted"', "[{}]", "42", "None"]


def _item(rng: random.Random) -> Any:
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice(TEXTS)
    if kind == 1:
        return {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    return {"type": "text", "text": rng.choice(TEXTS) + rng.choice(TEXTS)}


def _content(rng: random.Random) -> Any:
    if rng.random() < 0.3:
        return rng.choice(TEXTS)
    return [_item(rng) for _ in range(1 + rng.randrange(3))]


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    processor = GenAISemanticProcessor(include_sensitive_data=True)
    processor.include_sensitive_data = True  # (whatever the environment says)
    cases = []
    for i in range(n):
        sent = {"role": "tool", "tool_call_id": f"call_{i}", "content": _content(rng)}
        (recorded,) = processor._normalize_messages_to_role_parts([sent])
        cases.append({"recorded": recorded, "sent": sent})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
