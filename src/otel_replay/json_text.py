"""JSON text found in a trace, parsed with a bound on how deep it nests.

Attributes hold JSON as text (messages, tool arguments, request bodies), and a
trace may come from anyone: ``json.loads`` of ``"[" * 100000`` raises
``RecursionError``, and a value nested a few hundred levels parses but breaks
whatever walks it later.  :func:`loads` makes both a :class:`ValueError`, the
error every caller already treats as "this text is not JSON".

JSON may also spell half of a UTF-16 surrogate pair (``"\\ud800"``, or its
bytes, which ``json.loads`` reads from bytes): a string no encoder, terminal or
page can write.  :func:`loads` (and every reader, through
:func:`without_lone_surrogates`) makes each such half U+FFFD, as a decoder does
with bytes that are no text.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .limits import MAX_NESTING


class TooDeep(ValueError):
    """JSON text nested deeper than :data:`~otel_replay.limits.MAX_NESTING` levels."""


#: What a lone surrogate in parsed JSON can come from: an escape of half a pair, its
#: UTF-8-like bytes (CESU-8, which ``json.loads`` reads from bytes), or the text itself.
#: A whole pair matches too (rarely: the walk then finds nothing to mend).  Each
#: expression starts with a literal, which the search skips to (an alternation or a
#: class first makes it scan ten times slower).
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPED_SURROGATE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE_BYTES = re.compile(rb"\xed[\xa0-\xbf]")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def may_hold_surrogates(text: str | bytes | bytearray) -> bool:
    """Whether JSON ``text`` may parse to a string holding a lone surrogate."""
    # An escape starts with a backslash, which most texts lack: a search for one byte is
    # ten times faster than the expression's (it is read for every message list).
    if isinstance(text, str):
        if "\\" in text and _ESCAPED_SURROGATE.search(text):
            return True
        # ASCII text holds no surrogate, and telling so is a hundred times faster than the
        # search (a class, which the regex engine tries at every position).
        return not text.isascii() and _LONE_SURROGATE.search(text) is not None
    if b"\\" in text and _ESCAPED_SURROGATE_BYTES.search(text):
        return True
    return b"\xed" in text and _SURROGATE_BYTES.search(text) is not None


def without_lone_surrogates(value: Any) -> Any:
    """``value`` (parsed JSON, changed in place) with every lone surrogate in its strings
    and keys replaced by U+FFFD; without recursion, however deep it nests."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if any(_LONE_SURROGATE.search(k) for k in node if isinstance(k, str)):
                items = [(without_lone_surrogates(k), v) for k, v in node.items()]
                node.clear()
                node.update(items)
            pairs: Any = node.items()
        elif isinstance(node, list):
            pairs = enumerate(node)
        else:
            continue
        for key, item in list(pairs):
            if isinstance(item, str):
                if _LONE_SURROGATE.search(item):
                    node[key] = _LONE_SURROGATE.sub("\ufffd", item)
            elif isinstance(item, (dict, list)):
                stack.append(item)
    return value


def surrogates_escaped(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``): for output that
    must be UTF-8 (a page), where recorded text (an agent's own string) may hold one."""
    if not _LONE_SURROGATE.search(text):
        return text
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def loads(text: str | bytes | bytearray) -> Any:
    """``json.loads`` for recorded text; nesting past the bound raises :class:`TooDeep`,
    a lone surrogate becomes U+FFFD."""
    value = loads_unbounded(text)
    bound(text, value)
    return value


def loads_unbounded(text: str | bytes | bytearray) -> Any:
    """:func:`loads` but for the bound on nesting, which the caller checks: with
    :func:`bound`, or by a walk of the value that it makes anyway and that proves the
    value shallow (a message list of a known shape, read for every model call)."""
    try:
        value = _parse(text)
    except RecursionError:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING} levels") from None
    if may_hold_surrogates(text):
        value = without_lone_surrogates(value)
    return value


def _parse(text: str | bytes | bytearray) -> Any:
    """``json.loads(text)``, a text that is one JSON value and nothing else (no space
    around it) read by the decoder's scanner at once: ``json.loads`` makes three Python
    calls around that one, a third of parsing a tool's arguments."""
    if type(text) is str:
        try:
            value, end = _scan(text, 0)
        except StopIteration:
            pass  # (json.loads raises the error it always did)
        else:
            if end == len(text):
                return value
    return json.loads(text)


#: What ``json.loads`` of a text parses it with (its default decoder's scanner).
_scan: Any = json.decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]


def bound(text: str | bytes | bytearray, value: Any) -> None:
    """Raise :class:`TooDeep` when ``value``, parsed from ``text``, nests past the bound."""
    # A value cannot nest deeper than it has brackets, each opened and closed: a text
    # shorter than twice the bound needs no count, and most others no walk.
    if len(text) < _SHORTEST_TOO_DEEP:
        return
    if _brackets_over(text, MAX_NESTING) and depth(value) > MAX_NESTING:
        raise TooDeep(f"JSON nested deeper than {MAX_NESTING} levels")


#: The length of the shortest JSON text nested past the bound: its brackets, each opened
#: and closed.
_SHORTEST_TOO_DEEP = 2 * (MAX_NESTING + 1)


def _brackets_over(text: str | bytes | bytearray, most: int) -> bool:
    """Whether ``text`` holds more than ``most`` opening brackets (``[`` and ``{``).

    Each is looked for by ``find`` (a scan for one byte, several times faster than
    ``count``'s), and the search stops past ``most``: every message list is read so.  A
    short text is counted instead: there one ``find`` call a bracket costs more than the
    scan.
    """
    if len(text) <= _COUNTED:
        if isinstance(text, str):
            return text.count("[") + text.count("{") > most
        return text.count(b"[") + text.count(b"{") > most
    if isinstance(text, str):
        return _found_over(text.find, ("[", "{"), most)
    return _found_over(text.find, (b"[", b"{"), most)


#: The length up to which :func:`_brackets_over` counts (where two counts of the text cost
#: less than a dozen ``find`` calls: a tool call's arguments, a short turn).
_COUNTED = 1024


def _found_over(find: Any, needles: tuple[Any, ...], most: int) -> bool:
    """Whether ``find`` (a text's) finds more than ``most`` of ``needles`` in all."""
    found = 0
    for needle in needles:
        at = find(needle)
        while at != -1:
            found += 1
            if found > most:
                return True
            at = find(needle, at + 1)
    return False


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
