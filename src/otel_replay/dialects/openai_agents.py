"""The openai-agents SDK's tracing, bridged to OpenTelemetry.

- OpenInference's bridge (scope ``openinference.instrumentation.openai_agents``)
  writes OpenInference attributes: read by the ``openinference`` dialect.
- OpenTelemetry's bridge (``opentelemetry-instrumentation-openai-agents-v2``,
  scope ``opentelemetry.instrumentation.openai_agents``) writes GenAI semconv,
  with two known faults repaired here: a generation's output items that are
  not plain text reach ``gen_ai.output.messages`` as the Python ``repr`` of the
  SDK objects (a chat message dict, ``ResponseFunctionToolCall(...)``, or the
  whole ``Response`` of a streamed chat-model generation) inside a text part;
  and tool messages carry the result twice, as a text part and as a
  ``tool_call_response`` part.  On a Responses model it records each call's
  input without the system instructions, which the SDK sends beside the input
  items: such a call is marked
  (:data:`~otel_replay.attributes.SYSTEM_NOT_RECORDED`), and the replay kit
  names the instructions as not recorded rather than not set.
- Both: the SDK gives a function span the tool's return value as its output
  (with sensitive data on, as its arguments), and a tool that returned None
  has none, which both bridges then leave out; the model was sent ``"None"``
  (``str(None)``).  A tool span with its arguments and no result is marked
  (:data:`~otel_replay.attributes.TOOL_RETURNED_NONE`): unless it failed (a
  failed one records the failure's message as its output, or raised), its
  result is None, unless the model was sent another value for the call (an
  exporter dropped an output it could not encode): then it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .. import python_repr
from .openinference import REDACTED
from .span import Dialect, GenAI, SpanView, loads

SCOPE = "opentelemetry.instrumentation.openai_agents"
OPENINFERENCE_SCOPE = "openinference.instrumentation.openai_agents"


def _matches(span: SpanView) -> bool:
    return span.scope in (SCOPE, OPENINFERENCE_SCOPE)


def _fill(span: SpanView) -> GenAI:
    if span.scope == SCOPE:
        if _responses_call(span):
            return {A.SYSTEM_NOT_RECORDED: True}
        tool = span.get(A.OPERATION_NAME) == A.OP_EXECUTE_TOOL
        args, result = A.TOOL_CALL_ARGUMENTS, A.TOOL_CALL_RESULT
    else:
        tool = span.get("openinference.span.kind") == "TOOL"
        args, result = "input.value", "output.value"
    if tool and span.get(args) not in (None, REDACTED) and span.get(result) is None:
        return {A.TOOL_RETURNED_NONE: True}
    return {}


def _responses_call(span: SpanView) -> bool:
    """A Responses call the OpenTelemetry bridge recorded with its input and no system
    instructions: its ``ResponseSpanData`` (the only model span with the response's id)
    holds the input items, and the SDK sends the agent's instructions apart from them, so
    the bridge, reading system messages off the items, records none whether or not there
    were any.  A Chat Completions call's ``GenerationSpanData`` holds the system message."""
    return (
        span.get(A.OPERATION_NAME) == A.OP_CHAT
        and span.get(A.RESPONSE_ID) is not None
        and span.get(A.INPUT_MESSAGES) is not None
        and span.get(A.SYSTEM_INSTRUCTIONS) is None
    )


def _repair(span: SpanView) -> GenAI:
    out: GenAI = {}
    if span.scope != SCOPE:
        return out
    for key in (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES):
        messages = loads(span.get(key))
        if isinstance(messages, list):
            repaired = [_repair_message(m) for m in messages if isinstance(m, Mapping)]
            if repaired != messages:
                out[key] = repaired
    return out


def _repair_message(message: Mapping[str, Any]) -> Any:
    parts = [p for p in M.listed(message.get("parts")) if isinstance(p, Mapping)]
    responses = [
        p.get("response", p.get("result")) for p in parts if p.get("type") == "tool_call_response"
    ]
    repeated = [text for r in responses for text in _as_text_parts(r)]
    fixed: list[Any] = []
    for part in parts:
        if part.get("type") != "text":
            fixed.append(dict(part))
            continue
        if part.get("content") in repeated:
            continue  # the same result again, as text
        objects = _sdk_repr(part.get("content"))
        if objects is None:
            fixed.append(dict(part))
        else:
            fixed.extend(p for m in M.from_items(objects) for p in m["parts"])
    if fixed == parts:
        return dict(message)
    return {**message, "parts": fixed}


def _as_text_parts(result: Any) -> list[Any]:
    """The texts of the text parts the bridge writes beside a tool message's result (its
    ``_normalize_messages_to_role_parts``): the text, or one per item of a list of content
    blocks (a text block's text, any other item's ``str``)."""
    if not isinstance(result, list):
        return [result]
    texts: list[Any] = []
    for item in result:
        if isinstance(item, Mapping) and (item.get("type") or "text") == "text":
            text = item.get("text") or item.get("content")
            texts.append(text if isinstance(text, str) else str(item))
        else:
            texts.append(str(item))
    return texts


def _sdk_repr(text: Any) -> list[Any] | None:
    """The SDK objects a ``repr`` text shows, as dicts; None when the text is not one."""
    if not isinstance(text, str) or not (
        text.startswith("{'") or (text[:1].isupper() and "(" in text[:40])
    ):
        return None
    try:
        value = python_repr.loads(text)
    except ValueError:
        return None
    items = value if isinstance(value, list) else [value]
    if items and all(isinstance(i, dict) and i.get("object") == "response" for i in items):
        # Whole Responses objects (a streamed chat-model generation): their output items.
        items = [o for i in items if isinstance(i.get("output"), list) for o in i["output"]]
    if not all(isinstance(i, dict) and ("role" in i or "type" in i) for i in items):
        return None
    return items


DIALECT = Dialect("openai_agents", matches=_matches, fill=_fill, repair=_repair)
