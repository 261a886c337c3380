"""``otel-replay serve`` against web pages and careless clients, its ASGI app driven in process.

A web page can be made to send requests to a server on 127.0.0.1: by DNS
rebinding (its own name resolving to 127.0.0.1, so the request carries that
name as ``Host``) or by posting there directly (its ``Origin`` on the
request), either as a "simple request" (``text/plain``, a form) that a
browser sends without a CORS preflight.  Each class of such request is drawn
many times and must be refused before the engine sees it, while every name
of the loopback interface (any case, any port) and the names the server is
told to allow are served.

Many clients naming distinct conversations, and divergent requests with and
without names, must leave every table of the engine bounded (entries
counted, memory traced), the least recently used conversation forgotten
first.  And a malformed body, whatever field is wrong, gets a 400 naming
it, never a 500.
"""

from __future__ import annotations

import asyncio
import gc
import json
import tracemalloc
from collections import deque
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.adapters.server import LOOPBACK_HOSTS, ReplayApp
from otel_replay.replay.engine import CONVERSATION_HEADER, Conversation, ReplayEngine
from otel_replay.replay.pinned_model import PinnedModel
from otel_replay.runs.model import Step
from tests.unit.replay.test_serve import DATA, requests_of, serving, without_stream

CHAT = "otel_openai_v2/chat_sync"
#: A case of each wire format: (recording, path).
WIRES = {
    "/v1/chat/completions": CHAT,
    "/v1/responses": "openinference_openai/responses_sync",
    "/v1/messages": "anthropic_openllmetry/sync",
}
JSON = {"content-type": "application/json"}


class InProcess:
    """``serve``'s ASGI app over an engine, driven by an httpx client in process."""

    def __init__(self, engine: ReplayEngine, hosts: tuple[str, ...] = ("127.0.0.1",)) -> None:
        self.engine = engine
        self.app = ReplayApp(engine, hosts=hosts)
        self.loop = asyncio.new_event_loop()
        self.client = httpx.AsyncClient(
            transport=httpx.ASGITransport(app=self.app), base_url="http://127.0.0.1:8765"
        )

    def post(
        self, path: str, content: bytes, headers: dict[str, str] | None = None
    ) -> httpx.Response:
        request = self.client.post(path, content=content, headers={**JSON, **(headers or {})})
        return self.loop.run_until_complete(request)

    def close(self) -> None:
        self.loop.run_until_complete(self.client.aclose())
        self.loop.close()
        self.app.close()


@pytest.fixture(scope="module")
def runs() -> dict[str, list[otel_replay.Run]]:
    return {
        case: otel_replay.load(str(DATA / case / "traces.otlp.jsonl")) for case in WIRES.values()
    }


@pytest.fixture
def chat(runs: dict[str, list[otel_replay.Run]]) -> Iterator[InProcess]:
    served = InProcess(ReplayEngine(runs[CHAT]))
    try:
        yield served
    finally:
        served.close()


def bodies(case: str) -> list[bytes]:
    """The recorded requests of a case as its client sent them (no streaming)."""
    return [json.dumps(without_stream(r["body_json"])).encode() for r in requests_of(case)]


def divergent(case: str = CHAT, text: str = "something never recorded") -> bytes:
    body = without_stream(requests_of(case)[0]["body_json"])
    body["messages"] = [{"role": "user", "content": text}]
    return json.dumps(body).encode()


def refused(response: httpx.Response, status: int, kind: str) -> None:
    """A refusal: the status, a JSON error of that kind, nothing of the recording."""
    assert response.status_code == status, response.text[:300]
    error = response.json()["error"]
    assert error["type"] == kind and isinstance(error["message"], str)
    assert "divergence" not in error and "x-otel-replay-run" not in response.headers


# --- Host, Origin, Content-Type -----------------------------------------------------------

_LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,20}[a-z0-9])?", fullmatch=True)
#: Names a web page's request may carry as Host after DNS rebinding: any DNS name, an
#: address other than loopback's, and near misses of the loopback names.
OTHER_HOSTS = st.one_of(
    st.builds(".".join, st.lists(_LABEL, min_size=1, max_size=4)),
    st.ip_addresses(v=4).map(str).filter(lambda a: a != "127.0.0.1"),
    st.ip_addresses(v=6).map(lambda a: f"[{a}]").filter(lambda a: a != "[::1]"),
    st.sampled_from(
        [
            "localhost.evil.example",
            "127.0.0.1.nip.io",
            "evil.example#127.0.0.1",
            "127.0.0.1@evil.example",
            "localhost:80@evil.example",
            "127.0.0.1:abc",
            "127.0.0.1:",
            "::1",
            "[::1",
            "localhost.",
            "127.0.0.2",
            "0.0.0.0",
            "",
            "127.0.0.1 evil.example",
        ]
    ),
).filter(lambda name: name.lower() not in LOOPBACK_HOSTS)
PORTS = st.one_of(st.just(""), st.integers(1, 65535).map(lambda p: f":{p}"))


