"""LiteLLM's own OpenTelemetry callback (``litellm.callbacks = ["otel"]``, scope ``litellm``).

Its ``litellm_request`` span carries GenAI attributes with known faults,
repaired here:

- ``gen_ai.operation.name`` is LiteLLM's call type (``completion``,
  ``acompletion``, ``responses``, ``aresponses``...), not a GenAI operation:
  read as ``chat``;
- the tool calls of the answer are left out of ``gen_ai.output.messages``
  (an assistant message with no parts, or with its text only) and kept in the
  legacy ``gen_ai.completion.<i>.function_call.{name,arguments}`` attributes,
  without their ids: they are put back into the answer (the ids come from the
  next call's tool results, see :mod:`otel_replay.runs.recovered_turns`);
- on routes whose API takes the system prompt apart (the Responses API's
  ``instructions``), it is recorded twice, as ``gen_ai.system_instructions``
  and as a system input message: the message is the copy and is dropped.

Earlier assistant turns in ``gen_ai.input.messages`` are recorded without
their tool calls (no parts); the run builder fills them from the answers they
were.  The ``raw_gen_ai_request`` child span (the provider's request and
answer as Python reprs, empty for streams) is left as an ``other`` step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .. import python_repr
from .flat import unflatten
from .span import Dialect, GenAI, SpanView, fills_nothing, in_scope, loads

SCOPE = "litellm"
#: The child span of a model call holding the provider's request and answer.
RAW_SPAN = "raw_gen_ai_request"
#: Its attribute holding the answer of an OpenAI Responses call: the output items'
#: Python ``repr`` (``str()`` of a list of dicts).
RAW_RESPONSES_OUTPUT = "llm.openai.output"
#: The call ids LiteLLM does not give the agent as they came (``call_0``, ``call_1``...,
#: restarting in each answer; and none): it gives the call's item id in their place
#: (``LiteLLMCompletionResponsesConfig.tool_call_id_from_responses_item``).
_COUNTER_CALL_ID = re.compile(r"call_\d+")
#: LiteLLM's call types that are one model call each.
_CALL_TYPES = frozenset(
    {"completion", "acompletion", "text_completion", "atext_completion", "responses", "aresponses"}
)


def _repair(span: SpanView) -> GenAI:
    out: GenAI = {}
    if span.text(A.OPERATION_NAME) in _CALL_TYPES:  # a list or map is no call type
        out[A.OPERATION_NAME] = A.OP_CHAT
    answer = _with_legacy_calls(loads(span.get(A.OUTPUT_MESSAGES)), span)
    if answer is not None:
        out[A.OUTPUT_MESSAGES] = answer
    inputs = _without_system_copy(loads(span.get(A.INPUT_MESSAGES)), span)
    if inputs is not None:
        out[A.INPUT_MESSAGES] = inputs
    return out


def _with_legacy_calls(messages: Any, span: SpanView) -> list[Any] | None:
    """The output with the calls only the legacy attributes hold; None when nothing changes."""
    legacy: list[Mapping[str, Any]] = [
        item["function_call"]
        for item in unflatten(span.attributes, "gen_ai.completion")
        if isinstance(item, Mapping) and isinstance(item.get("function_call"), Mapping)
    ]
    calls = [
        {
            "type": "tool_call",
            "id": None,
            "name": fn.get("name"),
            "arguments": M.parse_arguments(fn.get("arguments")),
        }
        for fn in legacy
    ]
    if not calls or not isinstance(messages, list) or len(messages) != 1:
        return None
    (message,) = messages
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    parts = [p for p in M.listed(message.get("parts")) if isinstance(p, Mapping)]
    if any(p.get("type") == "tool_call" for p in parts):
        return None  # the output has its calls
    return [{**message, "parts": [*parts, *calls]}]


def responses_call_ids(raw_output: Any) -> dict[str, str]:
    """Item id -> call id of each Responses ``function_call`` item in ``raw_output`` (a
    :data:`RAW_RESPONSES_OUTPUT` value) whose call id LiteLLM replaced with its item id
    on its way to the agent; empty when there is none, or the text is no list of items.

    The text is read as data alone (:func:`~otel_replay.python_repr.loads`): nothing it
    names is imported or called, and its nesting is bounded.
    """
    if not isinstance(raw_output, str) or not raw_output.startswith("["):
        return {}
    try:
        items = python_repr.loads(raw_output)
    except ValueError:
        return {}
    if not isinstance(items, list):
        return {}
    out: dict[str, str] = {}
    for item in items:
        if not isinstance(item, Mapping) or item.get("type") != "function_call":
            continue
        item_id, call_id = item.get("id"), item.get("call_id") or ""
        if not isinstance(item_id, str) or not item_id or not isinstance(call_id, str):
            continue
        # (No call id, or an empty one, is given the item id too.)
        if (not call_id or _COUNTER_CALL_ID.fullmatch(call_id)) and call_id != item_id:
            out[item_id] = call_id
    return out


def _without_system_copy(messages: Any, span: SpanView) -> list[Any] | None:
    """The input without the system message that repeats ``gen_ai.system_instructions``."""
    instructions = span.get(A.SYSTEM_INSTRUCTIONS)
    if not isinstance(messages, list) or not instructions:
        return None
    system = loads(instructions)
    if system is None and isinstance(instructions, str):
        system = instructions  # plain text, not JSON
    text = system if isinstance(system, str) else _text(system)
    kept = [
        m
        for m in messages
        if not (isinstance(m, Mapping) and m.get("role") == "system" and _text(m) == text)
    ]
    return kept if len(kept) < len(messages) else None


def _text(value: Any) -> str | None:
    """The text of a message or a list of parts."""
    parts = value.get("parts") if isinstance(value, Mapping) else value
    if not isinstance(parts, list):
        return None
    return "".join(
        str(p.get("content", ""))
        for p in parts
        if isinstance(p, Mapping) and p.get("type") == "text"
    )


DIALECT = Dialect("litellm", matches=in_scope(SCOPE), fill=fills_nothing, repair=_repair)
