"""Tool-call ids set right from the conversation that follows.

Some instrumentations record the wrong id on the tool calls of a model's
output: OpenLLMetry writes the OpenAI Responses item id (``fc_...``) where
the call id the tool result refers to (``call_...``) belongs.  The client
sends the call back in the next request, so a later model call's input shows
the id the conversation really used.  A call in an output whose id no later
input answers takes the id of the call with the same name and arguments in
the next input, when that id is answered and not taken by another call.
The span's own attributes are left as recorded.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from .model import Step
from .stitch import spelled_value


def repair_call_ids(models: Sequence[Step]) -> int:
    """Fix the output tool-call ids of ``models`` (in call order); return how many changed."""
    answered = {_id(p) for s in models for p in _parts(_inputs(s), "tool_call_response")} - {None}
    fixed = 0
    for step, after in itertools.pairwise(models):
        wrong = [p for p in _parts(_outputs(step), "tool_call") if _id(p) not in answered]
        if not wrong:
            continue
        mine = {_id(p) for p in _parts(_outputs(step), "tool_call")}
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


def _id(part: Mapping[str, Any]) -> str | None:
    """A part's call id; an id that is not a string (a malformed event) is none."""
    value = part.get("id")
    return value if isinstance(value, str) else None


def _same_call(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return a.get("name") == b.get("name") and spelled_value(a.get("arguments")) == spelled_value(
        b.get("arguments")
    )


def _inputs(step: Step) -> list[dict[str, Any]]:
    return (step.model.input_messages if step.model is not None else None) or []


def _outputs(step: Step) -> list[dict[str, Any]]:
    return (step.model.output_messages if step.model is not None else None) or []


def _parts(messages: Sequence[Mapping[str, Any]], kind: str) -> Iterator[dict[str, Any]]:
    for message in messages:
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == kind:
                yield part
