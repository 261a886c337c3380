"""The payload codec gives back equal values of the same types, or refuses."""

from __future__ import annotations

import dataclasses
import datetime as dt
import decimal
import enum
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import otel_replay
from otel_replay import attributes as A
from otel_replay.payload import codec as payload
from otel_replay.payload.attributes import from_attributes, to_attributes
from otel_replay.trusted_types import TypeResolver


@otel_replay.register_type
@dataclasses.dataclass
class Order:
    order_id: str
    placed: dt.datetime
    tags: tuple[str, ...] = ()


@otel_replay.register_type
class Color(enum.Enum):
    RED = "r"


def roundtrip(value: Any) -> Any:
    enc = payload.encode(value)
    return payload.decode(enc.type, enc.data)


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "unicode ✓ 日本語 🚀",
        "lone \ud800 surrogate",
        b"\xff\xfe\x00non-utf8",
        b"",
        None,
        0,
        2**80,
        -1.5,
        float("inf"),
        True,
        {"nested": [1, {"deep": [None, "x"]}], "n": 1.25},
        [],
        (1, "two", (3.0,)),
        {1: "int key", (2, 3): "tuple key"},
        {"$py": "looks tagged"},
        {1, 2, 3},
        frozenset({"a"}),
        dt.datetime(2025, 3, 14, 15, 9, 26, 535897, tzinfo=dt.timezone(dt.timedelta(hours=2))),
        dt.date(2025, 1, 2),
        dt.time(3, 4, 5),
        dt.timedelta(days=2, seconds=3, microseconds=4),
        decimal.Decimal("12.340"),
        uuid.UUID("12345678-1234-5678-1234-567812345678"),
        PurePosixPath("/a/b"),
        Color.RED,
        bytearray(b"\x00\x01"),
        Order("4421", dt.datetime(2025, 1, 1), ("x",)),
    ],
)
def test_roundtrip_equal_value_same_type(value: Any) -> None:
    back = roundtrip(value)
    assert back == value or (value != value and back != back)
    assert type(back) is type(value)


def test_pydantic_model_roundtrip() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Item(pydantic.BaseModel):
        sku: str
        when: dt.date

    value = Item(sku="W-1", when=dt.date(2025, 5, 6))
    enc = payload.encode(value)
    assert enc.type == payload.PYJSON
    assert payload.decode(enc.type, enc.data, TypeResolver(types=[Item])) == value


def test_unrestorable_value_is_refused_not_faked() -> None:
    class Opaque:
        pass

    enc = payload.encode(Opaque())
    assert enc.type == payload.REPR and not enc.exact
    with pytest.raises(payload.PayloadError, match="repr"):
        payload.decode(enc.type, enc.data)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)
