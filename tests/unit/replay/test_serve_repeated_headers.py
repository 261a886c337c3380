"""serve: a Host, Origin or Content-Type given twice is refused, whichever comes first.

The gate reads one value of each header; a second one could say something else
to what reads the request after it (``Host: evil.example`` then
``Host: 127.0.0.1:PORT`` passed, the last winning).  Drawn over the three
headers, the order of a foreign and a good value, and other headers around them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.engine import ReplayEngine
from tests.unit.replay.test_serve_hostile import CHAT, DATA, InProcess, bodies

#: (header, a value the gate refuses, a value it serves).
PAIRS = {
    "host": ("evil.example:8765", "127.0.0.1:8765"),
    "origin": ("http://evil.example", "http://127.0.0.1:8765"),
    "content-type": ("text/plain", "application/json"),
}


@pytest.fixture(scope="module")
def served() -> Iterator[InProcess]:
    app = InProcess(ReplayEngine(otel_replay.load(str(DATA / CHAT / "traces.otlp.jsonl"))))
    try:
        yield app
    finally:
        app.close()


def post(app: InProcess, headers: list[tuple[str, str]]) -> int:
    request = app.client.post("/v1/chat/completions", content=bodies(CHAT)[0], headers=headers)
    return app.loop.run_until_complete(request).status_code


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(sorted(PAIRS)),
    foreign_first=st.booleans(),
    case=st.sampled_from([str.lower, str.title, str.upper]),
    extra=st.lists(st.sampled_from([("accept", "*/*"), ("x-trace", "1")]), max_size=2),
)
def test_a_gated_header_given_twice_is_refused(
    served: InProcess, name: str, foreign_first: bool, case: object, extra: list[tuple[str, str]]
) -> None:
    bad, good = PAIRS[name]
    pair = [(case(name), bad), (case(name), good)]  # type: ignore[operator]
    base = {"host": "127.0.0.1:8765", "content-type": "application/json"}
    headers = [(k, v) for k, v in base.items() if k != name]
    headers += extra + (pair if foreign_first else pair[::-1])
    assert post(served, headers) in (400, 403, 415, 421)


def test_the_same_request_with_each_header_once_is_served(served: InProcess) -> None:
    headers = [("host", "127.0.0.1:8765"), ("content-type", "application/json")]
    assert post(served, headers) == 200
