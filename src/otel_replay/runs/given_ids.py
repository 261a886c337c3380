"""Call ids a client gave the agent in place of the model's.

LiteLLM's ``openai/responses/`` route hands the agent a call's Responses item
id (``fc_...``) for its call id when the model's call id is a counter
(``call_0``, ``call_1``..., restarting in each answer, as some servers give
them), and sends that id back to the model.  Its tracing records the answer
the agent got, so the model step's calls and the tool steps that ran them
hold the item id; LiteLLM's ``raw_gen_ai_request`` span under the model call
holds the answer as it came, each item with both ids
(:func:`~otel_replay.dialects.litellm.responses_call_ids`).

This repair runs last, once tool steps are joined by the id the agent used:
each such call in a model step's output reads as the model sent it, its call
id, with the item id kept beside it (``item_id``, which ``serve`` answers
with, so that LiteLLM gives the agent the same id again), and the tool steps
that ran it take the model's call id.  Later inputs keep the item id: LiteLLM
sent it.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..dialects import litellm
from .model import Step


def give_back_call_ids(steps: Sequence[Step]) -> int:
    """Give the calls of ``steps``' model outputs whose id LiteLLM replaced the model's
    call id, and the tool steps that ran them, that call id; return how many changed."""
    given: dict[str, str] = {}
    changed = 0
    for step in steps:
        if step.model is None or step.scope != litellm.SCOPE:
            continue
        ids: dict[str, str] = {}
        for child in step.children:
            if child.name == litellm.RAW_SPAN and child.scope == litellm.SCOPE:
                ids.update(
                    litellm.responses_call_ids(child.attributes.get(litellm.RAW_RESPONSES_OUTPUT))
                )
        if not ids:
            continue  # most model calls: the model's own ids
        for message in step.model.output_messages or []:
            for part in message.get("parts") or []:
                item_id = part.get("id") if part.get("type") == "tool_call" else None
                if isinstance(item_id, str) and item_id in ids:
                    part["id"], part["item_id"] = ids[item_id], item_id
                    given[item_id] = ids[item_id]
                    changed += 1
    for step in steps:
        if step.tool is not None and step.tool.call_id in given:
            step.tool.call_id = given[step.tool.call_id]
            changed += 1
    return changed
