"""``json_text.loads`` parses every text as ``json.loads`` does, or fails as it does.

A text that is one JSON value and nothing around it is read by the decoder's
scanner directly (``json.loads`` makes three Python calls around it); any
other text goes to ``json.loads``.  Drawn texts: JSON values with and without
space around them, cut short, with text after them, behind a byte-order mark,
as text and as bytes.  Each parses to the same value (NaN read alike) or
raises a ``ValueError`` with the same message.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import json_text

_VALUES = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=True, allow_infinity=True),
        st.text(max_size=5),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)
    ),
    max_leaves=8,
)
_SPACE = st.sampled_from(["", "", "", " ", "\n", "\t ", "\r\n"])


@st.composite
def _texts(draw: st.DrawFn) -> str | bytes:
    text = json.dumps(draw(_VALUES), ensure_ascii=draw(st.booleans()))
    text = draw(_SPACE) + text + draw(_SPACE)
    how = draw(st.sampled_from(["whole", "whole", "cut", "more", "bom", "garbage"]))
    if how == "cut":
        text = text[: draw(st.integers(0, max(0, len(text) - 1)))]
    elif how == "more":
        text += draw(st.sampled_from(["x", "1", "[]", ",", " {"]))
    elif how == "bom":
        text = "\ufeff" + text
    elif how == "garbage":
        text = draw(st.text(max_size=8))
    return text.encode("utf-8", "surrogatepass") if draw(st.booleans()) else text


def _read(parse: Any, text: str | bytes) -> tuple[str, str]:
    try:
        return "value", repr(parse(text))
    except ValueError as exc:  # JSONDecodeError, and TooDeep
        return "error", str(exc)


@settings(max_examples=1500, deadline=None)
@given(text=_texts())
def test_a_text_parses_as_json_loads_parses_it(text: str | bytes) -> None:
    assert _read(json_text._parse, text) == _read(json.loads, text)
    # Through loads, the same but for lone surrogates (mended) and the bound on nesting.
    expected = _read(lambda t: json_text.without_lone_surrogates(json.loads(t)), text)
    assert _read(json_text.loads, text) == expected
