"""Secrets in raw HTTP bodies: every content coding, keys split across streamed deltas.

A model server on 127.0.0.1 answers the real OpenAI SDK (and plain httpx)
through ``RecordingTransport`` / ``AsyncRecordingTransport`` with bodies in
every content coding httpx reads and stacks of two of them (gzip, deflate
zlib-wrapped and raw, zstd, identity; br when a Brotli library is installed),
a stream compressed as it goes (one compressed chunk per event), codings the
recorder cannot decode, a body that is not what its coding says, and requests
sent compressed.  Streams hold a key split across two deltas at every place
it can be split, in the answer's text and in a tool call's arguments; a JSON
answer holds a key spelled with escapes.  No byte written (compressed bytes
found in it decompressed first) may hold a key, and what is kept still reads
and replays.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import itertools
import json
import secrets
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import zstandard

import otel_replay
from otel_replay import attributes as A
from otel_replay.capture import http_recorder as H
from otel_replay.redaction import configure_redaction, redactor
from tests.fixtures.http import send_chunked, serving_handler
from tests.fixtures.secrets import decompressed, every_byte
from tests.unit.capture.test_http_recorder import recording
from tests.unit.replay.test_serve import serving as replay_server

BROTLI = next((m for m in ("brotli", "brotlicffi") if importlib.util.find_spec(m)), None)


@pytest.fixture(autouse=True, scope="module")
def _default_redaction() -> Iterator[None]:
    configure_redaction()
    yield
    configure_redaction()


def new_key() -> str:
    return "sk-proj-" + secrets.token_hex(12)


# --- content codings, as a server applies them ------------------------------------------


class _Stream:
    """One coding applied to a stream of parts, each part flushed (a server streaming
    compressed events sends one compressed piece per event)."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        if coding in ("gzip", "deflate", "deflate-raw"):
            wbits = {"gzip": 31, "deflate": 15, "deflate-raw": -15}[coding]
            self._z: Any = zlib.compressobj(wbits=wbits)
        elif coding == "zstd":
            self._z = zstandard.ZstdCompressor().compressobj()
        elif coding == "br":
            self._z = importlib.import_module(str(BROTLI)).Compressor()

    def part(self, data: bytes) -> bytes:
        if self.coding == "identity":
            return data
        if self.coding == "zstd":
            return bytes(self._z.compress(data) + self._z.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK))
        if self.coding == "br":
            return bytes(self._z.process(data) + self._z.flush())
        return bytes(self._z.compress(data) + self._z.flush(zlib.Z_SYNC_FLUSH))

    def end(self) -> bytes:
        if self.coding == "identity":
            return b""
        if self.coding == "br":
            return bytes(self._z.finish())
        return bytes(self._z.flush())


def encoded(parts: list[bytes], codings: list[str]) -> list[bytes]:
    """``parts`` with ``codings`` applied in order, still one piece per part."""
    for coding in codings:
        stream = _Stream(coding)
        out = [stream.part(p) for p in parts]
        out[-1] += stream.end()
        parts = out
    return parts


def header(codings: list[str]) -> str:
    return ", ".join("deflate" if c == "deflate-raw" else c for c in codings)


DEFAULT_STACKS = ("gzip+identity", "deflate+gzip")
SINGLE = ["gzip", "deflate", "deflate-raw", "zstd", "identity", *(["br"] if BROTLI else [])]
#: Every coding, and every stack of two (the first applied first).
#: (httpx itself cannot read zstd under or over another coding: it decodes again after
#: the frame's end.)
CODINGS = [[c] for c in SINGLE] + [
    [a, b]
    for a, b in itertools.product(SINGLE, repeat=2)
    if a != b and a != "identity" and "zstd" not in (a, b)
]
CODING_IDS = ["+".join(c) for c in CODINGS]
#: The default tier takes each coding alone and two stacks; the slow tier every stack.
TIERED = [
    pytest.param(
        c, id=i, marks=[pytest.mark.slow] if len(c) > 1 and i not in DEFAULT_STACKS else []
    )
    for c, i in zip(CODINGS, CODING_IDS, strict=True)
]