def any_case(name: str) -> st.SearchStrategy[str]:
    return st.lists(st.booleans(), min_size=len(name), max_size=len(name)).map(
        lambda upper: "".join(c.upper() if u else c for c, u in zip(name, upper, strict=True))
    )


LOOPBACK = st.sampled_from(LOOPBACK_HOSTS).flatmap(any_case)
SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(name=OTHER_HOSTS, port=PORTS, simple=st.sampled_from(["text/plain", "application/json"]))
def test_a_host_that_is_not_a_name_of_the_server_is_refused(
    chat: InProcess, name: str, port: str, simple: str
) -> None:
    # What a rebound page would send: the recording's second request diverges, and its
    # 409 would show the page the recorded request to make next.
    before = dict(chat.engine.conversations)
    response = chat.post(
        "/v1/chat/completions", divergent(), {"host": name + port, "content-type": simple}
    )
    refused(response, 421, "misdirected_request")
    assert chat.engine.conversations == before  # the engine never saw it


@SETTINGS
@given(name=LOOPBACK, port=PORTS)
def test_every_loopback_name_in_any_case_with_or_without_a_port_is_served(
    chat: InProcess, name: str, port: str
) -> None:
    response = chat.post("/v1/chat/completions", bodies(CHAT)[0], {"host": name + port})
    assert response.status_code == 200, response.text
    assert response.json()["object"] == "chat.completion"


@SETTINGS
@given(
    scheme=st.sampled_from(["http", "https", "HTTP"]),
    name=OTHER_HOSTS,
    port=PORTS,
    loopback=LOOPBACK,
)
def test_a_page_of_another_site_is_refused_one_of_the_server_is_not(
    chat: InProcess, scheme: str, name: str, port: str, loopback: str
) -> None:
    first = bodies(CHAT)[0]
    for origin in (f"{scheme}://{name}{port}", "null", f"file://{loopback}", loopback):
        refused(chat.post("/v1/chat/completions", first, {"origin": origin}), 403, "forbidden")
    served = chat.post("/v1/chat/completions", first, {"origin": f"{scheme}://{loopback}{port}"})
    assert served.status_code == 200, served.text


#: Content types a page may send without a CORS preflight, and others that are not JSON.
NOT_JSON = st.one_of(
    st.sampled_from(
        [
            "text/plain",
            "text/plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=xyz",
            "",
            "text/html",
            "application/jsonp",
            "application/json-seq",
            "application/xml",
            "json",
            "application/json+",
            "+json",
        ]
    ),
    st.builds(
        "{}/{}".format, _LABEL, _LABEL.filter(lambda s: s != "json" and not s.endswith("json"))
    ),
)
JSON_TYPES = st.one_of(
    st.sampled_from(
        [
            "application/json",
            "application/json; charset=utf-8",
            "APPLICATION/JSON",
            "application/json ; charset=UTF-8",
            "application/vnd.api+json",
            "application/merge-patch+json",
        ]
    ),
    st.builds("application/vnd.{}+json".format, _LABEL),
)


@SETTINGS
@given(not_json=NOT_JSON, json_type=JSON_TYPES)
def test_a_post_that_does_not_say_json_is_refused(
    chat: InProcess, not_json: str, json_type: str
) -> None:
    first = bodies(CHAT)[0]
    before = dict(chat.engine.conversations)
    refused(
        chat.post("/v1/chat/completions", first, {"content-type": not_json}),
        415,
        "unsupported_media_type",
    )
    assert chat.engine.conversations == before
    served = chat.post("/v1/chat/completions", first, {"content-type": json_type})
    assert served.status_code == 200, served.text


def test_a_post_without_a_content_type_is_refused(chat: InProcess) -> None:
    request = chat.client.build_request("POST", "/v1/chat/completions", content=bodies(CHAT)[0])
    assert "content-type" not in request.headers
    response = chat.loop.run_until_complete(chat.client.send(request))
    refused(response, 415, "unsupported_media_type")


