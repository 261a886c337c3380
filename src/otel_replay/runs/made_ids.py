"""Tool-call ids a framework made for calls its model sent without one.

A model may send a tool call with no id, or an empty one (Chat Completions
lets a server leave it out: Ollama and other OpenAI-compatible servers do).
Some frameworks then give the call an id of their own and record it as the
model's: pydantic-ai ``pyd_ai_<32 hex>``, Google ADK ``adk-<uuid4>`` (streamed
through LiteLLM, the call's index), the
Vercel AI SDK 16 letters and digits.  Their
dialects mark the model spans with the form
(:data:`~otel_replay.attributes.CALL_IDS_MADE_AS`); an id of that form is the
framework's, which no provider writes, so the answer on the wire carried none.
CrewAI's (``call_`` and a Python object's ``id()``) are on the model spans of
its client's instrumentation, which know nothing of CrewAI: a run with CrewAI's
own spans reads them on every model step it has that bears no mark.

This repair runs last: the tool spans are joined, and tool steps derived, by
the made id first (the framework's tool spans and its later requests carry
it).  Then each such call in a model step's output reads as the model sent
it, with an empty id, and the tool steps that ran it have none: ``serve``
answers as the model did, and an in-process replay, where the framework
makes a new id, finds each tool step by its tool and arguments.  Later
inputs keep the made id where they hold it: the framework sent it.  A tool
step with a made id no output holds (Google ADK 1.x records the answer as the
model gave it, and the tool run under the id it made) loses it before tool
spans are joined, and is joined by its tool and arguments
(:func:`forget_unmatched_ids`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

from ..dialects import crewai
from .model import Step

_UUID4 = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"

#: Each mark's form of the ids its framework makes (none a provider gives).
FORMS: dict[str, re.Pattern[str]] = {
    # pydantic-ai's ``_utils.generate_tool_call_id``: ``pyd_ai_`` and a uuid4's hex.
    "pyd_ai": re.compile(r"pyd_ai_[0-9a-f]{32}"),
    # Google ADK's ``generate_client_function_call_id``: ``adk-`` and a uuid4; streamed
    # through LiteLLM, the call's index in the answer (``str(index)``).  A model's own id
    # of digits alone would read as none too: its answer is then served with an empty id.
    "adk": re.compile(f"adk-{_UUID4}|[0-9]+"),
    # The Vercel AI SDK's ``generateId()``: 16 letters and digits.  A provider's own ids
    # have a prefix (``call_``, ``toolu_``, ``tooluse_``) or another length (Mistral's 9).
    "ai_sdk": re.compile(r"[0-9A-Za-z]{16}"),
    # CrewAI's ``f"call_{id(tool_call)}"``: an address, in decimal (8 digits and more).  A
    # provider's ``call_`` ids have 24 letters and digits; a counter's (``call_0``) one or two.
    "crewai": re.compile(r"call_[1-9][0-9]{7,19}"),
}


def unmake_call_ids(steps: Sequence[Step]) -> int:
    """Give the calls of ``steps``' model outputs whose id their framework made the empty
    id they came with, and the tool steps that ran them none; return how many changed."""
    made: set[str] = set()
    changed = 0
    of_run = _run_form(steps)
    for step in steps:
        form = _form(step) or (of_run if step.model is not None else None)
        if form is None:
            continue
        for part in _calls(_outputs(step)):
            call_id = part.get("id")
            if isinstance(call_id, str) and form.fullmatch(call_id):
                made.add(call_id)
                part["id"] = ""
                changed += 1
    if not made:
        return 0  # most runs: the model's own ids
    for step in steps:
        if step.tool is not None and step.tool.call_id in made:
            step.tool.call_id = None
            changed += 1
    return changed


def forget_unmatched_ids(steps: Sequence[Step]) -> int:
    """Take from ``steps``' tool steps the made id that no model output of the run holds
    (the outputs hold the model's empty id: Google ADK 1.x records the answer as the
    model gave it and the tool run under the id it made), so that they are joined to the
    model's calls by tool and arguments; return how many changed."""
    forms = {f for s in steps if (f := _form(s)) is not None} | {
        f for f in [_run_form(steps)] if f is not None
    }
    if not forms:
        return 0  # most runs: no stack that makes ids
    # An id of another type (a damaged trace's list or object) holds no made id.
    held = {i for s in steps for p in _calls(_outputs(s)) if isinstance(i := p.get("id"), str)}
    changed = 0
    for step in steps:
        t = step.tool
        if t is None or not t.call_id or t.call_id in held:
            continue
        if any(f.fullmatch(t.call_id) for f in forms):
            t.call_id = None
            changed += 1
    return changed


def in_tree(roots: Sequence[Step]) -> list[Step]:
    """Every step under ``roots``, those a repair before this one added among them."""
    out: list[Step] = []
    stack = list(reversed(roots))
    while stack:
        step = stack.pop()
        out.append(step)
        stack.extend(reversed(step.children))
    return out


def _form(step: Step) -> re.Pattern[str] | None:
    m = step.model
    return FORMS.get(m.call_ids_made_as or "") if m is not None else None


def _run_form(steps: Sequence[Step]) -> re.Pattern[str] | None:
    """The form of the ids the framework of ``steps`` makes, where its own spans tell it
    (not its model spans: CrewAI's are its client instrumentation's)."""
    return FORMS["crewai"] if any(s.scope in crewai.SCOPES for s in steps) else None


def _outputs(step: Step) -> list[dict[str, Any]]:
    return (step.model.output_messages if step.model is not None else None) or []


def _calls(messages: Sequence[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for message in messages:
        for part in message.get("parts") or []:
            if isinstance(part, dict) and part.get("type") == "tool_call":
                yield part
