"""What Strands' model providers send for generated tool results: the oracle of ``sent_result``.

Run with the Python of a Strands install (``python strands_oracle.py OUT.json [N] [SEED]``):
draws ``N`` tool results made of ``text`` and ``json`` blocks (seeded; texts
with newlines, non-ASCII and control characters, JSON of every type, key
orders) and writes each beside what ``OpenAIModel.format_request_tool_message``
and ``OpenAIResponsesModel._format_request_tool_message`` make of it.
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from strands.models.openai import OpenAIModel
from strands.models.openai_responses import OpenAIResponsesModel

TEXTS = ["", " ", "a", "two\nlines", "tab\there", "é€×🙂", "\u0000nul", '{"k": 1}', "[1, 2]", "42"]


def _json(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(7 if depth < 2 else 5)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -7, 2**53 + 1, 1.5, -0.25, 1e100])
    if kind == 3:
        return rng.choice(TEXTS)
    if kind == 4:
        return rng.choice(["ü", "z", "a"])
    if kind == 5:
        return [_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    keys = rng.sample(["z", "a", "é", "m", "1"], rng.randrange(4))
    return {k: _json(rng, depth + 1) for k in keys}


def _block(rng: random.Random) -> dict[str, Any]:
    return {"text": rng.choice(TEXTS)} if rng.random() < 0.5 else {"json": _json(rng)}


def main() -> None:
    out, n, seed = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300, 35
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else seed)
    cases = []
    for i in range(n):
        blocks = [_block(rng) for _ in range(rng.randrange(4))]
        result = {
            "toolUseId": f"call_{i}",
            "status": rng.choice(["success", "error"]),
            "content": blocks,
        }
        cases.append(
            {
                "content": blocks,
                "chat": OpenAIModel.format_request_tool_message(json.loads(json.dumps(result)))[
                    "content"
                ],
                "responses": OpenAIResponsesModel._format_request_tool_message(result)["output"],
            }
        )
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
