"""A request body's sampling parameters, read as the API's fields say, whatever the body holds.

``bodies.params`` reads only the fields a body gives (the server reads every
request's): drawn bodies, each field absent, null or of any JSON type, give
the parameters a reading of every field would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import attributes as A
from otel_replay.dialects import bodies
from otel_replay.dialects.span import put

_FIELDS = list(bodies._PARAMS)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


def every_field_read(body: Mapping[str, Any]) -> dict[str, Any]:
    """Each of the API's fields read, given or not: what a body's parameters are."""
    out: dict[str, Any] = {}
    for field, name in bodies._PARAMS.items():
        value = body.get(field)
        if isinstance(value, str) and name == "stop_sequences":
            value = [value]
        if isinstance(value, (int, float, str, list)) and not isinstance(value, dict):
            put(out, A.REQUEST_PREFIX + name, value)
    return out


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from([*_FIELDS, "model", "messages", "user"]), _JSON, max_size=len(_FIELDS)
    )
)
def test_the_parameters_given_are_those_every_field_read_gives(body: dict[str, Any]) -> None:
    assert bodies.params(body) == every_field_read(body)
    assert list(bodies.params(body)) == list(every_field_read(body))  # the same order