# --- the server ------------------------------------------------------------------------


class ModelServer:
    """Answers each POST with ``self.answer`` (parts sent as HTTP chunks), encoded by
    ``self.codings``; keeps each request's headers and body."""

    def __init__(self) -> None:
        self.answer: list[bytes] = []
        self.content_type = "application/json"
        self.codings: list[str] = []
        self.label: str | None = None  # the content-encoding header, if not the codings'
        self.requests: list[tuple[dict[str, str], bytes]] = []

    def plan(
        self,
        answer: list[bytes],
        content_type: str,
        codings: list[str],
        label: str | None = None,
    ) -> None:
        self.answer, self.content_type, self.codings, self.label = (
            answer,
            content_type,
            codings,
            label,
        )

    @contextlib.contextmanager
    def serving(self) -> Iterator[str]:
        model = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                model.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                headers = {"Content-Type": model.content_type}
                label = model.label if model.label is not None else header(model.codings)
                if label:
                    headers["Content-Encoding"] = label
                coded = encoded(model.answer, model.codings) if model.codings else model.answer
                send_chunked(self, headers, coded)

            def log_message(self, *args: Any) -> None:
                pass

        with serving_handler(Handler) as url:
            yield url


@pytest.fixture(scope="module")
def model() -> Iterator[tuple[ModelServer, str]]:
    server = ModelServer()
    with server.serving() as url:
        yield server, url


def chat_json(text: str) -> list[bytes]:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-x",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
    }
    return [json.dumps(body).encode()]


