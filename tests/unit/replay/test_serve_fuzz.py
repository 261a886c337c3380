"""``otel-replay serve`` fuzzed: every wire route's request body, mutated, against its ASGI app.

The seeds are what the real SDKs send: the recorded conversation of each API
replayed through the OpenAI SDK (Chat Completions, Responses) and the
Anthropic SDK (Messages) against the app in process, each request body
captured as the SDK wrote it.  Hypothesis mutates them: a wrong type in any
field, lone surrogates, NaN and infinities, huge and nested numbers, deep
nesting, keys missing or added, streaming on and off, bytes cut short, and
odd ``Content-Type``, ``Host`` and ``Origin`` headers.  Whatever comes in,
the answer is never a 500 nor an exception out of the app, it is JSON a
strict parser reads (an error naming what is wrong, or a served answer; a
stream's events each), the refusals come in the gate's order (421, 403,
415), and afterwards the recorded conversation is served exactly as before.
A few hundred bodies in the default tier, thousands in the slow tier.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from tests.unit.replay.test_serve import DATA, requests_of, without_stream
from tests.unit.replay.test_serve_hostile import (
    JSON_TYPES,
    LOOPBACK,
    NOT_JSON,
    OTHER_HOSTS,
    PORTS,
    InProcess,
    nodes,
    strict_json,
)

#: Each wire's route and a recording of it.
WIRES = {
    "/v1/chat/completions": "otel_openai_v2/chat_sync",
    "/v1/responses": "openinference_openai/responses_sync",
    "/v1/messages": "anthropic_openllmetry/sync",
}


class Wire:
    """One route's app, the bodies the real SDK sent it, and the answers it got."""

    def __init__(self, path: str) -> None:
        self.path = path
        case = WIRES[path]
        self.logged: list[str] = []
        engine = ReplayEngine(
            otel_replay.load(str(DATA / case / "traces.otlp.jsonl")), log=self.logged.append
        )
        self.served = InProcess(engine)
        self.seeds: list[bytes] = []
        self.answers: list[Any] = []
        self._sdk([without_stream(r["body_json"]) for r in requests_of(case)])

    def _sdk(self, bodies: list[dict[str, Any]]) -> None:
        """The recorded requests sent by the real SDK of the API; their bodies kept."""

        async def sent(request: httpx2.Request) -> None:
            assert request.headers["content-type"] == "application/json"
            assert request.headers["host"] == "127.0.0.1:8765"
            self.seeds.append(request.content)

        # The SDKs' own HTTP client (httpx2), over the app in process.
        http = httpx2.AsyncClient(
            transport=httpx2.ASGITransport(app=self.served.app), event_hooks={"request": [sent]}
        )
        base = "http://127.0.0.1:8765"
        create: Callable[..., Any]
        if self.path == "/v1/messages":
            client: Any = anthropic.AsyncAnthropic(
                api_key="unused", base_url=base, http_client=http, max_retries=0
            )
            create = client.messages.create
        else:
            client = openai.AsyncOpenAI(
                api_key="unused", base_url=base + "/v1", http_client=http, max_retries=0
            )
            api = client.responses if self.path == "/v1/responses" else client.chat.completions
            create = api.create

        async def replay() -> None:
            for body in bodies:
                await create(**body)
            await http.aclose()

        self.served.loop.run_until_complete(replay())
        assert len(self.seeds) == len(bodies)
        self.answers = self.replay("before")

    def replay(self, name: str) -> list[Any]:
        """The seeds sent again in a conversation of their own: the answers' JSON."""
        answers = []
        for seed in self.seeds:
            r = self.served.post(self.path, seed, {CONVERSATION_HEADER: name})
            assert r.status_code == 200, r.text[:300]
            answers.append(r.json())
        return answers


@pytest.fixture(scope="module")
def wires() -> Iterator[dict[str, Wire]]:
    made = {path: Wire(path) for path in WIRES}
    try:
        yield made
    finally:
        for wire in made.values():
            wire.served.close()


# --- what is sent --------------------------------------------------------------------------

#: Text with lone surrogates among other characters (a list joined: st.text() never
#: gives a lone surrogate).
TEXT = st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"])), max_size=12).map(
    "".join
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**18, max_value=10**300),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
#: Stands for an integer of 5,000 digits (more than Python reads from text by default).
HUGE = "@@5000 digits@@"
#: Numbers JSON has not (NaN, infinities), or that no float holds, or huge ones.
NUMBERS = st.sampled_from(
    [math.nan, math.inf, -math.inf, 10**400, HUGE, 2**63, -0.0, 1e308, 5e-324]
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(TEXT, inner, max_size=4)),
    max_leaves=12,
)


def nested(depth: int, leaf: Any) -> Any:
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


