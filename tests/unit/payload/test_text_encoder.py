"""``text_encoder``: a JSON encoder's text, made without its per-call set-up, is the encoder's.

Drawn JSON values (any nesting, any Unicode, lone surrogates, non-finite and
negative-zero floats, ints past 64 bits, keys in any order) are written by each
encoder the project makes so and by the ``json.JSONEncoder`` it stands for: the
texts are the same, and what one refuses the other refuses.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import strategies as st

from otel_replay.payload.codec import text_encoder
from tests.fixtures.tiers import tiered

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**80), max_value=2**80)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.sampled_from([0.0, -0.0, math.inf, 1e300, 5e-324])
    | st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=12)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=5)
    ),
    max_leaves=30,
)

ENCODERS = [
    json.JSONEncoder(ensure_ascii=False, separators=(",", ":")),
    json.JSONEncoder(ensure_ascii=False),
    json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False),
    json.JSONEncoder(sort_keys=True),
    json.JSONEncoder(allow_nan=False),
]


def written(encode: Any, value: Any) -> tuple[str, str]:
    try:
        return "text", encode(value)
    except (TypeError, ValueError) as exc:
        return "refused", type(exc).__name__


def _the_text_is_the_encoders(encoder: json.JSONEncoder, value: Any) -> None:
    assert written(text_encoder(encoder), value) == written(encoder.encode, value)


_each_encoder = pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: repr(vars(e)))
_quick, _many = tiered(100, 300, value=VALUES)(_the_text_is_the_encoders)
test_the_text_is_the_encoders = _each_encoder(_quick)
test_the_text_is_the_encoders_of_many_values = _each_encoder(_many)


@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: repr(vars(e)))
def test_what_json_cannot_spell_is_refused_alike(encoder: json.JSONEncoder) -> None:
    for value in ({"a": {1, 2}}, [object()], {(1, 2): 3}):
        assert written(text_encoder(encoder), value) == written(encoder.encode, value)


@pytest.mark.skipif(getattr(json.encoder, "c_make_encoder", None) is None, reason="no C encoder")
@pytest.mark.parametrize("encoder", ENCODERS, ids=lambda e: repr(vars(e)))
def test_the_c_encoder_is_made_once_not_given_up(encoder: json.JSONEncoder) -> None:
    # It falls back to the encoder itself when its own text differs from the encoder's.
    assert text_encoder(encoder) != encoder.encode
