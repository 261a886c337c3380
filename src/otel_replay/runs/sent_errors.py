"""Tool errors as the model was sent them, where the messages keep only the error's text.

Some stacks record a failed tool's result in the next request as the bare
error text although the provider sent it wrapped as ``{"error": <text>}``:
the Vercel AI SDK's GenAI integration (its OpenAI providers send
``JSON.stringify({error: text})``: ``error_object_text``) and pydantic-ai
from 2.60 (providers with no error channel of their own: ``error_object``).
Their dialects mark such model spans
(:data:`~otel_replay.attributes.TOOL_ERRORS_SENT_AS`); here the results of
the calls whose tool step failed are wrapped as they were sent, and the step
notes it in :attr:`~.model.ModelCall.derived`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .. import messages as M
from ..dialects.vercel_ai import stringify
from .model import Step
from .sent_results import SentResults


def wrap_sent_errors(steps: Sequence[Step]) -> int:
    """Wrap the error results of the marked model steps of one run; return how many.

    A result is a failed call's when it answers that very call: the call of the model
    step that asked for the failed tool (the last one before it with a call of its id),
    since ids may repeat across a run's steps."""
    models = sorted(
        (s for s in steps if s.kind == "model" and s.model is not None),
        key=lambda s: (s.start_ns, s.index),
    )
    calls = [M.tool_calls((m.model.output_messages if m.model else None) or []) for m in models]
    failing = [
        s
        for s in steps
        if s.kind == "tool" and s.tool is not None and s.tool.error is not None and s.tool.call_id
    ]
    asked = [(s, _asked(s, models, calls)) for s in failing]
    failed = [a for _, a in asked if a is not None]
    # A failed call no recorded answer holds (outputs not recorded): its id's results.
    unplaced = {s.tool.call_id for s, a in asked if a is None and s.tool is not None}
    if not failing:
        return 0
    sent = SentResults(models)
    wrapped = 0
    for p, step in enumerate(models):
        m = step.model
        assert m is not None
        if m.tool_errors_sent_as not in ("error_object", "error_object_text"):
            continue
        as_text = m.tool_errors_sent_as == "error_object_text"
        parts = [sent.part(p, pos, call_id, k) for pos, call_id, k in failed]
        parts += [
            part
            for message in m.input_messages or []
            for part in message.get("parts") or []
            if part.get("type") == "tool_call_response" and part.get("id") in unplaced
        ]
        here = 0
        for part in parts:
            if isinstance(part, dict) and isinstance(part.get("response"), str):
                error = {"error": part["response"]}
                part["response"] = stringify(error) if as_text else error
                here += 1
        if here:
            m.derived.append(
                f"input_messages: {here} failed tool result(s) as the provider sends them "
                '({"error": <text>}); the span records the text alone'
            )
            wrapped += here
    return wrapped


def _asked(
    tool: Step, models: Sequence[Step], calls: Sequence[list[dict[str, Any]]]
) -> tuple[int, str, int] | None:
    """``(model position, call id, k)``: the ``k``-th call with the tool's id that the last
    model step started before the tool made (the first of the tool's name, where parallel
    calls share the id), or None when none did."""
    t = tool.tool
    assert t is not None and t.call_id is not None
    for pos in range(len(models) - 1, -1, -1):
        if models[pos].start_ns > tool.start_ns:
            continue
        same = [c for c in calls[pos] if isinstance(c, Mapping) and c.get("id") == t.call_id]
        if same:
            named = [i for i, c in enumerate(same) if c.get("name") == t.tool_name]
            return pos, t.call_id, named[0] if named else 0
    return None
