"""Earlier answers as the client sent them back: a reference to the item the server stored.

A Responses API client may send an earlier answer's message back as
``{"type": "item_reference", "id": "msg_..."}`` in place of its content (the
server stored it).  The Vercel AI SDK's OpenAI Responses provider does so for
every text part of an answer it got (unless told not to store answers), and
its GenAI integration records the text, not the reference: its dialect marks
such model spans (:data:`~otel_replay.attributes.ANSWERS_SENT_AS`) and says
how the messages were sent (:func:`otel_replay.dialects.vercel_ai.answers_as_references`).

Here, in the input of a marked step, the assistant messages whose text an
earlier marked step of the run answered with are written as the references
they were sent as.  The step notes it in :attr:`~.model.ModelCall.derived`.

A call that got no answer (its answer cut partway through: the span failed, with
no response id) is not marked, the mark being read off the response id; it was
sent by the same provider as the marked calls before it of the same provider and
model, and is read as marked too.
"""

from __future__ import annotations

from collections.abc import Sequence

from .. import messages as M
from ..dialects.vercel_ai import answer_text, answers_as_references
from .model import Step


def reference_answers(models: Sequence[Step]) -> int:
    """Write as references the earlier answers the marked ``models`` (in call order) sent
    back; return how many."""
    answered: set[str] = set()
    marked: set[tuple[str | None, str | None]] = set()  # (provider, model) of marked calls
    done = 0
    for step in models:
        m = step.model
        if m is None:
            continue
        if (
            m.answers_sent_as is None
            and _unanswered(step)
            and (m.provider, m.request_model) in marked
        ):
            m.answers_sent_as = M.ITEM_REFERENCE
        if m.answers_sent_as != M.ITEM_REFERENCE:
            continue
        marked.add((m.provider, m.request_model))
        here = answers_as_references(m.input_messages or [], answered)
        if here:
            m.derived.append(
                f"input_messages: {here} earlier answer(s) as the client sent them back, a "
                "reference to the stored message (item_reference; the trace holds no item id)"
            )
            done += here
        for message in m.output_messages or []:
            text = answer_text(message)
            if message.get("role") == "assistant" and text is not None:
                answered.add(text)
    return done


def _unanswered(step: Step) -> bool:
    """A call that got no answer: no output, no response id (its answer was cut)."""
    m = step.model
    return m is not None and not m.output_messages and m.response_id is None
