"""The engine remembers long texts it found clean; what it answers is what a scan answers.

A conversation is sent again with every model call, and an exporter of
third-party spans meets it on every span: the engine remembers each long text
it scanned and found to hide nothing (by value, bounded), and answers it again
without a scan.  Drawn texts of every class the differential test draws, made
long, go through an engine twice (the second time as another object of the
same value) and through a fresh one, and all three answers agree; a text
holding a secret is hidden the second time as the first.
"""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.redaction import Redactor
from otel_replay.redaction.finder import _Shapes
from otel_replay.redaction.keys import INSIDE_WORDS
from otel_replay.redaction.patterns import PERSONAL_DATA_PATTERNS, VALUE_PATTERNS
from otel_replay.redaction.shape import Shape
from otel_replay.redaction.text import _CLEAN_CHARS, _MEMO_CHARS
from tests.unit.redaction.test_redaction_differential import dense_texts, texts

#: Filler that hides nothing, to make a drawn text longer than the short memory holds.
_PROSE = "The parcel left the warehouse in Lyon on Monday. " * 6

#: One engine for every example, as a process keeps one: what it remembers of one
#: example must never change the answer for another.
_ENGINE = Redactor()
#: An engine that remembers nothing when it answers (its memory emptied first).
_FRESH = Redactor()


def _long(text: str, before: int, after: int) -> str:
    return _PROSE[:before] + text + _PROSE[:after] + " " * (_MEMO_CHARS + 1)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.one_of(texts(), dense_texts()),
    st.integers(0, len(_PROSE)),
    st.integers(0, len(_PROSE)),
)
def test_a_long_text_is_answered_again_as_a_scan_answers_it(
    drawn: str, before: int, after: int
) -> None:
    text = _long(drawn, before, after)
    again = "".join(list(text))  # the same value, another object
    assert again is not text
    first = _ENGINE.text(text)
    second = _ENGINE.text(again)
    _FRESH._memo.clear()
    _FRESH._long_clean.clear()
    fresh = _FRESH.text(text)
    assert first == second == fresh
    # Found clean: the very object comes back, both times.
    assert (first is text) == (second is again) == (fresh is text)


def test_a_long_text_found_clean_is_not_scanned_again_and_one_hiding_a_secret_is() -> None:
    engine = Redactor()
    scans: list[str] = []
    scan = engine._text

    def counted(text: str) -> str:
        scans.append(text)
        return scan(text)

    engine._text = counted  # type: ignore[method-assign]
    clean = _long("nothing to hide here", 0, 0)
    secret = _long("api_key=sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1w", 10, 10)
    for _ in range(3):
        assert engine.text("".join(list(clean))) == clean
        assert "sk-proj-" not in engine.text("".join(list(secret)))
    assert scans.count(clean) == 1
    assert scans.count(secret) == 3


def test_what_the_engine_remembers_is_bounded() -> None:
    engine = Redactor()
    piece = "a clean line of text. " * 2000
    for i in range(2 * _CLEAN_CHARS // len(piece) + 2):
        engine.text(f"{i} {piece}")
        assert engine._long_chars <= _CLEAN_CHARS
    assert 0 < len(engine._long_clean) < 2 * _CLEAN_CHARS // len(piece)


_SETTINGS = st.fixed_dictionaries(
    {},
    optional={
        "patterns": st.lists(st.sampled_from([r"cust-[0-9]{6}", r"ACME-[a-z]+-42"]), max_size=2),
        "keys": st.lists(st.sampled_from(["custom_id", "internal_ref"]), max_size=2),
        "personal_data": st.booleans(),
        "prefilter": st.booleans(),
    },
)


@settings(max_examples=40, deadline=None)
@given(_SETTINGS, _SETTINGS, st.one_of(texts(), dense_texts()))
def test_redactors_of_the_same_shapes_share_one_finder_and_answer_alike(
    one: dict[str, Any], other: dict[str, Any], drawn: str
) -> None:
    """Building a finder costs more than scrubbing a span: redactors of the same shapes
    (value patterns, personal data, prefilter) share one, and answer as if each had its
    own; redactors of other shapes never share it."""
    first, second = Redactor(**one), Redactor(**other)
    same = all(
        one.get(k, default) == other.get(k, default)
        for k, default in (("patterns", []), ("personal_data", False), ("prefilter", True))
    )
    assert (first._shapes is second._shapes) == same
    for redactor, kwargs in ((first, one), (second, other)):
        alone = Redactor(**kwargs)  # with a finder of its own, built here
        shapes = [*VALUE_PATTERNS, *(Shape((), p) for p in kwargs.get("patterns", []))]
        shapes += PERSONAL_DATA_PATTERNS if kwargs.get("personal_data") else ()
        alone._shapes = _Shapes(shapes, INSIDE_WORDS, prefiltered=kwargs.get("prefilter", True))
        assert redactor.text(drawn) == alone.text(drawn)
