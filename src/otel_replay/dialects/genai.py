"""OpenTelemetry GenAI semantic conventions: current names, and the names they replaced.

Applies to every span.  Besides the renamed attributes (``gen_ai.system``,
``gen_ai.usage.prompt_tokens``...), semconv before 1.28 put content on span
events: ``gen_ai.content.prompt`` (attribute ``gen_ai.prompt``) and
``gen_ai.content.completion`` (``gen_ai.completion``), each a JSON list of
OpenAI-style messages.  The per-message events (``gen_ai.user.message``,
``gen_ai.choice``...) are read with the log records, not here.

Repaired: input messages that repeat ``gen_ai.system_instructions`` as
leading system messages (some stacks write the system prompt both ways; a
replay must send it once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .bodies import messages
from .span import Dialect, GenAI, SpanView, loads, put

_CONTENT_EVENTS = {
    "gen_ai.content.prompt": ("gen_ai.prompt", A.INPUT_MESSAGES),
    "gen_ai.content.completion": ("gen_ai.completion", A.OUTPUT_MESSAGES),
}


def current_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes with replaced names (``gen_ai.system``...) also under the current ones."""
    return {**attrs, **_current_names(attrs)}


def _current_names(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """The current-name attributes ``attrs`` gives only under replaced names."""
    out = {}
    for old, new in A.LEGACY.items():
        if old in attrs and new not in attrs:
            value = attrs[old]
            # Older instrumentations wrote display names ("OpenAI"); semconv values are lowercase.
            out[new] = value.lower() if new == A.PROVIDER_NAME and isinstance(value, str) else value
    return out


def _fill(span: SpanView) -> GenAI:
    out: GenAI = _current_names(span.attributes)
    for event in span.events:
        found = _CONTENT_EVENTS.get(str(event.get("name")))
        attrs = event.get("attributes")
        if found is None or not isinstance(attrs, Mapping):
            continue
        items = loads(attrs.get(found[0]))
        if isinstance(items, list):
            put(out, found[1], messages(items))
    return out


def _repair(span: SpanView) -> GenAI:
    if A.SYSTEM_INSTRUCTIONS not in span.attributes or not _may_lead_with_system(
        span.get(A.INPUT_MESSAGES)
    ):
        return {}
    system = loads(span.get(A.SYSTEM_INSTRUCTIONS))
    if not isinstance(system, list) or not system:
        return {}
    messages = loads(span.get(A.INPUT_MESSAGES))
    if not isinstance(messages, list):
        return {}
    texts = [p.get("content") for p in system if isinstance(p, Mapping)]
    lead = 0
    while (
        lead < len(messages)
        and isinstance(messages[lead], Mapping)
        and messages[lead].get("role") == "system"
    ):
        lead += 1
    shown = [
        p.get("content", p.get("text"))
        for m in messages[:lead]
        for p in m.get("parts") or []
        if isinstance(p, Mapping)
    ]
    if lead and shown == texts:
        return {A.INPUT_MESSAGES: messages[lead:]}
    return {}


DIALECT = Dialect("genai", matches=lambda span: True, fill=_fill, repair=_repair)


def _may_lead_with_system(value: object) -> bool:
    """Whether messages (JSON text or a list) can hold a system message, without parsing text.

    JSON spells the role ``system`` as that word unless it escapes a letter
    (``\\u0073``); text with neither holds no system message.  Parsing every
    span's input messages here, only to find none, was a tenth of a load.
    """
    if isinstance(value, (str, bytes)):
        text = value if isinstance(value, str) else value.decode("utf-8", "replace")
        return "system" in text or "\\u" in text
    return isinstance(value, list)
