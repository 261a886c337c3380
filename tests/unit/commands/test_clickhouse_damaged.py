"""The digest check of ``ls`` of a ClickHouse table: whatever payloads a span carries, with
whatever digests, the condition ClickHouse computes is the definition's.

A span's payload is damaged when its ``otel_replay.sha256.`` companion is there, its
``otel_replay.bytes.`` one is not, and the digest is not the lowercase hex SHA-256 of
the value.  The query looks the usual payloads up by name and pairs the attributes of
any other span with their digests: spans are drawn with digests of both kinds of
attribute, right, wrong, in capitals, empty, without their value, beside exact bytes.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from otel_replay import attributes as A
from otel_replay.commands.clickhouse_sql import DAMAGED

pytestmark = pytest.mark.chdb

#: Payloads the query looks up by name, and others it pairs with their digests.
_KEYS = (
    A.INPUT_MESSAGES,
    A.OUTPUT_MESSAGES,
    A.TOOL_CALL_ARGUMENTS,
    A.TOOL_CALL_RESULT,
    A.SYSTEM_INSTRUCTIONS,
    A.TOOL_DEFINITIONS,
    "app.payload",
)
_STATES = ("absent", "plain", "right", "wrong", "capitals", "empty", "digest only", "bytes")


@st.composite
def _attributes(draw: Any) -> list[tuple[str, str]]:
    """A span's attributes: each payload of :data:`_KEYS` in one of :data:`_STATES`, and
    other attributes, in a drawn order."""
    pairs: list[tuple[str, str]] = []
    # Most spans carry the usual payloads, most digests right: both answers are drawn.
    keys = st.sampled_from(_KEYS[:5]) | st.sampled_from(_KEYS)
    for key in draw(st.lists(keys, unique=True, max_size=3)):
        state = draw(st.sampled_from(("right",) * len(_STATES)) | st.sampled_from(_STATES))
        value = draw(st.text(max_size=40))
        digest = hashlib.sha256(value.encode()).hexdigest()
        if state != "absent" and state != "digest only":
            pairs.append((key, value))
        if state in ("right", "digest only"):
            pairs.append((A.SHA256 + key, digest))
        elif state in ("wrong", "bytes"):  # beside exact bytes, the text is not them
            pairs.append((A.SHA256 + key, hashlib.sha256(b"x" + value.encode()).hexdigest()))
        elif state == "capitals":
            pairs.append((A.SHA256 + key, digest.upper()))
        elif state == "empty":
            pairs.append((A.SHA256 + key, ""))
        if state == "bytes":
            pairs.append((A.BYTES + key, "eA=="))
    pairs += draw(st.lists(st.tuples(st.sampled_from(["user.id", "x"]), st.text(max_size=5))))
    return draw(st.permutations(list(dict(pairs).items())))


def _damaged(pairs: list[tuple[str, str]]) -> bool:
    """The definition, in Python."""
    attrs = dict(pairs)
    return any(
        A.SHA256 + k in attrs
        and A.BYTES + k not in attrs
        and hashlib.sha256(v.encode()).hexdigest() != attrs[A.SHA256 + k]
        for k, v in attrs.items()
    )


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from otel_replay.sources.clickhouse.database import connect

    return connect(f"chdb://{tmp_path_factory.mktemp('engine')}")


@given(spans=st.lists(_attributes(), min_size=1, max_size=8))
@settings(max_examples=60, deadline=None)
def test_a_payload_is_damaged_in_clickhouse_where_its_digest_says_so(
    engine: Any, spans: list[list[tuple[str, str]]]
) -> None:
    """Every drawn span: ClickHouse's condition is the definition's."""
    rows = "\n".join(json.dumps({"n": n, "a": dict(pairs)}) for n, pairs in enumerate(spans))
    sql = (
        "SELECT n, toUInt8(damaged) AS damaged FROM (SELECT n, a, mapKeys(a) AS names,"
        f" mapValues(a) AS values, {DAMAGED} AS damaged"
        " FROM format(JSONEachRow, 'n UInt32, a Map(String, String)', {rows:String}))"
        " ORDER BY n"
    )
    got = [bool(row["damaged"]) for row in engine.rows(sql, {"rows": rows})]
    want = [_damaged(pairs) for pairs in spans]
    for pairs in spans:
        digested = {k.removeprefix(A.SHA256) for k, _ in pairs if k.startswith(A.SHA256)}
        event("looked up by name" if digested <= set(_KEYS[:5]) else "paired")
    event(f"damaged: {sorted(set(want))}")
    assert got == want
