"""What LlamaIndex sends for generated tool outputs, beside what OpenInference records of them:
the oracle of ``unwrap_result`` for its ``ToolOutput``.

Run with the Python of a llama-index-core install (``python llamaindex_oracle.py OUT.json [N]
[SEED]``): draws ``N`` tool return values (text, empty text, lists of text blocks, the empty
list, numbers, dicts), makes each the ``ToolOutput`` its ``FunctionTool`` makes, and writes
the output as OpenInference records it (``model_dump_json``, the tool span's
``output.value``) beside ``str(output)``, the text its agents send the model.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from typing import Any

from llama_index.core.tools import FunctionTool

TEXTS = ["", "a", "é€×🙂", "tab\there\nline", "\u0000\u2028", '"quoted"', "[{}]", "42"]


def _value(rng: random.Random) -> Any:
    kind = rng.randrange(6)
    if kind == 0:
        return rng.choice(TEXTS)
    if kind == 1:
        return []
    if kind == 2:
        return [{"type": "text", "text": rng.choice(TEXTS)} for _ in range(1 + rng.randrange(3))]
    if kind == 3:
        return rng.choice([0, 42, -7, 3.25])
    if kind == 4:
        return {rng.choice(["a", "é"]): rng.choice(TEXTS)}
    return None


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    cases = []
    for _ in range(n):
        value = _value(rng)

        def tool(order_id: str, value: Any = value) -> Any:
            """A tool."""
            return value

        output = asyncio.run(FunctionTool.from_defaults(fn=tool).acall(order_id="x"))
        cases.append({"recorded": output.model_dump_json(), "sent": str(output)})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