py_values = st.recursive(
    json_values | st.binary(max_size=20) | st.datetimes() | st.decimals(allow_nan=False),
    lambda children: (
        st.lists(children, max_size=3)
        | st.tuples(children, children)
        | st.dictionaries(st.integers() | st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=15,
)


@given(py_values)
def test_roundtrip_property(value: Any) -> None:
    back = roundtrip(value)
    assert back == value
    assert type(back) is type(value)


@given(json_values | st.floats() | st.text(alphabet=st.characters(codec=None)))
def test_plain_json_text_is_the_standard_encoders(value: Any) -> None:
    """The encoder made once for payloads writes what ``json`` itself writes (NaN, lone
    surrogates and all), so digests do not depend on which one ran."""
    import json

    standard = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
    assert payload.plain_json_text(value) == standard.encode(value)
    assert payload.plain_json_text([value, {"k": value}]) == standard.encode([value, {"k": value}])


@given(st.text() | st.binary() | json_values)
def test_attributes_roundtrip_exact(value: Any) -> None:
    attrs = to_attributes("k", value)
    got = from_attributes(attrs, "k")
    assert got is not None and got.status == "exact"
    assert got.value() == value


def test_display_is_semconv_text_and_bytes_only_when_needed() -> None:
    attrs = to_attributes(A.TOOL_CALL_RESULT, "hello")
    assert attrs[A.TOOL_CALL_RESULT] == "hello"
    assert A.BYTES + A.TOOL_CALL_RESULT not in attrs  # the display carries the exact bytes
    attrs = to_attributes(A.TOOL_CALL_RESULT, {"a": 1})
    assert attrs[A.TOOL_CALL_RESULT] == '{"a":1}' and A.BYTES + A.TOOL_CALL_RESULT not in attrs
    attrs = to_attributes(A.TOOL_CALL_RESULT, b"\xff")
    assert attrs[A.BYTES + A.TOOL_CALL_RESULT] == b"\xff"


def test_length_limit_keeps_exact_bytes_beside_display() -> None:
    value = "x" * 500
    attrs = to_attributes("k", value, length_limit=100)
    assert attrs[A.BYTES + "k"] == value.encode()
    attrs["k"] = attrs["k"][:100]  # what the SDK does to the display
    got = from_attributes(attrs, "k")
    assert got is not None and got.status == "exact" and got.value() == value


def test_truncated_display_without_bytes_is_a_mismatch() -> None:
    attrs = to_attributes("k", "y" * 500)
    attrs["k"] = attrs["k"][:100]
    got = from_attributes(attrs, "k")
    assert got is not None and got.status == "mismatch" and not got.usable
    assert "truncated" in got.reason
    with pytest.raises(payload.PayloadError):
        got.value()


def test_a_payload_read_from_text_keeps_the_attribute_not_a_copy() -> None:
    """A run holds each text attribute once: its payload reads the same string."""
    for value in ("plain text", {"a": [1, "é"]}):
        attrs = to_attributes("k", value)
        got = from_attributes(attrs, "k")
        assert got is not None and got.text is attrs["k"]
        assert got.data == attrs["k"].encode() and got.status == "exact"
        assert got.value() == value and got.plain() == value
        assert got.retyped(got.type) == got
    third_party = from_attributes({"k": '{"x": 1}'}, "k")
    assert third_party is not None and third_party.status == "unverified"
    assert third_party.plain() == '{"x": 1}'
    assert third_party.retyped(payload.JSON).plain() == {"x": 1}


def test_large_payload_display_is_a_preview() -> None:
    value = "z" * 10_000
    attrs = to_attributes("k", value, max_inline=1000)
    assert len(attrs["k"]) < 1200 and "preview" in attrs["k"]
    got = from_attributes(attrs, "k")
    assert got is not None and got.value() == value


def test_missing_blob_is_reported() -> None:
    attrs = {"k": "preview", A.SHA256 + "k": "0" * 64, A.REF + "k": "sha256:" + "0" * 64}
    got = from_attributes(attrs, "k", lambda ref: None)
    assert got is not None and got.status == "missing" and "blob" in got.reason


def test_third_party_value_without_digest_is_unverified_but_usable() -> None:
    got = from_attributes({"k": "from another instrumentation"}, "k")
    assert got is not None and got.status == "unverified" and got.usable


def test_hostile_nesting_is_a_payload_error_not_a_crash() -> None:
    registered = f'{{"$py":"dataclass","cls":"{__name__}:Order","v":[1]}}'.encode()
    deep_tags = b'{"$py":"tuple","v":[' * 900 + b"]}" * 900  # valid JSON, too deep to rebuild
    for data in (b"[" * 100_000, deep_tags):
        with pytest.raises(payload.PayloadError):
            payload.decode(payload.PYJSON, data)
    with pytest.raises(payload.PayloadError):
        payload.decode(payload.PYJSON, registered)


def test_unregistered_classes_come_back_plain_and_are_named() -> None:
    @dataclasses.dataclass
    class Local:
        n: int

    enc = payload.encode(Local(1))
    types = TypeResolver()
    assert payload.decode(enc.type, enc.data, types) == {"n": 1}
    assert types.refused == [f"{__name__}:{Local.__qualname__} (dataclass)"]
    # A class of another kind than recorded is refused even when registered.
    forged = f'{{"$py":"path","cls":"{__name__}:Order","v":"x"}}'.encode()
    assert payload.decode(payload.PYJSON, forged) == "x"


def test_bytes_sent_as_base64_text_read_back_exactly(tmp_path: Path) -> None:
    """ReplaySpanProcessor(base64_bytes=True): no bytes value leaves, the payload still verifies."""
    from otel_replay.sources.reader import SpanReader
    from tests.fixtures.recording import recording

    @otel_replay.tool
    def fetch_raw(name: str) -> bytes:
        return b"\x89PNG\xff\x00"

    path = tmp_path / "runs.otlp"
    with recording(path, base64_bytes=True), otel_replay.agent_run("a", input="q") as run:
        fetch_raw("logo")
        run.record("done")
    for record in SpanReader(path):
        assert not any(isinstance(v, bytes) for v in record.attributes.values())
    (loaded,) = otel_replay.load(path)
    (step,) = loaded.tool_steps()
    payload = step.tool.result_payload if step.tool else None
    assert payload is not None and payload.status == "exact"
    assert payload.value() == b"\x89PNG\xff\x00"


def test_bytes_attribute_text_that_is_not_base64_is_missing() -> None:
    data = b"\x00\xff"
    attrs = {
        A.SHA256 + "r": payload.sha256(data),
        A.BYTES + "r": "not base64!",
        A.TYPE + "r": payload.BYTES,
    }
    got = from_attributes(attrs, "r")
    assert got is not None and got.status == "missing"
    assert "otel_replay.bytes.r" in got.reason
