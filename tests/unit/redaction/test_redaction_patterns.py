"""The catalogue's expressions written for speed match exactly where their plain form did.

The differential tests compare the engine with a frozen reference, but both read
the expressions of :mod:`otel_replay.redaction.patterns`: a change to an expression
is checked here, against the expression as it was first written (kept below),
on many texts drawn from the very words, endings and characters it turns on.
"""

from __future__ import annotations

import functools
import re

from hypothesis import strategies as st

from otel_replay.redaction import patterns as secret_patterns
from tests.fixtures.tiers import tiered

#: The words that say something about a value rather than give it, as first written:
#: an alternation of every word, after any letters ending as a participle or adverb.
PLAIN_PROSE = (
    r"(?:[a-z]+(?:ed|ing|ly|en)|a|an|the|not|now|too|also|only|still|just|very|never|always"
    r"|must|should|will|would|can|cannot|may|have|has|your|my|our|their|his|her|its|this"
    r"|that|these|those|what|which|where|when|here|there|then|than|same|different|wrong"
    r"|invalid|incorrect|correct|valid|empty|blank|missing|weak|strong|long|short|secure"
    r"|insecure|optional|mandatory|necessary|unknown|null|none|true|false|enter|click|type"
    r"|please|change|reset|below|above|from|with|into|sent|shown|known|case|set|for|of|to"
    r"|in|on|at|by|and|or|but|no|yes|ok|okay|good|fine|secret|stored|safe"
    r"|string|bytes|bool|boolean|float|number|dict|list|object|secretstr|undefined|return"
    r"|raise|pass|yield|await|print|else|elif|continue|break|lambda|assert|import)"
    r"(?=[.,;:!?)\"'`*]*(?:[\s|]|$|\\[rnt]))"
)

_WORDS = re.findall(r"[a-z]+", PLAIN_PROSE.split(")(?=")[0].split("|", 4)[-1])
#: What the text is made of: the words, their beginnings and what runs on past them, the
#: endings, letters that read as ASCII ones when case is ignored (the Kelvin sign, the
#: long s, the dotless i), and every character that may follow a word, or not.
_PIECES = st.one_of(
    st.sampled_from(_WORDS),
    st.sampled_from(_WORDS).flatmap(lambda w: st.integers(0, len(w)).map(lambda k: w[:k])),
    st.sampled_from(_WORDS).map(lambda w: w + "s"),
    st.sampled_from(["ed", "ing", "ly", "en", "d", "g", "ng", "e", "y", "n"]),
    st.sampled_from(["\u212a", "\u017f", "\u0131", "\u0130", "\xe9", "ß"]),
    st.sampled_from([*".,;:!?)\"'`*| \t\r\n\\", "\\n", "\\r", "\\t", "\\x", "1", "_"]),
    st.text(alphabet="abcdeEDGILNYgilny", max_size=6),
)
_TEXTS = st.lists(_PIECES, max_size=12).map("".join)
#: A word's letters in any case.
_CASES = st.sampled_from([str, str.upper, str.title, str.swapcase])


def _prose_words_found_where_their_alternation_found_them(text: str, case: object) -> None:
    """``_PROSE`` (its words a trie) stands only in negative
    lookaheads: it must succeed at exactly the places its plain alternation did."""
    text = case(text)  # type: ignore[operator]
    for flags in (re.IGNORECASE, 0):
        plain = re.compile(f"(?!{PLAIN_PROSE})", flags)
        fast = re.compile(f"(?!{secret_patterns._PROSE})", flags)
        for at in range(len(text) + 1):
            assert (plain.match(text, at) is None) == (fast.match(text, at) is None), (text, at)


(
    test_the_prose_words_are_found_where_their_alternation_found_them,
    test_the_prose_words_are_found_where_their_alternation_found_them_in_many_texts,
) = tiered(400, 3000, _TEXTS, _CASES)(_prose_words_found_where_their_alternation_found_them)


def test_the_prose_words_are_those_first_written() -> None:
    assert sorted(secret_patterns._PROSE_WORDS) == sorted(_WORDS)
    assert len(_WORDS) == 124


#: Parts of the expressions written for speed, each with its form as first written: a
#: quoted value's characters (one branch a character), and the rest of a value that is
#: the last word on its line (the fewest characters, a look after each).
REWRITES = (
    (secret_patterns.quoted_body('"'), r"(?:[^\"\\\r\n]|\\.)+"),
    (secret_patterns.quoted_body("'"), r"(?:[^'\\\r\n]|\\.)+"),
    (secret_patterns._TO_LINE_END, r"[^\s\[\"]*?"),
)


def _as_first_written(pattern: str) -> str:
    for fast, plain in REWRITES:
        pattern = pattern.replace(fast, plain)
    return pattern


@functools.cache
def _rewritten() -> list[tuple[re.Pattern[str], re.Pattern[str]]]:
    """Every shape holding one of them, with its expression as first written beside it.

    Compiled when first asked (about 2 s of CPU): not by every test worker that imports this
    module to collect it."""
    return [
        (re.compile(shape.pattern), re.compile(plain))
        for shape in secret_patterns.VALUE_PATTERNS
        if (plain := _as_first_written(shape.pattern)) != shape.pattern
    ]


#: Secret names, what joins them to a value, quotes, escapes, line ends, value characters.
_ASSIGNMENTS = st.lists(
    st.one_of(
        st.sampled_from(["password", "api_key", "secret", "token", "Access-Token", "pin"]),
        st.sampled_from([": ", ":", "=", " = ", ":=", "=>", '": ', '\\": \\"', "\t"]),
        st.sampled_from(['"', "'", "\\", '\\"', "\\'", "\\\\", "\\n", "\\R", "\n", "\r", "\r\n"]),
        st.sampled_from([" #", "|", ">", "[", "str", "None", "~", "[REDACTED]"]),
        st.text(alphabet="aZ09 -_.,;#&|<>()[]{}", max_size=8),
    ),
    max_size=14,
).map("".join)


def test_every_rewritten_shape_is_compared() -> None:
    assert len(_rewritten()) >= 15  # each name told in text (password, api key, secret...)


def _matched_where_and_as_the_first_written_form_matched_it(text: str) -> None:
    """Every shape holding a part rewritten, at every place of the text: the same match,
    and every group (where the secret stands) the same."""
    for fast, plain in _rewritten():
        for at in range(len(text)):
            m, p = fast.match(text, at), plain.match(text, at)
            assert (m is None) == (p is None), (text, at, plain.pattern[:60])
            if m is not None and p is not None:
                assert m.regs == p.regs, (text, at, plain.pattern[:60])


(
    test_a_value_is_matched_where_and_as_the_first_written_form_matched_it,
    test_a_value_is_matched_where_and_as_the_first_written_form_matched_it_in_many_texts,
) = tiered(300, 1500, _ASSIGNMENTS)(_matched_where_and_as_the_first_written_form_matched_it)
