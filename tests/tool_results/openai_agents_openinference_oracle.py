"""What OpenInference's openai-agents instrumentation records of generated tool results sent
on the Responses API, beside what the OpenAI Agents SDK sends: the oracle of the
``openinference`` dialect's tool results there.

Run with the Python of an install of openai-agents and
openinference-instrumentation-openai-agents
(``python openai_agents_openinference_oracle.py OUT.json [N] [SEED]``): draws ``N`` tool
return values (text, text that spells a list of parts, lists of text blocks, of bare
strings and of image blocks, a text and an image in one list, numbers, None, objects, an
error result, with non-ASCII and control characters), makes each the
``function_call_output`` item the SDK sends (its own ``ItemHelpers.tool_call_output_item``:
a list of known blocks becomes ``input_text``/``input_image`` parts, anything else text) and
records the request's input items as the instrumentation records a response span's input
(its own ``_get_attributes_from_input``, and ``input.value`` as it writes it).
"""

from __future__ import annotations

import json
import random
import sys
from typing import Any

from agents.items import ItemHelpers
from openai.types.responses import ResponseFunctionToolCall
from openinference.instrumentation import safe_json_dumps
from openinference.instrumentation.openai_agents._processor import _get_attributes_from_input

TEXTS = ["", "a", "é€×🙂", "tab\there\nline", "\u0000\u2028", '"quoted"', "[{}]", "42", "None"]
PARTS_TEXT = '[{"type": "input_text", "text": "a"}, {"type": "input_text", "text": "b"}]'
#: An image the SDK sends as an ``input_image`` part, and an MCP one it sends as text.
IMAGE = {"type": "image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}
MCP_IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}


def _item(rng: random.Random) -> Any:
    kind = rng.randrange(4)
    if kind == 0:
        return rng.choice(TEXTS)
    if kind == 1:
        return rng.choice([IMAGE, MCP_IMAGE])
    return {"type": "text", "text": rng.choice(TEXTS) + rng.choice(TEXTS)}


def _returned(rng: random.Random) -> Any:
    kind = rng.randrange(8)
    if kind == 0:
        return rng.choice([*TEXTS, PARTS_TEXT])
    if kind == 1:
        return rng.choice([0, -1, 2**63, 1.5e-300, True, None])
    if kind == 2:
        return {"status": rng.choice(TEXTS), "items": [1, "x"], "error": None}
    if kind == 3:
        return {"error": rng.choice(TEXTS)}
    if kind == 4:
        return rng.choice([IMAGE, MCP_IMAGE, [{"type": "text", "text": "a"}, IMAGE]])
    return [_item(rng) for _ in range(1 + rng.randrange(3))]


def main() -> None:
    out, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 200
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 35)
    cases = []
    for i in range(n):
        call = ResponseFunctionToolCall(
            type="function_call", call_id=f"call_{i}", name="t", arguments="{}", id=f"fc_{i}"
        )
        output = ItemHelpers.tool_call_output_item(call, _returned(rng))
        items = [
            {"role": "user", "content": "q"},
            call.model_dump(exclude_none=True),
            output,
        ]
        attributes = dict(_get_attributes_from_input(items))
        attributes["input.value"] = safe_json_dumps(items)
        attributes["input.mime_type"] = "application/json"
        cases.append({"attributes": attributes, "sent": output["output"]})
    with open(out, "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False)


if __name__ == "__main__":
    main()
