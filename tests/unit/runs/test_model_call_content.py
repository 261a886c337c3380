"""A model step's system instructions, tool definitions and HTTP exchange are what their
attributes record, whichever of their companions a span carries: a span that records
none of them is told so from one pass over its attributes, and says the same."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import attributes as A
from otel_replay.payload import codec as payload
from otel_replay.payload import references
from otel_replay.runs import steps

DEFINITIONS = json.dumps([{"name": "lookup", "parameters": {"type": "object"}}])
SYSTEM = json.dumps([{"type": "text", "content": "Be brief."}])
BODY = json.dumps({"choices": [{"message": {"role": "assistant", "content": "hi"}}]})


def _companions(key: str, text: str) -> dict[str, Any]:
    """Every name ``key``'s content may be recorded under, with a value it may hold."""
    return {
        key: text,
        A.SHA256 + key: payload.sha256(text.encode()),
        A.TYPE + key: payload.JSON,
        A.BYTES + key: text.encode(),
        A.REF + key: "sha256:" + "0" * 64,
        # Read from the store the test allows (see ``store``); the other, refused.
        key + A.STORED_REF: f"{STORE}/{key}.json",
    }


#: Where the drawn spans' stored references point: made a real store by ``store``.
STORE = "file:///otel-replay-test-store"


#: Every attribute a drawn model span may carry.
NAMES: dict[str, Any] = {
    **_companions(A.SYSTEM_INSTRUCTIONS, SYSTEM),
    **_companions(A.TOOL_DEFINITIONS, DEFINITIONS),
    **_companions(A.HTTP_RESPONSE_BODY, BODY),
    A.HTTP_RESPONSE_HEADERS: json.dumps({"Content-Type": "application/json"}),
    A.HTTP_STATUS: 200,
    A.INPUT_MESSAGES: json.dumps([{"role": "user", "parts": [{"type": "text", "content": "x"}]}]),
    A.SHA256 + A.OUTPUT_MESSAGES: "f" * 64,
    A.REQUEST_MODEL: "m",
    A.REQUEST_PREFIX + "temperature": 0.5,
    A.USAGE_INPUT_TOKENS: 3,
    "otel_replay.something.else": "x",
    "gen_ai.system": "openai",
}

spans = st.dictionaries(
    st.sampled_from(sorted(NAMES)),
    st.sampled_from([None, "", "[]", "not json", 7, ["a"], "file:///elsewhere/x.json"]),
    max_size=8,
).map(lambda drawn: {k: NAMES[k] if v is None else v for k, v in drawn.items()})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """The stored references of :data:`NAMES` read from files, as the upload hook wrote them."""
    where = tmp_path_factory.mktemp("store")
    (where / f"{A.SYSTEM_INSTRUCTIONS}.json").write_text(SYSTEM)
    (where / f"{A.TOOL_DEFINITIONS}.json").write_text(DEFINITIONS)
    references.use_content_refs([f"{STORE}={where}"])
    yield
    references.use_content_refs(None)


def test_a_stored_reference_is_read(store: None) -> None:
    attrs = {
        A.OPERATION_NAME: "chat",
        A.SYSTEM_INSTRUCTIONS + A.STORED_REF: NAMES[A.SYSTEM_INSTRUCTIONS + A.STORED_REF],
    }
    assert steps.model_call(attrs).system_instructions == [{"type": "text", "content": "Be brief."}]


@settings(max_examples=400, deadline=None)
@given(attrs=spans)
def test_the_content_is_what_each_companion_records(store: None, attrs: dict[str, Any]) -> None:
    call = steps.model_call({A.OPERATION_NAME: "chat", **attrs})
    whole = {A.OPERATION_NAME: "chat", **attrs}
    system, _ = steps._content(whole, A.SYSTEM_INSTRUCTIONS, None, text=True)
    tools, _ = steps._content(whole, A.TOOL_DEFINITIONS, None)
    assert call.system_instructions == steps._system(system)
    assert call.tool_definitions == steps._tool_definitions(tools)
    assert call.raw == steps.raw_http(whole)
