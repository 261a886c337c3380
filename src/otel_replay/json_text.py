"""JSON text found in a trace, parsed with a bound on how deep it nests.

Attributes hold JSON as text (messages, tool arguments, request bodies), and a
trace may come from anyone: ``json.loads`` of ``"[" * 100000`` raises
``RecursionError``, and a value nested a few hundred levels parses but breaks
whatever walks it later.  :func:`loads` makes both a :class:`ValueError`, the
error every caller already treats as "this text is not JSON".
"""

from __future__ import annotations

import json
from typing import Any

from .store.limits import MAX_NESTING


class TooDeep(ValueError):
    """JSON text nested deeper than :data:`~otel_replay.store.limits.MAX_NESTING` levels."""


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads`` for recorded text; nesting past the bound raises :class:`TooDeep`."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING} levels") from None
    # A value cannot nest deeper than it has brackets: most texts need no walk.
    opening = ("[", "{") if isinstance(text, str) else (b"[", b"{")
    brackets = text.count(opening[0]) + text.count(opening[1])  # type: ignore[arg-type]
    if brackets > MAX_NESTING and depth(value) > MAX_NESTING:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING} levels")
    return value


def depth(value: Any) -> int:
    """How deep lists and dicts nest in ``value`` (a scalar is 0), without recursion."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (list, dict)):
            level += 1
            if level > deepest:
                deepest = level
                if deepest > MAX_NESTING:
                    return deepest
            stack.extend((v, level) for v in (node.values() if isinstance(node, dict) else node))
    return deepest