def chat_events(deltas: list[dict[str, Any]]) -> list[bytes]:
    """A chat completion stream: one SSE event per delta, then the finish and [DONE]."""
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-x"}
    events = [
        {**base, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
    ]
    events.append({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [b"data: %s\n\n" % json.dumps(e).encode() for e in events] + [b"data: [DONE]\n\n"]


def words(text: str) -> list[str]:
    """``text`` in deltas of a word each, as a model streams it."""
    return [w + " " for w in text.split(" ")[:-1]] + [text.split(" ")[-1]]


def text_deltas(pieces: list[str]) -> list[dict[str, Any]]:
    return [{"role": "assistant", "content": ""}, *({"content": p} for p in pieces)]


# --- recording ------------------------------------------------------------------------


def ask(url: str, stream: bool, mode: str = "sync", tools: bool = False) -> str:
    """One chat completion through the OpenAI SDK over the recording transport; what it read.

    Plain HTTP to 127.0.0.1: the transports load no certificates (20 ms a call).
    """
    kw: dict[str, Any] = {"model": "gpt-x", "messages": [{"role": "user", "content": "key?"}]}
    if tools:
        kw["tools"] = [{"type": "function", "function": {"name": "login", "parameters": {}}}]

    def read(got: Any) -> str:
        if not stream:
            message = got.choices[0].message
            calls = message.tool_calls or []
            return (message.content or "") + "".join(c.function.arguments for c in calls)
        return "".join(
            (c.delta.content or "")
            + "".join(t.function.arguments or "" for t in c.delta.tool_calls or [])
            for chunk in got
            for c in chunk.choices
        )

    if mode == "async":

        async def go() -> str:
            http = httpx.AsyncClient(
                transport=otel_replay.AsyncRecordingTransport(
                    httpx.AsyncHTTPTransport(verify=False)
                )
            )
            client = openai.AsyncOpenAI(
                base_url=url + "/v1", api_key="sk-live-test", http_client=http, max_retries=0
            )
            got = await client.chat.completions.create(stream=stream, **kw)
            if not stream:
                return read(got)
            return read([chunk async for chunk in got])

        return asyncio.run(go())
    http = httpx.Client(transport=otel_replay.RecordingTransport(httpx.HTTPTransport(verify=False)))
    client = openai.OpenAI(
        base_url=url + "/v1", api_key="sk-live-test", http_client=http, max_retries=0
    )
    return read(client.chat.completions.create(stream=stream, **kw))


def written_bytes(path: Path) -> bytes:
    return b"".join(every_byte(path.parent).values())


def the_step(path: Path) -> otel_replay.Step:
    (run,) = otel_replay.load(str(path))
    (step,) = run.model_steps()
    return step


def assert_no_part_of(key: str, data: bytes, at_least: int = 8) -> None:
    """No run of ``at_least`` characters of ``key``'s random part is in ``data``."""
    body = key.removeprefix("sk-proj-")
    parts = {body[i : i + at_least] for i in range(len(body) - at_least + 1)}
    found = [p for p in parts if p.encode() in data]
    assert not found, (key, found)


# --- every coding ----------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("codings", TIERED)
def test_a_coded_answer_is_recorded_decoded_and_scrubbed(
    tmp_path: Path, model: tuple[ModelServer, str], codings: list[str], stream: bool
) -> None:
    server, url = model
    key = new_key()
    text = f"your key is {key} keep it safe"
    answer = chat_events(text_deltas(words(text))) if stream else chat_json(text)
    server.plan(answer, "text/event-stream" if stream else "application/json", codings)
    path = tmp_path / "run.otlp"
    mode = "async" if stream else "sync"  # AsyncClient streams, Client reads JSON
    with recording(path):
        assert ask(url, stream, mode) == text  # the app reads the real answer
    assert key.encode() not in written_bytes(path)
    assert_no_part_of(key, written_bytes(path))
    step = the_step(path)
    raw = step.model.raw if step.model else None
    assert raw is not None and raw.response_body is not None and raw.response_body.data
    # Recorded decoded: the answer as the client read it, the key hidden.
    assert raw.response_body.data == redactor().data(b"".join(answer))
    assert A.REDACTED_VALUE.encode() in raw.response_body.data
    assert raw.response_headers.get("content-encoding", "identity") == "identity"
    assert step.attributes.get(H.RESPONSE_DECODED_FROM) == (
        header(codings) if codings != ["identity"] else None
    )
    # The span's answer in GenAI terms is read from the decoded body.
    assert step.model is not None and step.model.output_messages
    assert step.model.output_messages[0]["parts"][0]["content"] == text.replace(
        key, A.REDACTED_VALUE
    )


@pytest.mark.parametrize("codings", TIERED)
def test_a_coded_stream_replays_as_the_client_read_it(
    tmp_path: Path, model: tuple[ModelServer, str], codings: list[str]
) -> None:
    """No secret in it: the stream is kept whole as the client read it (decoded, its chunk
    sizes those of the decoded chunks), and replay sends it back with no coding the client
    would try to undo."""
    server, url = model
    text = "the answer is forty two"
    answer = chat_events(text_deltas(words(text)))
    server.plan(answer, "text/event-stream", codings)
    path = tmp_path / "run.otlp"
    with recording(path):
        assert ask(url, True) == text
    step = the_step(path)
    raw = step.model.raw if step.model else None
    assert raw is not None and raw.usable
    assert b"".join(raw.chunks()) == b"".join(answer)
    assert len(raw.chunk_offsets_ms) == len(raw.chunk_sizes)
    (run,) = otel_replay.load(str(path))
    body = json.loads(raw.request_body.data) if raw.request_body else {}
    with otel_replay.replay(run) as session:
        http = httpx.Client(transport=session.transport(), base_url="http://replay")
        with http.stream("POST", "/v1/chat/completions", json=body) as r:
            assert r.headers["x-otel-replay-body"] == "recorded"
            assert r.headers.get("content-encoding", "identity") == "identity"
            assert r.read() == b"".join(answer)
    with otel_replay.replay(run) as session:
        http = httpx.Client(transport=session.transport())
        client = openai.OpenAI(api_key="unused", http_client=http)
        again = client.chat.completions.create(
            stream=True, **{k: v for k, v in body.items() if k != "stream"}
        )
        assert "".join(c.choices[0].delta.content or "" for c in again if c.choices) == text


@pytest.mark.parametrize("codings", CODINGS[:5], ids=CODING_IDS[:5])
def test_a_coded_answer_read_whole_by_its_transport_is_recorded_decoded(
    tmp_path: Path, codings: list[str]
) -> None:
    """A transport that hands back responses already read (httpx.MockTransport): httpx
    decoded them then; the recording says no coding, so replay sends them plainly."""
    text = "the answer is forty two"
    answer = chat_json(text)
    coded = b"".join(encoded(answer, codings))

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            headers={"content-type": "application/json", "content-encoding": header(codings)},
            content=coded,
        )

    path = tmp_path / "run.otlp"
    with recording(path):
        http = httpx.Client(transport=otel_replay.RecordingTransport(httpx.MockTransport(handler)))
        client = openai.OpenAI(base_url="http://mock/v1", api_key="unused", http_client=http)
        got = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "q"}]
        )
    assert got.choices[0].message.content == text
    step = the_step(path)
    raw = step.model.raw if step.model else None
    assert raw is not None and raw.usable and raw.response_body is not None
    assert raw.response_body.data == answer[0]
    assert raw.response_headers.get("content-encoding", "identity") == "identity"
    (run,) = otel_replay.load(str(path))
    with otel_replay.replay(run) as session:
        client = openai.OpenAI(
            api_key="unused", http_client=httpx.Client(transport=session.transport())
        )
        again = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "q"}]
        )
    assert again.choices[0].message.content == text


