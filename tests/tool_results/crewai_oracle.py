"""What CrewAI's ``ToolUsage`` makes of generated tool results: the oracle of ``tool_result``.

Run with the Python of a CrewAI install (``python crewai_oracle.py OUT.json [N] [SEED]``):
draws ``N`` agents' tools (names and descriptions with newlines, non-ASCII text,
braces, backticks) and results of every shape a tool returns (text, JSON-like
dicts and lists, numbers, None, booleans, empty text, text that itself holds
CrewAI's words), and writes each result's ``str`` beside what
``ToolUsage._format_result`` made of it at the use that appends the reminder of
the tools (and at one that does not).
"""

from __future__ import annotations

import json
import random
import sys
from types import SimpleNamespace
from typing import Any

from crewai.tools import tool as make_tool
from crewai.tools.tool_usage import ToolUsage

TEXTS = [
    "",
    " ",
    "None",
    "a\n\nb",
    "é€×🙂",
    "{tools}",
    "```\nx\n```",
    "\n\nYou ONLY have access to the following tools",
    "Final Answer: no",
]


def _value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(8 if depth < 2 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice([True, False])
    if kind == 2:
        return rng.choice([0, -7, 2**53 + 1, 1.5, 1e100])
    if kind in (3, 4, 5):
        return rng.choice(TEXTS) + rng.choice(TEXTS)
    if kind == 6:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    return {rng.choice(["a", "é", "k"]): _value(rng, depth + 1) for _ in range(rng.randrange(3))}


def _tools(rng: random.Random) -> list[Any]:
    tools = []
    for i in range(1 + rng.randrange(3)):
        doc = rng.choice(TEXTS[1:]) + f" tool {i}"

        def run(order_id: str) -> str:
            return order_id

        run.__doc__ = doc
        tools.append(make_tool(f"tool_{i}_{rng.choice(['x', 'é', 'y_z'])}")(run))
    return tools


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 300
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    cases = []
    for _ in range(n):
        tools = _tools(rng)
        result = _value(rng)
        every = rng.choice([3, 4])
        used = rng.randrange(every)
        usage = ToolUsage.__new__(ToolUsage)
        # What _format_result reads: the task's count of uses, how often it reminds, the tools.
        usage.task = SimpleNamespace(used_tools=used)
        usage._remember_format_after_usages = every
        usage.tools_description = ToolUsage.__init__.__globals__[
            "render_text_description_and_args"
        ](tools)
        usage.tools_names = ToolUsage.__init__.__globals__["get_tool_names"](tools)
        if hasattr(ToolUsage, "_i18n") or "I18N_DEFAULT" not in ToolUsage.__init__.__globals__:
            usage._i18n = ToolUsage.__init__.__globals__["I18N"]()
        sent = usage._format_result(result)
        cases.append({"result": str(result), "sent": sent, "reminded": (used + 1) % every == 0})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
