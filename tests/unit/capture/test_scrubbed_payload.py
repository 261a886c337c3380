"""A payload recorded again (tool schemas, instructions, the conversation so far) is
answered from memory, and recorded exactly as a first recording of it is."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.capture.spans import scrubbed_payload
from otel_replay.payload import codec as payload
from otel_replay.redaction import Redactor, install_redactor

SECRET = "sk-" + "proj-" + "abcdefghij" * 2
#: Texts, some holding a secret; keys, some naming one (the walk hides those values).
texts = st.sampled_from(["", "hello", f"key {SECRET} ok", "a\nb", "é"]) | st.text(max_size=8)
keys = st.sampled_from(["role", "api_key", "password", "content", "headers"]) | st.text(max_size=5)
plain_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | texts,
    lambda children: st.lists(children, max_size=10) | st.dictionaries(keys, children, max_size=4),
    max_leaves=12,
)


@pytest.fixture
def fresh() -> Iterator[Redactor]:
    r = Redactor()
    previous = install_redactor(r)
    try:
        yield r
    finally:
        install_redactor(previous)


#: Made once (a redactor compiles its shapes): a memory of earlier examples changes no verdict.
REFERENCE, TESTED = Redactor(), Redactor()


def reference(value: Any) -> tuple[payload.Encoded, list[str]]:
    """What the walk alone records of ``value``: scrubbed, then encoded."""
    hidden: list[str] = []
    return payload.encode(REFERENCE.scrub(value, "k", hidden)), hidden


# (Slow to draw on a busy machine: the drawing, not the code under test.)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.lists(plain_json, max_size=10) | st.dictionaries(keys, plain_json, max_size=5))
def test_payload_recorded_again_is_recorded_as_the_first_time(value: Any) -> None:
    r = TESTED
    previous = install_redactor(r)
    try:
        expected = reference(value)
        walks = 0
        scrub, scrub_json = r.scrub, r.scrub_json

        def counted(walk: Any) -> Any:
            def call(*args: Any) -> Any:
                nonlocal walks
                walks += 1
                return walk(*args)

            return call

        r.scrub, r.scrub_json = counted(scrub), counted(scrub_json)  # type: ignore[method-assign]
        for _ in range(3):
            hidden: list[str] = []
            _, encoded = scrubbed_payload(value, "k", hidden)
            assert (encoded, hidden) == expected
            if not hidden:  # nothing to hide: walked once, then answered from memory
                assert walks <= (len(value) if type(value) is list and len(value) >= 8 else 1)
    finally:
        del r.scrub, r.scrub_json
        install_redactor(previous)


def test_a_payload_hiding_a_secret_is_scrubbed_every_time(fresh: Redactor) -> None:
    value = [{"role": "user", "content": f"key {SECRET} ok"}]
    for _ in range(3):
        hidden: list[str] = []
        clean, encoded = scrubbed_payload(value, "k", hidden)
        assert SECRET.encode() not in encoded.data and SECRET not in str(clean)
        assert hidden == ["k[0].content"]
