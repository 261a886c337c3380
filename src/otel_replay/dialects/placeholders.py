"""Values instrumentations write where they left content out.

Such a value reads like recorded content (a tool's result ``"__REDACTED__"``,
an image whose bytes are ``"<replaced>"``), so a reader that took it at its
word would replay the placeholder where the model was sent the real value.
The replay-kit check looks for them, as whole string values at any depth of
a tool's arguments or result or of a model call's messages, and says the
content is not in the trace.
"""

from __future__ import annotations

import string
from typing import Any, Final

#: Placeholder -> who writes it, and for what.
PLACEHOLDERS: Final = {
    "<replaced>": "what Strands writes for a value it cannot serialize (an image's or a "
    "document's bytes)",
    "__REDACTED__": "what OpenInference writes for content it was told to hide",
}

#: The characters a reader of recorded JSON may write of its own into the strings it makes
#: of it: names of roles and part types, printed numbers, ``True``/``False``/``None``,
#: printed lists and dicts.  Any other character of a string read from JSON text comes
#: from that text, spelled as itself or as a ``\\u`` escape.
_WRITTEN: Final = frozenset(string.ascii_lowercase + string.digits + "_ TFN:.-+{}[]'\"\\,")
#: For each placeholder, the characters of it that only the recorded text can give (a placeholder
#: made of written characters alone gets none, and is always searched for).
_SIGNS: Final = tuple("".join(sorted(set(marker) - _WRITTEN)) for marker in PLACEHOLDERS)

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


def may_hold_placeholder(text: str) -> bool:
    """Whether a value read from JSON ``text`` may hold a placeholder as a whole string,
    however its reader parses it, joins or cuts its strings (tool results read from text
    blocks), or prints its numbers and constants.

    False when the text spells no character as an escape and lacks, for each placeholder,
    one of the characters only the text can give: then :func:`placeholder_in` of the value
    is None, and the walk over it (every value of a model call's messages) is saved.  A
    few scans for one character each, which most message lists of a dump pass.
    """
    # A search for one character is a memchr, many times faster than one for two.
    if "\\" in text and "\\u" in text:
        return True
    for signs in _SIGNS:  # (loops, not generators: every message list is asked)
        for c in signs:
            if c not in text:
                break
        else:
            return True
    return False


def left_out(what: str, marker: str) -> str:
    """A problem line: ``what`` holds ``marker``, so its content is not in the trace."""
    return f"in the {what}: {marker!r}, {PLACEHOLDERS[marker]}; that content is not in the trace"
