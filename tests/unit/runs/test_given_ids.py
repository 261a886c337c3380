"""Call ids LiteLLM gave the agent in place of the model's read as the model's.

LiteLLM's ``openai/responses/`` route gives the agent a call's Responses item id
for its call id when the model's is a counter (``call_0``...), and records what
the agent got; its ``raw_gen_ai_request`` span holds the answer as it came.  The
real stack's trace under a model giving counter ids is a conformance case
(``cases/litellm_otel/responses@seed-94278``); many runs mixing the ids models
give are drawn here, the raw answer written as LiteLLM writes it (``str()`` of
the output items).
"""

from __future__ import annotations

import random
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.dialects import litellm
from otel_replay.runs.given_ids import give_back_call_ids
from otel_replay.runs.model import ModelCall, Step, ToolCall
from tests.unit.runs.test_made_ids import GIVEN, _given

_TOOLS = ("lookup_order", "track_shipment", "open_ticket")


def _agent_id(call_id: str, item_id: str) -> str:
    """The id LiteLLM gives the agent (its ``tool_call_id_from_responses_item``)."""
    if call_id and re.fullmatch(r"call_\d+", call_id) is None:
        return call_id
    return item_id or call_id


def _step(kind: str, pos: int, **kw: Any) -> Step:
    return Step(kind, f"{kind} {pos}", f"s{pos:015x}", None, "t" * 32, pos, pos + 1, **kw)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(GIVEN), min_size=1, max_size=3), min_size=1, max_size=4),
    st.booleans(),
    st.integers(0, 2**32),
)
def test_the_model_s_call_ids_come_back_from_the_raw_answer(
    turns: list[list[str]], text_beside: bool, seed: int
) -> None:
    rng = random.Random(seed)
    steps: list[Step] = []
    wanted: list[tuple[str, str]] = []  # per call: (the model's id, the item id if swapped)
    tools: list[tuple[Step, str]] = []
    for t, shapes in enumerate(turns):
        items: list[dict[str, Any]] = []
        if text_beside:
            text = {"type": "output_text", "text": "ok 'quoted' \\ ×", "annotations": []}
            items.append({"type": "message", "id": f"msg_{t}", "content": [text]})
        parts = []
        for i, shape in enumerate(shapes):
            call_id = _given(shape, rng) if shape != "counter" else f"call_{i}"
            item_id = f"fc_{t}_{i}_{rng.randrange(10**6)}"
            name, args = rng.choice(_TOOLS), {"order_id": f"ORD-{rng.randrange(10**4)}"}
            items.append(
                {"type": "function_call", "id": item_id, "call_id": call_id, "name": name}
                | {"arguments": repr(args), "status": "completed"}
            )
            agent = _agent_id(call_id, item_id)
            parts.append({"type": "tool_call", "id": agent, "name": name, "arguments": args})
            swapped = agent == item_id and item_id != call_id
            wanted.append((call_id if swapped else agent, item_id if swapped else ""))
            tool = _step("tool", 100 * t + 50 + i, tool=ToolCall(name, agent, args, derived=True))
            tools.append((tool, wanted[-1][0]))
        output = [{"role": "assistant", "parts": parts}]
        model = _step("model", 100 * t, model=ModelCall(output_messages=output))
        model.scope = litellm.SCOPE
        raw = _step("other", 100 * t + 1, attributes={litellm.RAW_RESPONSES_OUTPUT: str(items)})
        raw.name, raw.scope = litellm.RAW_SPAN, litellm.SCOPE
        model.children.append(raw)
        steps += [model, raw, *(tool for tool, _ in tools[-len(shapes) :])]

    changed = give_back_call_ids(steps)

    got = [
        (p["id"], p.get("item_id", ""))
        for s in steps
        if s.model is not None
        for m in s.model.output_messages or []
        for p in m["parts"]
    ]
    assert got == wanted
    assert [t.tool.call_id for t, _ in tools if t.tool] == [want for _, want in tools]
    assert changed == 2 * sum(1 for _, item in wanted if item)


def test_a_raw_answer_is_read_as_literals_alone() -> None:
    """What the raw answer names is never called: text that is no literal list is none."""
    for text in (
        "[__import__('os').system('true')]",
        "[{'type': 'function_call', 'id': 'fc_1', 'call_id': 'call_0'}",  # cut short
        "[" * 100_000,
        "{'type': 'function_call'}",
        None,
        42,
    ):
        assert litellm.responses_call_ids(text) == {}
    one = "[{'type': 'function_call', 'id': 'fc_1', 'call_id': 'call_0', 'name': 'f'}]"
    assert litellm.responses_call_ids(one) == {"fc_1": "call_0"}
