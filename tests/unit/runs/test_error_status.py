"""The error status a failed model call got, and the body the server sent, read from its span
in every way instrumentations and clients say them: a span attribute (an int, or LiteLLM's
``error.code`` text), httpx's ``raise_for_status`` error or the OpenAI and Anthropic SDKs'
``APIStatusError`` in an error's message or stack trace; and the body quoted in an error's
message after text that holds braces of its own.  Where nothing names a status (a connection
error, a success status, a number that is no status), none is read.  The real traces of
LiteLLM failing on 500 and 503 are served again in tests/conformance/test_serve_requests.py."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from otel_replay.runs.error_status import error_body, error_status
from otel_replay.runs.model import Step

_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="{"), max_size=40)


def _step(attributes: dict[str, Any], message: str = "", trace: str = "") -> Step:
    events = [
        {
            "name": "exception",
            "time_ns": 1,
            "attributes": {"exception.message": message, "exception.stacktrace": trace},
        }
    ]
    return Step(
        "model",
        "chat",
        "s" * 16,
        None,
        "t" * 32,
        1,
        2,
        attributes=attributes,
        status="ERROR",
        status_message=message,
        events=events,
    )


@st.composite
def _said(draw: st.DrawFn, status: int) -> Step:
    """A failed call whose span says ``status`` one way."""
    before, after = draw(_TEXT), draw(_TEXT)
    way = draw(st.sampled_from(["attribute", "attribute text", "error.code", "httpx", "sdk"]))
    if way == "attribute":
        return _step({"http.response.status_code": status})
    if way == "attribute text":
        return _step({"http.response.status_code": str(status)})
    if way == "error.code":
        return _step({"error.code": str(status), "error.type": "ServiceUnavailableError"})
    if way == "httpx":
        kind = "Server" if status >= 500 else "Client"
        said = f"{before}{kind} error '{status} Reason' for url 'http://h/v1/x'{after}"
        return _step({}, message="Connection error.", trace=said)
    return _step({}, message=f"Error code: {status} - {{'error': {{}}}}{after}")


@given(st.integers(400, 599).flatmap(lambda s: st.tuples(st.just(s), _said(s))))
def test_an_error_status_is_read_however_the_span_says_it(drawn: tuple[int, Step]) -> None:
    status, step = drawn
    assert error_status(step) == status


@given(
    st.one_of(
        st.integers(100, 399).map(lambda s: _step({"http.response.status_code": s})),
        st.integers(600, 10**6).map(lambda s: _step({"http.response.status_code": s})),
        st.just(_step({"http.response.status_code": True})),
        st.just(_step({"error.code": "rate_limit_exceeded"})),
        st.just(_step({"error.code": "５０３"})),  # digits, not ASCII ones
        _TEXT.map(lambda t: _step({}, message=t.replace("rror", ""))),
        st.just(_step({}, message="APIConnectionError: Connection error.")),
        st.just(_step({}, message="Error code: 200 - {}")),
    )
)
def test_no_status_is_read_where_none_is_named(step: Step) -> None:
    assert error_status(step) is None


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    _TEXT,
    st.sampled_from(["", "{not json} ", "{'error': 'a repr'} ", '{"a": 1} ', "{{ "]),
    st.dictionaries(st.text(max_size=8), _JSON, max_size=3),
    _TEXT,
)
def test_the_error_body_quoted_in_a_message_is_read(
    before: str, noise: str, extra: dict[str, Any], after: str
) -> None:
    body = {**extra, "error": {"message": "The engine is currently overloaded", "code": 503}}
    message = f"{before}{noise}OpenAIException - {json.dumps(body)}{after}"
    assert error_body(_step({}, message=message)) == body


@given(_TEXT, st.sampled_from(["", "{not json}", '{"a": 1}', "{'error': 'a repr'}", "{" * 40]))
def test_no_body_is_read_where_none_is_quoted(before: str, noise: str) -> None:
    assert error_body(_step({}, message=before + noise)) is None
