"""The pieces of two texts are the same whether computed afresh or given again from the
memo of recent pairs, and a caller changing the list it was given changes no later answer."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import text_diff

WORDS = st.sampled_from(["the", "call", "tool", " ", ",", "\n", "sk-abc", "é", "42", "{}"])
TEXTS = st.lists(WORDS, max_size=60).map("".join)


@settings(max_examples=150, deadline=None)
@given(a=TEXTS, b=TEXTS, edits=st.lists(st.tuples(st.integers(0, 60), WORDS), max_size=4))
def test_pieces_given_again_are_the_pieces_computed_afresh(
    a: str, b: str, edits: list[tuple[int, str]]
) -> None:
    near = a
    for at, word in edits:  # a few edits apart as well as unrelated texts
        near = near[:at] + word + near[at:]
    for old, new in ((a, b), (a, near), (near, a)):
        fresh = text_diff._aligned_pieces(old, new)
        first = text_diff.pieces(old, new)
        assert first == fresh
        assert "".join(p[1] for p in first) == old
        assert "".join(p[2] for p in first) == new
        first.append(("change", "x", "y"))  # the caller's list is its own
        first[:1] = []
        assert text_diff.pieces(old, new) == fresh