@st.composite
def mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    """A seed body with one to four mutations, as bytes (sometimes not even JSON)."""
    doc = json.loads(seed)
    for _ in range(draw(st.integers(1, 4))):
        # A field of the body first, then a place in it: the messages, which hold most
        # places, are not drowned out by the tools' schemas, nor the other fields by both.
        top = draw(st.sampled_from([None, *doc])) if isinstance(doc, dict) and doc else None
        within = doc if top is None else doc[top]
        at = draw(st.sampled_from([() if top is None else (top, *p) for p, _ in nodes(within)]))
        how = draw(
            st.sampled_from(
                ["value", "surrogate", "number", "delete", "add", "nest", "stream", "empty"]
            )
        )
        parent: Any = doc
        for step in at[:-1]:
            parent = parent[step]
        if how == "stream":
            doc["stream"] = draw(st.one_of(st.booleans(), SCALARS))
        elif not at:
            doc = draw(VALUES) if how == "value" else doc
        elif how == "value":
            parent[at[-1]] = draw(VALUES)
        elif how == "surrogate":  # in a string of the body, or in place of the value
            old = parent[at[-1]]
            text = old if isinstance(old, str) else ""
            cut = draw(st.integers(0, len(text)))
            lone = draw(st.characters(categories=["Cs"]))
            parent[at[-1]] = text[:cut] + lone + text[cut:]
        elif how == "number":
            parent[at[-1]] = draw(NUMBERS)
        elif how == "delete":
            del parent[at[-1]]
        elif how == "add" and isinstance(parent, dict):
            parent[draw(TEXT)] = draw(VALUES)
        elif how == "nest":
            depth = draw(st.sampled_from([2, 10, 40, 63, 64, 65, 200]))
            parent[at[-1]] = nested(depth, parent[at[-1]])
        elif how == "empty":
            parent[at[-1]] = draw(st.sampled_from([[], {}, "", [{}], [[]], [None]]))
        if not isinstance(doc, dict):
            break
    data = json.dumps(doc, allow_nan=True).replace(json.dumps(HUGE), "9" * 5000).encode()
    cut = draw(st.one_of(st.just(None), st.just(None), st.integers(0, len(data))))
    if cut is not None:
        data = data[:cut] + draw(st.sampled_from([b"", b"\xff", b"\x00", b"}", b"\\ud800"]))
    return data


@st.composite
def headers(draw: st.DrawFn) -> tuple[dict[str, str], int | None]:
    """Request headers, and the status the gate must refuse them with (None: let in)."""
    refused: int | None = None
    out: dict[str, str] = {}
    if draw(st.integers(0, 9)) == 0:
        out["host"] = draw(OTHER_HOSTS) + draw(PORTS)
        refused = 421
    elif draw(st.booleans()):
        out["host"] = draw(LOOPBACK) + draw(PORTS)
    if draw(st.integers(0, 9)) == 0:
        out["origin"] = "http://" + draw(OTHER_HOSTS)
        refused = refused or 403
    if draw(st.integers(0, 9)) == 0:
        out["content-type"] = draw(NOT_JSON)
        refused = refused or 415
    else:
        out["content-type"] = draw(JSON_TYPES)
    if draw(st.booleans()):
        name = draw(st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=12))
        out[CONVERSATION_HEADER] = name.strip() or "x"
    return out, refused


# --- what must come back --------------------------------------------------------------------


#: What each route's served JSON answer is.
OBJECTS = {"/v1/chat/completions": "chat.completion", "/v1/responses": "response"}


def check_answer(path: str, response: httpx.Response, refused: int | None) -> None:
    status = response.status_code
    assert status != 500 and status < 500, response.text[:500]
    if refused is not None:
        assert status == refused, response.text[:300]
    kind = response.headers.get("content-type", "")
    if status == 200 and kind.startswith("text/event-stream"):
        events = [
            line[5:].strip()
            for line in response.content.decode("utf-8").splitlines()
            if line.startswith("data:")
        ]
        assert events
        for event in events:
            if event != "[DONE]":
                assert isinstance(strict_json(event.encode()), dict)
        return
    assert kind.startswith("application/json"), kind
    doc = strict_json(response.content)
    if status == 200:
        assert doc.get("object", doc.get("type")) == OBJECTS.get(path, "message"), doc
    else:
        assert status in (400, 403, 404, 409, 413, 415, 421), status
        assert isinstance(doc["error"]["message"], str) and doc["error"]["message"]


FUZZ = settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.parametrize("examples", [120, pytest.param(3000, marks=pytest.mark.slow)])
@pytest.mark.parametrize("path", list(WIRES))
def test_a_mutated_body_is_never_a_500(path: str, examples: int, wires: dict[str, Wire]) -> None:
    wire = wires[path]

    @settings(FUZZ, max_examples=examples)
    @given(data=st.data())
    def fuzz(data: st.DataObject) -> None:
        extra, refused = data.draw(headers())
        body = data.draw(mutated(data.draw(st.sampled_from(wire.seeds))))
        check_answer(path, wire.served.post(path, body, extra), refused)
        assert not any("Traceback" in line for line in wire.logged)

    fuzz()


@pytest.mark.parametrize("path", list(WIRES))
def test_the_recording_is_served_as_before_after_the_fuzzing(
    path: str, wires: dict[str, Wire]
) -> None:
    # Runs after the fuzz tests of the module (pytest keeps the file's order).
    wire = wires[path]
    assert wire.replay("after") == wire.answers


def test_the_seeds_are_what_the_sdks_send(wires: dict[str, Wire]) -> None:
    for path, wire in wires.items():
        recorded = [without_stream(r["body_json"]) for r in requests_of(WIRES[path])]
        assert [json.loads(s) for s in wire.seeds] == recorded
