"""What a credential shape is, and the pieces every shape of the catalogue is written with."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Final, NamedTuple

from .. import attributes as A

#: What every hidden value becomes (the same for every secret: it says nothing about
#: what it replaced).
PLACEHOLDER: Final = A.REDACTED_VALUE


class Shape(NamedTuple):
    """A credential shape: a regular expression and the words it starts with.

    The text is searched for the ``triggers`` (lower-case literals, fast) and
    the expression is tried only where one stands, matching from there (or
    ``back`` characters before, for a shape whose literal part is not its
    start); a shape with no triggers is searched for everywhere (slower).
    Such a shape may say what text it needs at the least: ``prefilter``, a
    regular expression in Hyperscan's syntax that matches the lower-cased
    text (a character that is not ASCII read as ``?``) wherever the shape
    does; where the prefilter finds none, the shape is not searched for.
    """

    triggers: tuple[str, ...]
    pattern: str
    back: int = 0
    prefilter: str | None = None


#: A value already hidden is hidden once.
_HIDDEN = r"\[REDACTED\]|"
#: Not inside a word (but after an escape in JSON text: \nsk-...).
_NOT_AFTER_WORD = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrt])|(?<=\\u[0-9A-Fa-f]{4}))"


def literal_trie(words: Iterable[str]) -> str:
    """A regular expression matching any of ``words``, common prefixes merged: ``re``
    tries an alternation's branches one by one, a trie's only along the text."""
    root: dict[str, Any] = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def emit(node: dict[str, Any]) -> str:
        alternatives = [re.escape(ch) + emit(sub) for ch, sub in sorted(node.items()) if ch]
        if not alternatives:
            return ""
        body = alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"
        return f"(?:{body})?" if "" in node else body

    return emit(root)
