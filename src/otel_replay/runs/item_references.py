"""Earlier answers as the client sent them back: a reference to the item the server stored.

A Responses API client may send an earlier answer's message back as
``{"type": "item_reference", "id": "msg_..."}`` in place of its content (the
server stored it).  The Vercel AI SDK's OpenAI Responses provider does so for
every text part of an answer it got (unless told not to store answers), and
its GenAI integration records the text, not the reference: its dialect marks
such model spans (:data:`~otel_replay.attributes.ANSWERS_SENT_AS`).

Here, in the input of a marked step, an assistant message whose text is the
text an earlier marked step of the run answered with has that text written as
the reference it was sent as: one ``item_reference`` part where the text was
(``id`` None: the trace holds no item id; ``content`` the text it stands for,
for reading), the message's other parts (its calls) kept.  The step notes it
in :attr:`~.model.ModelCall.derived`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import messages as M
from .model import Step


def reference_answers(models: Sequence[Step]) -> int:
    """Write as references the earlier answers the marked ``models`` (in call order) sent
    back; return how many."""
    answered: set[str] = set()
    done = 0
    for step in models:
        m = step.model
        if m is None or m.answers_sent_as != M.ITEM_REFERENCE:
            continue
        here = 0
        for message in m.input_messages or []:
            text = _text(message)
            if message.get("role") == "assistant" and text is not None and text in answered:
                message["parts"] = _referenced(message["parts"], text)
                here += 1
        if here:
            m.derived.append(
                f"input_messages: {here} earlier answer(s) as the client sent them back, a "
                "reference to the stored message (item_reference; the trace holds no item id)"
            )
            done += here
        for message in m.output_messages or []:
            text = _text(message)
            if message.get("role") == "assistant" and text is not None:
                answered.add(text)
    return done


def _text(message: Mapping[str, Any]) -> str | None:
    """The text of ``message``'s text parts, joined (empty text is text); None without any."""
    parts = [p for p in message.get("parts") or [] if isinstance(p, Mapping)]
    texts = [str(p.get("content") or "") for p in parts if p.get("type") == "text"]
    return "".join(texts) if texts else None


def _referenced(parts: list[Any], text: str) -> list[Any]:
    """``parts`` with their text parts as one reference, where the first was."""
    out: list[Any] = []
    for part in parts:
        if not (isinstance(part, Mapping) and part.get("type") == "text"):
            out.append(part)
        elif not any(isinstance(p, Mapping) and p.get("type") == M.ITEM_REFERENCE for p in out):
            out.append({"type": M.ITEM_REFERENCE, "id": None, "content": text})
    return out
