"""A JSON text that :func:`may_hold_placeholder` clears gives no placeholder, however read.

The first ``ls`` skips the search for placeholders in a value read from a text
the test clears.  The oracle is the search itself (:func:`placeholder_in`) over
what the readers make of the text: message lists in the shapes stacks record
(normalized, their answers merged), tool arguments and results.  Texts are
drawn from pieces of placeholders, which readers join (a tool result's text
blocks, a streamed answer's partials), with characters spelled as escapes,
and with arguments that are JSON text inside JSON text.
"""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import json_text
from otel_replay import messages as M
from otel_replay.dialects.placeholders import PLACEHOLDERS, may_hold_placeholder, placeholder_in
from otel_replay.runs.steps import _messages

_PIECES = st.sampled_from(
    ["<", ">", "<repl", "aced>", "__REDAC", "TED__", "__", "RED", "ACTED", "R", "E", "D", "A",
     "C", "T", "x", " ", "é", "\n", "\\", "True", *PLACEHOLDERS]
)  # fmt: skip
_TEXT = st.lists(_PIECES, max_size=4).map("".join)
_SCALAR = st.one_of(_TEXT, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False))
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_TEXT, inner, max_size=3)),
    max_leaves=6,
)
#: A placeholder cut in two: a reader may join the halves again.
_HALVES = st.builds(
    lambda m, k: [m[:k], m[k:]], st.sampled_from(list(PLACEHOLDERS)), st.integers(1, 11)
)
#: Text blocks, which a reader joins into one string.
_BLOCKS = st.one_of(st.lists(_TEXT, min_size=1, max_size=3), _HALVES).map(
    lambda texts: [{"type": "text", "text": t} for t in texts]
)


@st.composite
def _message(draw: st.DrawFn) -> dict[str, Any]:
    """One message in a shape a stack records."""
    shape = draw(st.sampled_from(["parts", "content", "blocks", "tool", "calls", "odd"]))
    role = draw(st.sampled_from(["user", "assistant", "tool", "model"]))
    if shape == "parts":
        return {"role": role, "parts": [{"type": "text", "content": draw(_TEXT)}]}
    if shape == "content":
        return {"role": role, "content": draw(_TEXT)}
    if shape == "blocks":
        return {"role": role, "content": draw(_BLOCKS)}
    if shape == "tool":  # text blocks joined into one result
        return {"role": "tool", "tool_call_id": draw(_TEXT), "content": draw(_BLOCKS)}
    if shape == "calls":  # arguments as JSON text inside the JSON text
        arguments = json.dumps(draw(_VALUE), ensure_ascii=draw(st.booleans()))
        return {
            "role": "assistant",
            "tool_calls": [{"id": draw(_TEXT), "function": {"name": draw(_TEXT),
                                                            "arguments": arguments}}],
        }  # fmt: skip
    return {"role": role, "content": draw(_VALUE), "finish_reason": draw(_SCALAR)}


def _escaped(text: str, rng: random.Random) -> str:
    """``text`` (JSON) with some characters of its strings spelled as ``\\u`` escapes."""
    out = []
    inside = False
    chars = iter(text)
    for c in chars:
        if c == '"':
            inside = not inside
        elif c == "\\" and inside:  # an escape already: kept whole
            escape = c + next(chars)
            if escape == "\\u":
                escape += "".join(next(chars) for _ in range(4))
            out.append(escape)
            continue
        elif inside and rng.random() < 0.3:
            out.append(f"\\u{ord(c):04x}")
            continue
        out.append(c)
    return "".join(out)


def _read(text: str) -> list[Any]:
    """What readers make of JSON ``text``: as messages, an answer, arguments, a result."""
    value = json_text.loads(text)
    messages = _messages(value)
    made = [value, messages, M.parse_arguments(text), M.tool_response(value)]
    if messages is not None:
        made.append(M.one_answer(messages))
        made.extend(M.parse_arguments(c.get("arguments")) for c in M.tool_calls(messages))
    return made


@settings(max_examples=300, deadline=None)
@given(
    messages=st.lists(_message(), max_size=4),
    value=_VALUE,
    seed=st.integers(0, 2**32),
    ascii_only=st.booleans(),
)
def test_a_cleared_text_reads_to_no_placeholder(
    messages: list[dict[str, Any]], value: Any, seed: int, ascii_only: bool
) -> None:
    for drawn in (messages, value):
        text = json.dumps(drawn, ensure_ascii=ascii_only)
        for spelled in (text, _escaped(text, random.Random(seed))):
            found = [placeholder_in(v) for v in _read(spelled)]
            if any(f is not None for f in found):
                assert may_hold_placeholder(spelled), (spelled, found)


def test_each_placeholder_is_searched_for_in_a_text_that_spells_it() -> None:
    for marker in PLACEHOLDERS:
        for text in (json.dumps([marker]), json.dumps([marker], ensure_ascii=False)):
            assert may_hold_placeholder(text)
            assert may_hold_placeholder(text.replace(marker[0], f"\\u{ord(marker[0]):04x}"))


def test_most_texts_are_cleared() -> None:
    """The skip pays: prose and JSON without the placeholders' rarer characters pass."""
    text = json.dumps([{"role": "user", "parts": [{"type": "text", "content": "Where is it?"}]}])
    assert not may_hold_placeholder(text)
