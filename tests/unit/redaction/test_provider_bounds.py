"""Provider tokens of a set length end where their letters and digits do.

Drawn from the catalogue itself: every provider pattern whose body has a set length gives
tokens (hypothesis draws them from the pattern).  Such a token is hidden wherever it
stands as a word; a longer run of letters and digits that only begins like one (a digest
starting ``4b1d``, base64 after a ``/``) is left as it is, as the catalogues bound these
tokens at a word's end.
"""

from __future__ import annotations

import hashlib
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.redaction import providers
from otel_replay.redaction.process import redactor

#: The catalogue's provider patterns whose body has a set length (``{42}``, ``{35,38}``).
SET_LENGTH = [
    pattern
    for _, pattern in providers._PROVIDER_TOKENS
    if re.search(r"\]\{\d+(?:,\d+)?\}$", pattern) and "(?P<" not in pattern
]


def test_the_catalogue_has_set_length_tokens_to_draw() -> None:
    assert len(SET_LENGTH) > 30


def _alnum_body(pattern: str) -> bool:
    """Whether the pattern's last body is of letters and digits alone (one that may end in
    a symbol ends its word there: no longer run of it can be drawn)."""
    last = re.search(r"\[([^\]]*)\]\{[\d,]+\}$", pattern)
    return (
        last is not None
        and re.fullmatch(r"(?:[A-Za-z]-[A-Za-z]|[0-9]-[0-9])+", last[1]) is not None
    )


def _token(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(re.compile(pattern), fullmatch=True)


@pytest.mark.parametrize("pattern", SET_LENGTH)
@settings(max_examples=8, deadline=None)
@given(data=st.data())
def test_a_set_length_token_is_hidden_as_a_word_and_not_inside_a_longer_run(
    pattern: str, data: st.DataObject
) -> None:
    token = data.draw(_token(pattern), label="token")
    after = data.draw(st.sampled_from(['"', " ", ".", ",", "\n", "'", ";"]), label="after")
    r = redactor()
    alone = f'{{"value": "x {token}{after}"}}'
    assert token not in r.text(alone), alone
    if not _alnum_body(pattern):
        return  # a body that may end in a symbol ends its word there: nothing longer to draw
    # Past the longest body a range allows ({35,38}): the run is no token of any length.
    most = int(re.findall(r"\{(?:\d+,)?(\d+)\}$", pattern)[0])
    size = data.draw(st.integers(1, 40), label="size") + (most if "," in pattern[-8:] else 0)
    tail = data.draw(st.text("abcXYZ0189", min_size=size, max_size=size), label="tail")
    longer = f'"id": "{token}{tail}"'
    assert r.text(longer) == longer


@settings(max_examples=200, deadline=None)
@given(body=st.binary(min_size=1, max_size=32), prefix=st.sampled_from(["4b1d", "dapi"]))
def test_a_digest_that_begins_like_a_token_is_left_alone(body: bytes, prefix: str) -> None:
    for digest in (hashlib.sha256(body).hexdigest(), hashlib.sha512(body).hexdigest()):
        text = f'"sha256": "{prefix}{digest[len(prefix) :]}"'
        assert redactor().text(text) == text