#: (content-encoding header, what the server sends): codings the recorder cannot undo.
UNDECODABLE: list[tuple[str, Callable[[bytes], bytes]]] = [
    ("x-gzip", lambda b: zlib.compress(b, wbits=31)),  # gzip bytes under a name httpx skips
    ("compress", lambda b: zlib.compress(b, wbits=31)),
    ("gzip, x-custom", lambda b: zlib.compress(b, wbits=31)),
    ("gzip", lambda b: b),  # not gzip at all: the client fails too
    ("zstd", lambda b: b"\x28\xb5\x2f\xfd" + b[:10]),  # a broken frame
    *([] if BROTLI else [("br", lambda b: zlib.compress(b, wbits=31))]),
]


@pytest.mark.parametrize(("label", "make"), UNDECODABLE, ids=[u[0] for u in UNDECODABLE])
def test_a_body_that_cannot_be_decoded_is_left_out(
    tmp_path: Path, model: tuple[ModelServer, str], label: str, make: Callable[[bytes], bytes]
) -> None:
    server, url = model
    key = new_key()
    server.plan([make(chat_json(f"key {key}")[0])], "application/json", [], label=label)
    path = tmp_path / "run.otlp"
    with recording(path):
        http = httpx.Client(transport=otel_replay.RecordingTransport(httpx.HTTPTransport()))
        with contextlib.suppress(httpx.DecodingError):  # as the client fails without us
            http.post(url + "/v1/chat/completions", json={"model": "m", "messages": []}).read()
    data = written_bytes(path)
    assert key.encode() not in data
    assert_no_part_of(key, data)
    (run,) = otel_replay.load(str(path))
    (span,) = [s for s in run.steps]
    assert A.HTTP_RESPONSE_BODY not in span.attributes
    assert A.SHA256 + A.HTTP_RESPONSE_BODY not in span.attributes
    assert span.attributes[H.RESPONSE_BODY_DROPPED].startswith("cannot decode")
    assert A.HTTP_RESPONSE_BODY in span.attributes[A.REDACTED]
    assert A.HTTP_REQUEST_BODY in span.attributes  # the request is still kept


@pytest.mark.parametrize("codings", CODINGS[:6], ids=[header(c) for c in CODINGS[:6]])
def test_a_request_sent_coded_is_recorded_decoded_and_scrubbed(
    tmp_path: Path, model: tuple[ModelServer, str], codings: list[str]
) -> None:
    server, url = model
    key = new_key()
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": f"use {key}"}]})
    server.plan(chat_json("ok"), "application/json", [])
    path = tmp_path / "run.otlp"
    with recording(path):
        http = httpx.Client(transport=otel_replay.RecordingTransport(httpx.HTTPTransport()))
        sent = b"".join(encoded([body.encode()], codings))
        headers = {"content-type": "application/json"}
        if header(codings) != "identity":
            headers["content-encoding"] = header(codings)
        http.post(url + "/v1/chat/completions", content=sent, headers=headers)
    assert server.requests[-1][1] == sent
    data = written_bytes(path)
    assert key.encode() not in data
    assert_no_part_of(key, data)
    raw = the_step(path).model.raw  # type: ignore[union-attr]
    assert raw is not None and raw.request_body is not None
    assert raw.request_body.data == redactor().data(body.encode())


