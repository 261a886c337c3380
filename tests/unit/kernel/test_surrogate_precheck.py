"""Whether JSON text may parse to a lone surrogate is told as the expressions alone told it,
with the backslash an escape needs looked for first."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import json_text

#: Pieces of the escapes and bytes a surrogate is spelled with, and of text around them.
PIECES = [
    "\\ud8",
    "\\uDF",
    "\\ue0",
    "\\",
    "\\\\",
    "u",
    "U",
    "d",
    "D",
    "8",
    "9",
    "a",
    "F",
    "c",
    "0",
    "\ud800",
    "\udfff",
    "\U0001f600",
    "é",
    '"',
    "[",
    "x",
]


def expressions_alone(text: str | bytes) -> bool:
    """The check as it was: each expression searched for, whatever the text holds."""
    if isinstance(text, str):
        if json_text._ESCAPED_SURROGATE.search(text):
            return True
        return json_text._LONE_SURROGATE.search(text) is not None
    if json_text._ESCAPED_SURROGATE_BYTES.search(text):
        return True
    return json_text._SURROGATE_BYTES.search(text) is not None


texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)


@settings(max_examples=500, deadline=None)
@given(text=texts)
def test_the_answer_is_the_expressions(text: str) -> None:
    assert json_text.may_hold_surrogates(text) == expressions_alone(text)
    raw = text.encode("utf-8", "surrogatepass")
    assert json_text.may_hold_surrogates(raw) == expressions_alone(raw)
    assert json_text.may_hold_surrogates(bytearray(raw)) == expressions_alone(raw)


@settings(max_examples=300, deadline=None)
@given(value=texts)
def test_a_lone_surrogate_escaped_in_json_is_mended(value: str) -> None:
    text = json.dumps([value])  # every surrogate spelled as its escape
    (parsed,) = json_text.loads(text)
    assert json_text._LONE_SURROGATE.search(parsed) is None
    if json_text._LONE_SURROGATE.search(value) is None:
        assert parsed == value
