"""Tool-call ids set right from the conversation that follows.

Some instrumentations record the wrong id on the tool calls of a model's
output: OpenLLMetry writes the OpenAI Responses item id (``fc_...``) where
the call id the tool result refers to (``call_...``) belongs.  The client
sends the call back in the next request, so a later model call's input shows
the id the conversation really used.  A call in an output whose id no later
input answers takes the id of the call with the same name and arguments in
the next input, when that id is answered and not taken by another call, nor by a
call the step's own input holds (one made before, maybe with the same arguments).

Newer releases write the item id in the inputs too, so only the results
carry the call id: within one input, the calls no result answers and the
results that answer no call, as many of each and each result after its
call, pair in order, and the call's id (everywhere in the run) becomes its
result's.  The span's own attributes are left as recorded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..same_message import spelled_value
from .model import Step

#: How an OpenAI Responses function-call item's id begins: a call whose recorded id begins
#: so after :func:`repair_call_ids` holds its item id where its call id belongs, and no
#: later request of the run shows the call id (the run ended before the calls were sent
#: back: a cut, a limit).
ITEM_ID_PREFIX = "fc_"


def item_id_in_place(call: Mapping[str, Any]) -> bool:
    """Whether the tool call ``call`` (a ``tool_call`` part) holds a Responses item id for
    its call id."""
    return str(call.get("id") or "").startswith(ITEM_ID_PREFIX)


def repair_call_ids(models: Sequence[Step]) -> int:
    """Fix the output tool-call ids of ``models`` (in call order); return how many changed."""
    fixed = _pair_in_order(models)
    answered = {_id(p) for s in models for p in _parts(_inputs(s), "tool_call_response")} - {None}
    for step, after in itertools.pairwise(models):
        wrong = [p for p in _parts(_outputs(step), "tool_call") if _id(p) not in answered]
        if not wrong:
            continue
        # A call this step's own input holds was made before: the model may make it again
        # with the same arguments, and the next input then holds both.
        mine = {_id(p) for p in _parts([*_inputs(step), *_outputs(step)], "tool_call")}
        offered = [
            p
            for p in _parts(_inputs(after), "tool_call")
            if _id(p) in answered and _id(p) not in mine
        ]
        for part in wrong:
            match = next((c for c in offered if _same_call(c, part)), None)
            if match is None:
                continue
            offered.remove(match)
            part["id"] = match["id"]
            fixed += 1
    return fixed


def _pair_in_order(models: Sequence[Step]) -> int:
    """Item ids on calls whose results carry the call ids: renamed by order within an input."""
    renamed: dict[str, str] = {}
    for step in models:
        items = [
            (i, p) for i, p in enumerate(_parts(_inputs(step), "tool_call", "tool_call_response"))
        ]
        calls = {_id(p) for _, p in items if p["type"] == "tool_call"}
        results = {_id(p) for _, p in items if p["type"] == "tool_call_response"}
        open_calls = [
            (i, p) for i, p in items if p["type"] == "tool_call" and _id(p) not in results
        ]
        orphans = [
            (i, p) for i, p in items if p["type"] == "tool_call_response" and _id(p) not in calls
        ]
        if not open_calls or len(open_calls) != len(orphans):
            continue
        pairs = list(zip(open_calls, orphans, strict=True))
        if any(ci >= ri or _id(c) is None or _id(r) is None for (ci, c), (ri, r) in pairs):
            continue
        for (_, call), (_, result) in pairs:
            renamed.setdefault(str(_id(call)), str(_id(result)))
    if not renamed:
        return 0  # most runs: every call has its result, by its own id
    fixed = 0
    for step in models:
        for part in [*_parts(_inputs(step), "tool_call"), *_parts(_outputs(step), "tool_call")]:
            new = renamed.get(str(_id(part)))
            if new is not None:
                part["id"] = new
                fixed += 1
    return fixed


def _id(part: Mapping[str, Any]) -> str | None:
    value = part.get("id")
    return value if isinstance(value, str) and value else None


def _same_call(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("name") == b.get("name") and spelled_value(a.get("arguments")) == spelled_value(
        b.get("arguments")
    )


def _inputs(step: Step) -> list[dict[str, Any]]:
    return (step.model.input_messages if step.model is not None else None) or []


def _outputs(step: Step) -> list[dict[str, Any]]:
    return (step.model.output_messages if step.model is not None else None) or []


def _parts(messages: Sequence[Mapping[str, Any]], *kinds: str) -> Iterator[dict[str, Any]]:
    for message in messages:
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") in kinds:
                yield part