def test_allow_host_adds_a_name_and_the_real_server_still_refuses_others() -> None:
    trace = DATA / CHAT / "traces.otlp.jsonl"
    with serving(trace, "--allow-host", "Replay.Internal") as url, httpx.Client() as client:
        port = url.rsplit(":", 1)[1]
        first = bodies(CHAT)[0]

        def post(host: str, **headers: str) -> httpx.Response:
            return client.post(
                url + "/v1/chat/completions",
                content=first,
                headers={**JSON, "host": host, **headers},
            )

        assert post(f"replay.internal:{port}").status_code == 200
        assert post("replay.internal").status_code == 200
        refused(post(f"other.internal:{port}"), 421, "misdirected_request")
        refused(post(f"127.0.0.1:{port}", origin="http://other.internal"), 403, "forbidden")
        simple = client.post(
            url + "/v1/chat/completions", content=first, headers={"content-type": "text/plain"}
        )
        refused(simple, 415, "unsupported_media_type")
        # The answer is JSON, and the connection is closed: the body was never read.
        assert simple.headers["connection"] == "close"


# --- bounded tables -----------------------------------------------------------------------


def entries(engine: ReplayEngine) -> int:
    """Entries in every table the engine keeps: each dict, list, set or deque among its
    attributes, the containers in them one level down, and each conversation's own."""
    total = 0
    for value in vars(engine).values():
        if isinstance(value, (dict, list, set, deque)):
            total += len(value)
            inner = value.values() if isinstance(value, dict) else value
            for item in inner:
                if isinstance(item, (dict, list, set, deque)):
                    total += len(item)
    for conv in engine.conversations.values():
        for value in vars(conv).values():
            if isinstance(value, (dict, set)) or (
                isinstance(value, list) and value is not conv.transcript
            ):
                total += len(value)
    return total


@pytest.mark.parametrize("requests", [480, pytest.param(5_000, marks=pytest.mark.slow)])
def test_tables_stay_bounded_under_distinct_names_and_divergent_bodies(
    requests: int, runs: dict[str, list[otel_replay.Run]]
) -> None:
    bound = 8
    served = InProcess(ReplayEngine(runs[CHAT], max_conversations=bound))
    first = bodies(CHAT)[0]
    path = "/v1/chat/completions"
    counts: list[int] = []
    memory: list[int] = []
    # The divergent texts come from a few: the matcher's process-wide memo of texts
    # (bounded, and no table of the engine's) would otherwise grow as the tables must not.
    texts = [divergent(text=f"never recorded {k}") for k in range(7)]
    try:
        for i in range(requests):
            if i < bound:  # as many clients as are kept
                assert served.post(path, first).status_code == 200
            elif i % 2:  # a new name, a request the recording never had
                r = served.post(path, texts[i % 7], {CONVERSATION_HEADER: f"client-{i}"})
                assert r.status_code == 409, r.text
            else:  # divergent and unnamed: it lands on the last conversation
                assert served.post(path, texts[i % 7]).status_code == 409
            if i == requests // 3:
                tracemalloc.start()
            if i % 50 == 49:
                counts.append(entries(served.engine))
                if tracemalloc.is_tracing():
                    gc.collect()  # the client's and the loop's garbage is no table's
                    memory.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
        served.close()
    engine = served.engine
    assert len(engine.conversations) <= bound
    assert len(engine._named) <= bound
    # Per conversation: its entry, its names, its filings under the two waiting indexes
    # and the response index (and each index's key); plus one key per recorded step.
    assert max(counts) <= 12 * bound + 16, counts
    # Flat: what the last requests add is noise, not growth per request (it was
    # about 100 bytes a request, a name and a waiting entry each).
    half = len(memory) // 2
    assert memory[-1] - memory[half] < 8 * 1024, memory


def test_the_least_recently_used_conversation_is_forgotten_first(
    runs: dict[str, list[otel_replay.Run]],
) -> None:
    served = InProcess(ReplayEngine(runs[CHAT], max_conversations=4))
    first, second, third = bodies(CHAT)
    path = "/v1/chat/completions"

    def conversation(r: httpx.Response) -> str:
        return r.headers.get(CONVERSATION_HEADER) or str(r.json()["error"]["conversation"])

    try:
        keep = conversation(served.post(path, first, {CONVERSATION_HEADER: "keep"}))
        others = []
        for i in range(12):
            r = served.post(path, first, {CONVERSATION_HEADER: f"other-{i}"})
            others.append(conversation(r))
            if i % 2:  # "keep" is used now and then: a divergent request of its own
                used = served.post(path, divergent(text=f"k{i}"), {CONVERSATION_HEADER: "keep"})
                assert used.status_code == 409 and conversation(used) == keep
        # "keep" goes on where it was; the last three others are kept too.
        r = served.post(path, second, {CONVERSATION_HEADER: "keep"})
        assert r.status_code == 200 and conversation(r) == keep
        assert r.headers["x-otel-replay-step"] != "0"
        for name, cid in zip(("other-10", "other-11"), others[10:], strict=True):
            r = served.post(path, second, {CONVERSATION_HEADER: name})
            assert r.status_code == 200 and conversation(r) == cid
        # The first other, unused since, was forgotten: its name starts over.
        r = served.post(path, first, {CONVERSATION_HEADER: "other-0"})
        assert r.status_code == 200 and conversation(r) not in others
        assert served.post(path, third, {CONVERSATION_HEADER: "keep"}).status_code == 200
    finally:
        served.close()


