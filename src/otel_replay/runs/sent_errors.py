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

from collections.abc import Sequence

from ..dialects.vercel_ai import stringify
from .model import Step


def wrap_sent_errors(steps: Sequence[Step]) -> int:
    """Wrap the error results of the marked model steps of one run; return how many."""
    failed = {
        s.tool.call_id
        for s in steps
        if s.kind == "tool" and s.tool is not None and s.tool.error is not None and s.tool.call_id
    }
    if not failed:
        return 0
    wrapped = 0
    for step in steps:
        m = step.model
        if m is None or m.tool_errors_sent_as not in ("error_object", "error_object_text"):
            continue
        as_text = m.tool_errors_sent_as == "error_object_text"
        here = 0
        for message in m.input_messages or []:
            for part in message.get("parts") or []:
                if (
                    part.get("type") == "tool_call_response"
                    and part.get("id") in failed
                    and isinstance(part.get("response"), str)
                ):
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
