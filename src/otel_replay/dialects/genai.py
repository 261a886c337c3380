"""OpenTelemetry GenAI semantic conventions: current names, and the names they replaced.

Applies to every span.  Besides the renamed attributes (``gen_ai.system``,
``gen_ai.usage.prompt_tokens``...), semconv before 1.28 put content on span
events: ``gen_ai.content.prompt`` (attribute ``gen_ai.prompt``) and
``gen_ai.content.completion`` (``gen_ai.completion``), each a JSON list of
OpenAI-style messages.  The per-message events (``gen_ai.user.message``,
``gen_ai.choice``...) are read with the log records, not here.

Input messages that repeat ``gen_ai.system_instructions`` as leading system
messages (some stacks and callers give the system prompt both ways) are kept
as recorded: the conversation holds the prompt once wherever the two are
joined (:func:`otel_replay.same_message.without_repeated_system`).
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


DIALECT = Dialect("genai", matches=lambda span: True, fill=_fill)
