"""``json_text.loads`` refuses JSON nested past the bound, and only that.

The check is skipped for texts with few brackets (a value cannot nest deeper
than it has opening brackets), counted by a search that stops past the bound.
Drawn texts nest lists and objects around the bound, with brackets inside
strings besides, as text and as bytes: ``loads`` raises ``TooDeep`` exactly
when the parsed value nests deeper than the bound.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import json_text
from otel_replay.limits import MAX_NESTING


@st.composite
def nested(draw: st.DrawFn) -> Any:
    """A value nested about as deep as the bound, its strings holding brackets."""
    levels = draw(st.integers(MAX_NESTING - 3, MAX_NESTING + 3))
    value: Any = draw(st.sampled_from(["[{", "x", 1, None, "{[[{"]))
    for _ in range(levels):
        if draw(st.booleans()):
            value = [value, *draw(st.lists(st.sampled_from(["[", "{", 2]), max_size=2))]
        else:
            value = {"k": value, draw(st.sampled_from(["[", "{", "a"])): "]"}
    return value


@settings(max_examples=200, deadline=None)
@given(value=nested(), as_bytes=st.booleans())
def test_too_deep_exactly_past_the_bound(value: Any, as_bytes: bool) -> None:
    text: str | bytes = json.dumps(value)
    if as_bytes:
        text = text.encode()
    if json_text.depth(value) > MAX_NESTING:
        with pytest.raises(json_text.TooDeep):
            json_text.loads(text)
    else:
        assert json_text.loads(text) == value


@pytest.mark.parametrize("brackets", [MAX_NESTING - 1, MAX_NESTING, MAX_NESTING + 1])
@pytest.mark.parametrize("pad", [0, 2000])  # a short text is counted, a long one searched
def test_brackets_counted_to_the_bound(brackets: int, pad: int) -> None:
    # As many opening brackets as that, half of them in strings, none nesting deep.
    items = ["[" if k % 2 else "{" for k in range(brackets // 2)]
    text = json.dumps(items)[1:-1]  # the strings alone: their brackets, and no list's
    text = "[" * (brackets - brackets // 2) + text + " " * pad + "]" * (brackets - brackets // 2)
    assert text.count("[") + text.count("{") == brackets
    assert json_text._brackets_over(text, MAX_NESTING) is (brackets > MAX_NESTING)
    assert json_text._brackets_over(text.encode(), MAX_NESTING) is (brackets > MAX_NESTING)


@settings(max_examples=200, deadline=None)
@given(
    levels=st.integers(MAX_NESTING - 1, MAX_NESTING + 2),
    lists=st.just([True] * (MAX_NESTING + 2))
    | st.lists(st.booleans(), min_size=MAX_NESTING + 2, max_size=MAX_NESTING + 2),
    as_bytes=st.booleans(),
)
def test_the_shortest_texts_nested_about_the_bound(
    levels: int, lists: list[bool], as_bytes: bool
) -> None:
    """Texts nested about as deep as the bound in as few characters as JSON allows (two
    a level, lists alone): a text too short to nest past the bound is not counted, and
    the shortest that does is refused."""
    value: Any = []
    for as_list in lists[: levels - 1]:
        value = [value] if as_list else {"": value}
    text: str | bytes = json.dumps(value, separators=(",", ":"))
    # (depth() stops one level past the bound.)
    assert json_text.depth(value) == min(levels, MAX_NESTING + 1) and len(text) >= 2 * levels
    if as_bytes:
        text = text.encode()
    if levels > MAX_NESTING:
        with pytest.raises(json_text.TooDeep):
            json_text.loads(text)
    else:
        assert json_text.loads(text) == value
