"""OpenTelemetry's OpenAI instrumentation (``opentelemetry-instrumentation-openai-v2``).

It writes GenAI semconv through ``opentelemetry-util-genai`` (scope
``opentelemetry.util.genai.handler``; its own scope before).  One fault is
repaired here: a Chat Completions message carries its text (``content``) and
its calls (``tool_calls``) in two fields, the text first in the message the
model answered and the agent sent back, and the instrumentation's
``_prepare_input_messages`` and ``_prepare_output_messages`` write the calls'
parts before the text part (its streamed answers put the text first).  The
assistant messages of its spans are read with their text parts first, then
their calls, as the wire carried them.  Responses API spans (a ``resp_``
response id) keep their items' order: there it is the model's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .span import Dialect, GenAI, SpanView, fills_nothing, loads

SCOPES = ("opentelemetry.util.genai.handler", "opentelemetry.instrumentation.openai_v2")


def chat_completions(scope: str, attributes: Mapping[str, Any]) -> bool:
    """A span of this instrumentation (by its ``scope`` and ``attributes``) of a Chat
    Completions call."""
    if scope not in SCOPES:
        return False
    provider = attributes.get(A.PROVIDER_NAME) or attributes.get("gen_ai.system")
    response_id = attributes.get(A.RESPONSE_ID)
    return provider == "openai" and not (
        isinstance(response_id, str) and response_id.startswith("resp_")
    )


def _matches(span: SpanView) -> bool:
    return chat_completions(span.scope, span.attributes)


def _repair(span: SpanView) -> GenAI:
    out: GenAI = {}
    for key in (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES):
        messages = loads(span.get(key))
        if not isinstance(messages, list):
            continue
        repaired = [text_first(m) if isinstance(m, Mapping) else m for m in messages]
        if repaired != messages:
            out[key] = repaired
    return out


def text_first(message: Mapping[str, Any]) -> Any:
    """An assistant ``message`` with its parts as a Chat Completions message orders them: the
    text (and any other part) first, then the tool calls, each kind in its own order."""
    if message.get("role") != "assistant":
        return message
    parts = M.listed(message.get("parts"))
    calls = [p for p in parts if isinstance(p, Mapping) and p.get("type") == "tool_call"]
    others = [p for p in parts if not (isinstance(p, Mapping) and p.get("type") == "tool_call")]
    if not calls or parts == [*others, *calls]:
        return message
    return {**message, "parts": [*others, *calls]}


DIALECT = Dialect(
    "openai_v2",
    matches=_matches,
    fill=fills_nothing,
    repair=_repair,
    reads_values=True,
    could_match=lambda scope, names: scope in SCOPES,
)
