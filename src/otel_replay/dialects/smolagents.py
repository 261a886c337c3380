"""smolagents under OpenInference (scope ``openinference.instrumentation.smolagents``).

The instrumentation records what the agent handed its ``Model``, in
smolagents' own terms, not the request the model server received:

- a ``ToolCallingAgent`` keeps its tool calls and their results as text
  messages of its own roles, ``tool-call`` ("Calling tools: ...") and
  ``tool-response`` ("Observation: ...", "Error: ..."); every API model sends
  them as ``assistant`` and ``user`` messages, and merges a message into the
  one before it when both have the same role (texts joined by a newline).
  The model span's input messages are rebuilt as sent (a message recorded
  without parts was empty text: a streamed answer of tool calls alone).
- a tool span's ``input.value`` is ``Tool.__call__``'s arguments
  (``{"args": [...], "sanitize_inputs_outputs": ..., "kwargs": {...}}``): the
  call's arguments are its keyword arguments, positional ones named after
  ``tool.parameters`` (a CodeAgent's code may pass either).
- the run's answer is the agent span's ``output.value`` (the model gives it
  as a call of the ``final_answer`` tool, not as text): it becomes the agent
  span's output message.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .openinference import KIND, flat_messages
from .span import Dialect, GenAI, SpanView, in_scope, loads

SCOPE = "openinference.instrumentation.smolagents"
#: smolagents' message roles -> the roles its API models send them as.
SENT_AS = {"tool-call": "assistant", "tool-response": "user"}


def as_sent(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as smolagents' API models send them: roles mapped, same roles merged."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = SENT_AS.get(message["role"], message["role"])
        # Every smolagents message is text; a recorded message without parts had
        # empty text (the instrumentation leaves empty strings out).
        parts = [dict(p) for p in message.get("parts") or [{"type": "text", "content": ""}]]
        if out and out[-1]["role"] == role:
            before = out[-1]["parts"]
            for part in parts:
                last = before[-1] if before else None
                if part.get("type") == "text" and last is not None and last.get("type") == "text":
                    last["content"] = f"{last.get('content', '')}\n{part.get('content', '')}"
                else:
                    before.append(part)
        else:
            out.append({**message, "role": role, "parts": parts})
    return out


def _fill(span: SpanView) -> GenAI:
    if str(span.get(KIND) or "").upper() != "AGENT":
        return {}
    answer = span.get("output.value")
    if not isinstance(answer, str) or not answer:
        return {}
    text = {"type": "text", "content": answer}
    return {A.OUTPUT_MESSAGES: [{"role": "assistant", "parts": [text]}]}


def _repair(span: SpanView) -> GenAI:
    kind = str(span.get(KIND) or "").upper()
    if kind == "TOOL":
        args = _call_arguments(span)
        return {A.TOOL_CALL_ARGUMENTS: args} if args is not None else {}
    if kind != "LLM":
        return {}
    recorded = flat_messages(span, "llm.input_messages")
    sent = as_sent(recorded)
    return {A.INPUT_MESSAGES: sent} if sent != recorded else {}


def _call_arguments(span: SpanView) -> dict[str, Any] | None:
    """The call's arguments from ``Tool.__call__``'s; None when ``input.value`` is not those."""
    called = loads(span.get("input.value"))
    if not (
        isinstance(called, Mapping) and set(called) <= {"args", "kwargs", "sanitize_inputs_outputs"}
    ):
        return None
    args, kwargs = called.get("args") or [], called.get("kwargs") or {}
    names = loads(span.get("tool.parameters"))
    if not isinstance(args, list) or not isinstance(kwargs, Mapping):
        return None
    if args and not (isinstance(names, Mapping) and len(args) <= len(names)):
        return None  # positional arguments no recorded parameter names
    return {**dict(zip(names or {}, args, strict=False)), **kwargs}


DIALECT = Dialect("smolagents", matches=in_scope(SCOPE), fill=_fill, repair=_repair)
