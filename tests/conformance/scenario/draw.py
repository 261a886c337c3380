"""Scenarios drawn from a seed (:func:`scenario_for`): what the fixed stories never do.

New draws go last, so that the draws before them, and thus a seed's earlier scenario
parts, stay what they were.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from .model import ID_SHAPES, RAISES, Call, Parts, Retry, Scenario, Spelling, ToolRetry
from .stories import _TOOL_SHAPES, DEFAULT, _tools

# --- the generator ---------------------------------------------------------------------

#: Texts the generator draws from: accents, other scripts, emoji, quotes, slashes.
_WORDS = (
    "colis",
    "Bestellung",
    "paquete",
    "посылка",
    "包裹",
    "طرد",
    "Ködbüro",
    "naïve",
    "€",
    "×",
    "—",
    "« guillemets »",
    '"quoted"',
    "a/b",
    "back\\slash",
    "📦",
    "🚚",
    "✅",
    "日本",
    "ß",
)
#: Characters a tool result or an argument may carry that JSON must escape.
_CONTROL = ("\n", "\t", "\r", "\u0007", "\u001f", "\u2028")


def _text(rng: random.Random, n: int, control: bool = False) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    if control:
        words.insert(rng.randrange(len(words) + 1), rng.choice(_CONTROL))
    return " ".join(words)


def _value(rng: random.Random) -> Any:
    """A tool result of a drawn kind: text, object, list, number, None, empty, large, control."""
    kind = rng.choice(
        ("text", "object", "list", "number", "none", "empty", "large", "control", "error")
    )
    if kind == "text":
        return f"{{order_id}}: {_text(rng, 5)}"
    if kind == "object":
        return {
            "order_id": "{order_id}",
            _text(rng, 1): rng.choice([1, 2.5, True, None, _text(rng, 2)]),
            "nested": {"items": [_text(rng, 2) for _ in range(rng.randint(0, 3))]},
        }
    if kind == "list":
        return [{"type": "text", "text": _text(rng, 3)} for _ in range(rng.randint(1, 3))]
    if kind == "number":
        return rng.choice([0, 42, -7, 3.25])
    if kind == "none":
        return None
    if kind == "empty":
        return rng.choice(["", {}, []])
    if kind == "large":
        return "{order_id} " + _text(rng, rng.randint(300, 900))
    if kind == "control":
        return _text(rng, 4, control=True)
    return {"error": _text(rng, 4), "code": rng.choice([400, 404, 503])}


#: A 1×1 PNG (base64): the image a tool may return (kept small: traces carry it whole).
PNG_BASE64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


def _shape(rng: random.Random) -> Any:
    """A tool result of a shape :func:`_value` never draws: an image (an MCP or Anthropic
    image content block with base64 data, a data URL, text and an image in one list), a
    list that is not text blocks (of strings, numbers, objects, nested lists), an empty
    list inside an object, a boolean, a very small or large number, unicode keys."""
    kind = rng.choice(
        (
            "mcp_image",
            "anthropic_image",
            "data_url",
            "text_and_image",
            "strings",
            "numbers",
            "objects",
            "nested",
            "empty_inside",
            "boolean",
            "extreme",
            "unicode_keys",
        )
    )
    mcp_image = {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}
    if kind == "mcp_image":
        return [mcp_image]
    if kind == "anthropic_image":
        source = {"type": "base64", "media_type": "image/png", "data": PNG_BASE64}
        return [{"type": "image", "source": source}]
    if kind == "data_url":
        return "data:image/png;base64," + PNG_BASE64
    if kind == "text_and_image":
        return [{"type": "text", "text": f"{{order_id}}: {_text(rng, 3)}"}, mcp_image]
    if kind == "strings":
        return [_text(rng, 2) for _ in range(rng.randint(1, 4))]
    if kind == "numbers":
        return rng.sample([0, 1, -7, 2.5, 1e-9, 3.0e10, 12345678901], rng.randint(1, 4))
    if kind == "objects":
        return [{"sku": f"SKU-{i}", "qty": i, "label": _text(rng, 1)} for i in range(1, 3)]
    if kind == "nested":
        return [[1, 2], [[_text(rng, 1)]], [], [{"k": []}]]
    if kind == "empty_inside":
        return {"order_id": "{order_id}", "items": [], "notes": {}, "tags": [[]]}
    if kind == "boolean":
        return rng.choice([True, False])
    if kind == "extreme":
        return rng.choice([5e-324, 1e-300, 1.7976931348623157e308, 1e21, 2**63, -(2**53) - 1])
    return {"clé": "{order_id}", "数量": 2, "🚚": True, "ключ": None, "a/b\tc": _text(rng, 1)}


def _again(rng: random.Random, call: Call, n: int) -> Call:
    """``call``'s tool called again with other arguments (``order_id`` ``{order_id}-<n>``, and
    another ``reason``), spelled its own way."""
    args: dict[str, Any] = {**call.arguments, "order_id": f"{{order_id}}-{n}"}
    if "reason" in args:
        args["reason"] = _text(rng, 3)
    return Call(call.tool, args, _spelling(rng))


#: Whitespace a model may write around or inside its arguments: (indent, around).
_WHITESPACE: tuple[tuple[int | None, tuple[str, str]], ...] = (
    (2, ("", "")),
    (4, ("", "")),
    (None, (" ", "")),
    (None, ("", "\n")),
    (None, ("\n", "\n")),
    (2, ("  ", " \n")),
)


def _spelling(rng: random.Random) -> Spelling:
    return Spelling(
        separators=rng.choice([None, (",", ":"), (", ", ": "), (",", ": ")]),
        ensure_ascii=rng.random() < 0.3,
        key_order=rng.choice(["given", "sorted", "reversed"]),
        escape_slash=rng.random() < 0.2,
    )


def scenario_for(seed: int) -> Scenario:
    """A random scenario drawn from ``seed`` (the same seed, the same scenario).

    Drawn: the order the three tools are called in and how they are grouped into
    turns (one call, parallel calls, one turn after another), each call's spelling,
    what each tool returns (:func:`_value`), whether one of them raises and with what
    message, the arguments' texts (non-ASCII, control characters), the text beside
    the calls, the answer, and last (so that the draws before them are what they were)
    whether the raising tool times out (``TimeoutError``) and which model requests the
    server fails first (HTTP 429, 500 or 503), for the client to retry; then the shape
    of the model's call ids (:data:`ID_SHAPES`), how the answers come in parts
    (:class:`Parts`), and whether the raising tool fails once only, the model calling
    it again (one logical call, two attempts); and which of the failed requests are a
    connection closed instead (:attr:`Retry.cut`); then results of other shapes
    (:func:`_shape`: images, lists, booleans, extreme numbers, unicode keys), the same
    tool called again (in its turn with other arguments, and in a later turn, with the
    same or other arguments), and whitespace around or inside a call's arguments
    (leading spaces, trailing newlines, pretty-printed); and whether one answer is cut
    partway through (``cut="stream"``); and whether the framework runs the raising tool
    again by itself after it raised (:class:`ToolRetry`: how many times at most, how many
    attempts fail).  Its name is ``seed-N``.
    """
    rng = random.Random(seed)
    tools = list(_TOOL_SHAPES)
    rng.shuffle(tools)
    tools = tools[: rng.randint(1, 3)]
    turns: list[tuple[Call, ...]] = []
    at = 0
    while at < len(tools):
        size = rng.randint(1, len(tools) - at)
        group = []
        for name in tools[at : at + size]:
            args: dict[str, Any] = {"order_id": "{order_id}"}
            if name == "open_ticket":
                args["reason"] = _text(rng, 3, control=rng.random() < 0.5)
            group.append(Call(name, args, _spelling(rng)))
        turns.append(tuple(group))
        at += size
    raising = rng.choice([None, *tools])
    first, second = rng.sample(range(1000, 10000), 2)
    beside = _text(rng, 3) if rng.random() < 0.4 else None
    questions = (
        f"{_text(rng, 3)} ORD-{first} ? {_text(rng, 2)}",
        f"{_text(rng, 3)} ORD-{second} ? {_text(rng, 2)}",
    )
    results = _tools({name: _value(rng) for name in _TOOL_SHAPES})
    error = _text(rng, 4, control=rng.random() < 0.3)
    answer = f"{{order_id}}: {_text(rng, 6)}"
    raises = rng.choice(RAISES)
    retries = tuple(
        Retry(turn, rng.choice((429, 500, 503)))
        for turn in range(len(turns) + 1)
        if rng.random() < 0.25
    )
    ids = rng.choice(ID_SHAPES)
    parts = Parts(
        text=rng.choice((1, 1, 2, 3, 5)),
        piece=rng.choice((0, 0, 1, 2, 3, 5, 11)),
        write=rng.choice((0, 0, 1, 3, 7, 64)),
    )
    if raising is not None and rng.random() < 0.35:
        # The raising tool fails once and the model calls it again, right after.
        at = next(i for i, group in enumerate(turns) if any(c.tool == raising for c in group))
        repeat = next(c for c in turns[at] if c.tool == raising)
        turns.insert(at + 1, (repeat,))
        retried = True
    else:
        retried = False
    # Some failures are a connection closed before the answer, which every client retries.
    retries = tuple(dataclasses.replace(r, cut=rng.choice(("", "", "before"))) for r in retries)
    # Drawn after all of the above, so that those draws stay what they were for every seed.
    results = {
        name: dataclasses.replace(t, returns=_shape(rng)) if rng.random() < 0.35 else t
        for name, t in results.items()
    }
    again: dict[str, Any] = {}
    grouped = [list(calls) for calls in turns]
    if rng.random() < 0.35:
        # The same tool twice in one turn, with other arguments (placed before or after).
        group = grouped[rng.randrange(len(grouped))]
        twice = _again(rng, rng.choice(group), 2)
        group.insert(rng.randint(0, len(group)), twice)
        again[f"{twice.tool}-2"] = _value(rng) if rng.random() < 0.5 else _shape(rng)
    if rng.random() < 0.35:
        # A tool called again in a later turn: the same arguments, or others.
        first = rng.choice([c for calls in grouped for c in calls])
        if rng.random() < 0.3:
            grouped.append([Call(first.tool, first.arguments, _spelling(rng))])
        else:
            grouped.append([_again(rng, first, 3)])
            again[f"{first.tool}-3"] = _value(rng) if rng.random() < 0.5 else _shape(rng)
    for calls in grouped:
        for i, c in enumerate(calls):
            if rng.random() < 0.3:
                indent, around = rng.choice(_WHITESPACE)
                spelled = dataclasses.replace(c.spelling, indent=indent, around=around)
                calls[i] = dataclasses.replace(c, spelling=spelled)
    turns = [tuple(calls) for calls in grouped]
    if rng.random() < 0.15:
        # An answer cut partway through (a stream inside an event, a JSON body half sent),
        # once, at one turn: the clients that do not retry it raise it to the agent, whose
        # run then ends in that error.
        turn = rng.randrange(len(turns) + 1)
        cut = Retry(turn, cut="stream")
        retries = (*(r for r in retries if r.turn != turn), cut)
    tool_retry = None
    if raising is not None and rng.random() < 0.3:
        # The framework runs the raising tool again by itself (in the stacks whose framework
        # does): its first attempts raise, then one returns, or every attempt of the call
        # fails and the model is sent the error.
        retries_at_most = rng.randint(1, 3)
        tool_retry = ToolRetry(retries_at_most, rng.randint(1, retries_at_most + 1))
    return dataclasses.replace(
        DEFAULT,
        name=f"seed-{seed}",
        questions=questions,
        tools=results,
        turns=tuple(turns),
        raising=raising,
        error=error,
        answer=answer,
        beside=beside,
        anthropic_beside=beside,
        raises=raises,
        retries=retries,
        ids=ids,
        parts=parts,
        retried=retried,
        again=again,
        tool_retry=tool_retry,
    )
