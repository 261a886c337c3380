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
  ``tool_call_response`` part.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .. import python_repr
from .span import Dialect, GenAI, SpanView, fills_nothing, in_scope, loads

SCOPE = "opentelemetry.instrumentation.openai_agents"


def _repair(span: SpanView) -> GenAI:
    out: GenAI = {}
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
    fixed: list[Any] = []
    for part in parts:
        if part.get("type") != "text":
            fixed.append(dict(part))
            continue
        if part.get("content") in responses:
            continue  # the same result again, as text
        objects = _sdk_repr(part.get("content"))
        if objects is None:
            fixed.append(dict(part))
        else:
            fixed.extend(p for m in M.from_items(objects) for p in m["parts"])
    if fixed == parts:
        return dict(message)
    return {**message, "parts": fixed}


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


DIALECT = Dialect("openai_agents", matches=in_scope(SCOPE), fill=fills_nothing, repair=_repair)