def test_divergent_requests_never_file_a_conversation_twice(
    runs: dict[str, list[otel_replay.Run]],
) -> None:
    engine = ReplayEngine(runs[CHAT])
    first = bodies(CHAT)[0]
    assert engine.handle("POST", "/v1/chat/completions", first, JSON).status == 200
    for i in range(50):
        answer = engine.handle("POST", "/v1/chat/completions", divergent(text=f"x{i}"), JSON)
        assert answer.status == 409
    filed = [c for index in (engine._waiting, engine._waiting_last) for c in index.values()]
    assert sum(len(c) for c in filed) <= 2, filed
    (conv,) = engine.conversations.values()
    assert isinstance(conv, Conversation) and len(conv.waiting) <= 2


@settings(max_examples=5, deadline=None)
@given(lengths=st.lists(st.integers(1, 16_000), min_size=40, max_size=40))
def test_what_the_names_kept_hold_does_not_grow_with_the_names_sent(lengths: list[int]) -> None:
    # A header may be some 16 kB: 4,096 names of that size would hold 64 MiB.
    (run,) = otel_replay.load(str(DATA / CHAT / "traces.otlp.jsonl"))
    engine = ReplayEngine([run], max_conversations=16)
    first = bodies(CHAT)[0]
    for n, length in enumerate(lengths):
        name = f"{n}:" + "x" * length
        answer = engine.handle("POST", "/v1/chat/completions", first, {CONVERSATION_HEADER: name})
        assert answer.status == 200
        again = engine.handle(
            "POST", "/v1/chat/completions", divergent(), {CONVERSATION_HEADER: name}
        )
        error = json.loads(b"".join(again.chunks))["error"]
        assert error["conversation"] == answer.conversation  # the name still routes
    held = sum(map(len, engine._named)) + sum(
        len(name) for conv in engine.conversations.values() for name in conv.names
    )
    assert held <= 2 * 16 * 80, held


@pytest.mark.parametrize("kept", [10, 300])
def test_a_divergent_request_costs_the_same_however_many_conversations_are_kept(
    kept: int, runs: dict[str, list[otel_replay.Run]]
) -> None:
    looked = [0]

    class Counted(PinnedModel):
        def expected(self) -> Step | None:
            looked[0] += 1
            return super().expected()

    engine = ReplayEngine(runs[CHAT], model_factory=Counted)
    first = bodies(CHAT)[0]
    for n in range(kept):
        assert engine.handle("POST", "/v1/chat/completions", first, {CONVERSATION_HEADER: f"c{n}"})
    looked[0] = 0
    answer = engine.handle("POST", "/v1/chat/completions", divergent(), {CONVERSATION_HEADER: "c1"})
    assert answer.status == 409
    # The places the request might have belonged: five at most, however many are kept.
    assert looked[0] <= 8, looked


# --- malformed bodies ---------------------------------------------------------------------

#: A value of each JSON type, and values no API takes anywhere.
WRONG: list[Any] = [None, True, 0, -1.5, 10**30, "x", [], [1, "a"], {}, {"k": 5}]


def nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from nodes(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from nodes(v, (*path, i))


def _replaced(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    doc = json.loads(json.dumps(doc))
    if not path:
        return new
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = new
    return doc


def _where(path: tuple[Any, ...]) -> str:
    out = ""
    for step in path:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else step)
    return out


def strict_json(data: bytes) -> Any:
    """JSON as a strict parser reads it: UTF-8, no NaN or Infinity."""

    def refuse(constant: str) -> None:
        raise AssertionError(f"{constant} in an answer")

    return json.loads(data.decode("utf-8"), parse_constant=refuse)


def answered_well(answer: Any) -> None:
    """No 500; a JSON error, or a served answer whose JSON (or events' JSON) reads strictly."""
    data = b"".join(answer.chunks)
    assert answer.status != 500, data[:500]
    if answer.status == 200 and "text/event-stream" in dict(answer.headers)["content-type"]:
        for line in data.decode("utf-8").splitlines():
            if line.startswith("data:") and line[5:].strip() != "[DONE]":
                strict_json(line[5:].encode())
        return
    doc = strict_json(data)
    if answer.status != 200:
        assert isinstance(doc["error"]["message"], str)


@pytest.mark.parametrize("path", list(WIRES))
def test_a_wrong_value_in_any_field_is_a_400_or_served_never_a_500(
    path: str, runs: dict[str, list[otel_replay.Run]]
) -> None:
    case = WIRES[path]
    engine = ReplayEngine(runs[case])
    seed = without_stream(requests_of(case)[0]["body_json"])
    statuses: dict[int, int] = {}
    for where, _ in list(nodes(seed))[1:]:
        for new in WRONG:
            for stream in (False, True):
                doc = _replaced(seed, where, new)
                if isinstance(doc, dict):
                    doc["stream"] = stream
                answer = engine.handle("POST", path, json.dumps(doc).encode(), JSON)
                answered_well(answer)
                statuses[answer.status] = statuses.get(answer.status, 0) + 1
    assert set(statuses) <= {200, 400, 409}, statuses
    assert statuses[400] > 100, statuses


@pytest.mark.parametrize("path", list(WIRES))
@pytest.mark.parametrize(
    "bad", ['"\\ud800"', '"a\\udfffb"', '"\\udc00\\ud800"', "NaN", "-Infinity", "1e999"]
)
def test_a_lone_surrogate_or_a_number_json_has_not_is_a_400_naming_where(
    path: str, bad: str, runs: dict[str, list[otel_replay.Run]]
) -> None:
    """In place of any value of a real client's body (a string, a number, an object...)."""
    case = WIRES[path]
    engine = ReplayEngine(runs[case])
    seed = without_stream(requests_of(case)[0]["body_json"])
    for where, _ in list(nodes(seed))[1:]:
        raw = json.dumps(_replaced(seed, where, "@@MARK@@"))
        body = raw.replace('"@@MARK@@"', bad).encode()
        answer = engine.handle("POST", path, body, JSON)
        data = b"".join(answer.chunks)
        assert answer.status == 400, (where, data[:300])
        message = strict_json(data)["error"]["message"]
        assert _where(where) in message, (where, message)
    key = json.dumps(seed)[:-1] + ', "\\ud800": 1}'
    answer = engine.handle("POST", path, key.encode(), JSON)
    assert (
        answer.status == 400
        and "U+D800" in strict_json(b"".join(answer.chunks))["error"]["message"]
    )


# --- hostile recordings ---------------------------------------------------------------------


def _served_text(docs: list[Any]) -> str:
    """The answer's text, from a JSON body or the events of a stream, either API."""
    out = []
    for doc in docs:
        for choice in doc.get("choices", []):  # OpenAI Chat: a body or a chunk
            message = choice.get("message") or choice.get("delta") or {}
            out.append(message.get("content") or "")
        out.extend(b.get("text", "") for b in doc.get("content", []))  # Anthropic body
        delta = doc.get("delta", {})
        out.append(delta.get("text", "") if delta.get("type") == "text_delta" else "")
    return "".join(out)


@settings(max_examples=40, deadline=None)
@given(
    # A list joined: st.text() never gives a lone surrogate.
    text=st.lists(st.one_of(st.characters(), st.characters(categories=["Cs"]))).map(
        lambda chars: "x" + "".join(chars)
    )
)
def test_an_answer_recorded_with_lone_surrogates_is_served_as_json_escapes(text: str) -> None:
    # A recording is untrusted too: JSON read from a trace may hold any string.
    from tests.unit.replay.test_serve import CASE_FILE, _case_file_first

    (run,) = otel_replay.load(str(CASE_FILE))
    step = run.model_steps()[0]
    assert step.model is not None
    step.model.output_messages = [
        {"role": "assistant", "parts": [{"type": "text", "content": text}], "finish_reason": "stop"}
    ]
    for path in ("/v1/chat/completions", "/v1/messages"):
        for stream in (False, True):
            body = {**_case_file_first(path), "stream": stream}
            answer = ReplayEngine([run]).handle("POST", path, json.dumps(body).encode(), JSON)
            data = b"".join(answer.chunks)
            assert answer.status == 200, data[:300]
            events = [line[5:] for line in data.decode("utf-8").splitlines() if line[:5] == "data:"]
            docs = [json.loads(e) for e in events if e.strip() != "[DONE]"] or [json.loads(data)]
            # As JSON reads it: two escaped surrogates that make a pair are one character.
            assert _served_text(docs) == json.loads(json.dumps(text))
