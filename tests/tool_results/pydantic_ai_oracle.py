"""What pydantic-ai sends for generated tool results, beside what its telemetry records: the
oracle of ``sent_text``.

Run with the Python of a pydantic-ai install (``python pydantic_ai_oracle.py OUT.json [N] [SEED]``):
draws ``N`` tool results of every shape a tool returns (text, with control and
non-ASCII characters; None; numbers of every magnitude; booleans; empty and
nested lists and dicts; lists of text blocks) and writes, for each, the
``gen_ai.input.messages`` its instrumentation writes for a question and the tool's return and
the text ``ToolReturnPart.model_response_str()`` gives the provider.
"""

from __future__ import annotations

import json
import random
import sys
from importlib.metadata import version
from typing import Any

from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart
from pydantic_ai.models.instrumented import InstrumentationSettings

TEXTS = ["", " ", "null", "[]", "a\nb", "é€×🙂", "\u0000\u001f\u2028/", '{"k": 1}', "42"]
NUMBERS = [0, -7, 2**53 + 1, 2**64, 1.5, -0.25, 1e100, 1e16, 1e15, 1.5e-7, 5e-324, 0.1]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 2 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice(NUMBERS)
    if kind in (3, 4):
        return rng.choice(TEXTS)
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 6:
        return [{"type": "text", "text": rng.choice(TEXTS)} for _ in range(1 + rng.randrange(3))]
    keys = rng.sample(["z", "a", "é", "m", "1"], rng.randrange(4))
    return {k: _value(rng, depth + 1) for k in keys}


def _recorded(settings: InstrumentationSettings, part: ToolReturnPart) -> str:
    # (After the question, as in a run: a request of the tool's return alone, None, would
    # hold no content at all, as with content off.)
    request = ModelRequest(parts=[UserPromptPart("q")])
    messages = settings.messages_to_otel_messages([request, ModelRequest(parts=[part])])
    try:
        from pydantic_ai._instrumentation import safe_to_json  # (as 2.x writes it)

        return safe_to_json(messages).decode()
    except ImportError:
        return json.dumps(messages)  # (as 1.x does)


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    settings = InstrumentationSettings(include_content=True)
    cases = []
    for i in range(n):
        part = ToolReturnPart(tool_name="t", content=_value(rng), tool_call_id=f"call_{i}")
        cases.append({"recorded": _recorded(settings, part), "sent": part.model_response_str()})
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"version": version("pydantic-ai-slim"), "cases": cases}, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