# --- keys split across streamed deltas, or spelled with escapes ------------------------


@pytest.mark.parametrize(
    "where", ["content", pytest.param("tool arguments", marks=pytest.mark.slow)]
)
def test_a_key_split_across_streamed_deltas_never_reaches_disk_at_any_split(
    tmp_path: Path, model: tuple[ModelServer, str], where: str
) -> None:
    server, url = model
    key = new_key()
    for at in range(1, len(key)):
        if where == "content":
            deltas = text_deltas([f"your key is {key[:at]}", f"{key[at:]} keep it"])
            expected = f"your key is {key} keep it"
        else:
            args = json.dumps({"api_key": key})
            cut = args.index(key) + at
            first = {"index": 0, "id": "call_1", "type": "function"}
            deltas = [
                {
                    "role": "assistant",
                    "tool_calls": [
                        {**first, "function": {"name": "login", "arguments": args[:cut]}}
                    ],
                },
                {"tool_calls": [{"index": 0, "function": {"arguments": args[cut:]}}]},
            ]
            expected = args
        server.plan(chat_events(deltas), "text/event-stream", [])
        path = tmp_path / str(at) / "run.otlp"
        path.parent.mkdir()
        with recording(path):
            assert ask(url, True, tools=where != "content") == expected
        data = written_bytes(path)
        assert key.encode() not in data, at
        assert_no_part_of(key, data)
        step = the_step(path)
        assert step.attributes.get(H.RESPONSE_BODY_DROPPED), at
        assert step.model is not None and step.model.output_messages  # folded, then scrubbed
    if where != "content":
        return
    # Served: the answer rendered from the recorded message, the key hidden.
    with replay_server(tmp_path / "12" / "run.otlp") as served:
        client = openai.OpenAI(base_url=served + "/v1", api_key="unused", max_retries=0)
        got = client.chat.completions.create(
            model="gpt-x", messages=[{"role": "user", "content": "key?"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in got if c.choices)
    assert text == f"your key is {A.REDACTED_VALUE} keep it"


def test_a_key_spelled_with_json_escapes_never_reaches_disk(
    tmp_path: Path, model: tuple[ModelServer, str]
) -> None:
    server, url = model
    key = new_key()
    for n, escaped in enumerate([{0}, {3}, {8}, {len(key) - 1}, set(range(0, len(key), 5))]):
        spelled = "".join(f"\\u{ord(c):04x}" if i in escaped else c for i, c in enumerate(key))
        body = chat_json("KEY")[0].replace(b"KEY", f"key {spelled} here".encode())
        server.plan([body], "application/json", ["gzip"] if n % 2 else [])
        path = tmp_path / str(n) / "run.otlp"
        path.parent.mkdir()
        with recording(path):
            assert ask(url, False) == f"key {key} here"
        data = written_bytes(path)
        assert key.encode() not in data and spelled.encode() not in data, escaped
        # Hidden where it stands (the escapes read as what they spell), or the body left out.
        step = the_step(path)
        raw = step.model.raw if step.model else None
        kept = raw.response_body.data if raw and raw.response_body else b""
        assert A.REDACTED_VALUE.encode() in kept or step.attributes.get(H.RESPONSE_BODY_DROPPED), (
            escaped
        )


def test_everything_is_found_in_compressed_bytes() -> None:
    """The grep decompresses what it finds: a key inside gzip or zstd bytes is found."""
    key = new_key().encode()
    assert key in decompressed(b"x" + zlib.compress(key, wbits=31) + b"y")
    assert key in decompressed(b"x" + zstandard.ZstdCompressor().compress(key))
