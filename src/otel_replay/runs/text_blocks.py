"""A LangChain chat model's answer recorded as its first text block alone, read whole.

LangChain's ``ChatGeneration.text`` is a message's first text block when its content
is a list of blocks (langchain-openai's Responses answers: one block per ``output_text``
part), and OpenLLMetry's LangChain instrumentation records that text as the answer when it
is not empty: an answer whose text came in several parts is recorded as its first part.
The task span around the call (the runnable or graph node that called the model) records
what it returned, the message whole
(:func:`~otel_replay.dialects.openllmetry.returned_message`).

Here a model step of that instrumentation whose answer has one text part takes the text
blocks of the message the nearest task span around it returned, when that message's first
text block is the recorded text and its tool calls are the recorded ones (the same call
ids); the recorded calls stay as they are.  The step notes it in
:attr:`~.model.ModelCall.derived`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..dialects.openllmetry import LANGCHAIN_SCOPE, returned_message
from .model import Step

#: How many spans up from the model call the task span that returned its message may be
#: (the runnable around the model, the graph node around that).
_UP = 3


def whole_text_blocks(steps: Sequence[Step]) -> int:
    """Give the model steps of ``steps`` recorded with their first text block alone the
    answer's every text block; return how many."""
    by_id = {s.span_id: s for s in steps}
    done = 0
    for step in steps:
        m = step.model
        if step.kind != "model" or m is None or step.scope != LANGCHAIN_SCOPE:
            continue
        if not m.output_messages or len(m.output_messages) != 1:
            continue
        answer = m.output_messages[0]
        parts: list[Any] = list(answer.get("parts") or [])
        texts = [i for i, p in enumerate(parts) if _kind(p) == "text"]
        whole = _returned(step, by_id) if len(texts) == 1 else None
        if whole is None:
            continue
        blocks = [p for p in whole.get("parts") or [] if _kind(p) == "text"]
        first = parts[texts[0]].get("content")
        if len(blocks) < 2 or blocks[0].get("content") != first:
            continue
        if _call_ids(whole) != _call_ids(answer):
            continue
        at = texts[0]
        m.output_messages[0] = {**answer, "parts": [*parts[:at], *blocks, *parts[at + 1 :]]}
        m.derived.append(
            f"output_messages: the answer's {len(blocks)} text blocks from the message the "
            "task span around the call returned (the span records the first alone)"
        )
        done += 1
    return done


def _kind(part: Any) -> Any:
    return part.get("type") if isinstance(part, Mapping) else None


def _call_ids(message: Mapping[str, Any]) -> list[Any]:
    return [p.get("id") for p in message.get("parts") or [] if _kind(p) == "tool_call"]


def _returned(step: Step, by_id: Mapping[str, Step]) -> dict[str, Any] | None:
    """The message the nearest task span around ``step`` returned (None: none found)."""
    parent = by_id.get(step.parent_span_id or "")
    for _ in range(_UP):
        if parent is None:
            return None
        found = returned_message((parent.attributes or {}).get("traceloop.entity.output"))
        if found is not None:
            return found
        parent = by_id.get(parent.parent_span_id or "")
    return None
