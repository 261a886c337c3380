"""Values instrumentations write where they left content out.

Such a value reads like recorded content (a tool's result ``"__REDACTED__"``,
an image whose bytes are ``"<replaced>"``), so a reader that took it at its
word would replay the placeholder where the model was sent the real value.
The replay-kit check looks for them, as whole string values at any depth of
a tool's arguments or result or of a model call's messages, and says the
content is not in the trace.
"""

from __future__ import annotations

from typing import Any, Final

#: Placeholder -> who writes it, and for what.
PLACEHOLDERS: Final = {
    "<replaced>": "what Strands writes for a value it cannot serialize (an image's or a "
    "document's bytes)",
    "__REDACTED__": "what OpenInference writes for content it was told to hide",
}

#: How many values a search looks at before it gives up (a bound, not a limit of trace data:
#: values come from one span and are bounded already).
_MAX_VALUES: Final = 100_000


def placeholder_in(value: Any) -> str | None:
    """The first placeholder ``value`` holds as a whole string, at any depth; None if none."""
    stack = [value]
    seen = 0
    while stack and seen < _MAX_VALUES:
        item = stack.pop()
        seen += 1
        kind = type(item)
        # The exact types first: parsed JSON holds nothing else, and every model call's
        # messages are searched (a subclass takes the slower tests below).
        if kind is str:
            if item in PLACEHOLDERS:
                return str(item)
        elif kind is dict:
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind is int or kind is float or kind is bool or item is None:
            continue
        elif isinstance(item, str):
            if item in PLACEHOLDERS:
                return item
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return None


def left_out(what: str, marker: str) -> str:
    """A problem line: ``what`` holds ``marker``, so its content is not in the trace."""
    return f"in the {what}: {marker!r}, {PLACEHOLDERS[marker]}; that content is not in the trace"
