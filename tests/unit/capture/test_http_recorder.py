"""Byte-exact model I/O: the httpx recorder, and replay sending the recorded bytes back.

A small fake model server on 127.0.0.1 answers with provider-shaped bodies
taken from the third-party recordings (JSON, and SSE sent one event per HTTP
chunk with a pause between, so the chunking is the server's).  The real
OpenAI and Anthropic SDKs call it through ``RecordingTransport`` /
``AsyncRecordingTransport`` (sync, async, stream), with our ``model_call``
span around the call or with none (the recorder then makes the span).  The
trace file must hold exactly the bytes the server sent, chunk for chunk, and
no secret header; replay through the session's transport and through
``otel-replay serve`` must send back byte-identical bodies (streams with the
same chunks through the transport), and a client of the other API gets an
answer rendered from GenAI messages instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from opentelemetry.sdk.trace import TracerProvider

import otel_replay
from tests.fixtures.data import TESTS
from tests.fixtures.http import send_chunked, serving_handler
from tests.unit.replay.test_serve import requests_of, serving

API_KEY = "sk-secret-0123456789abcdefXYZ"
COOKIE = "session=cookie-value-4242"


@pytest.fixture(autouse=True)
def _one_instrumentation(monkeypatch: pytest.MonkeyPatch) -> None:
    # The Anthropic SDK traces its own calls too; with it on, the bytes go on its span
    # (the model span current during the request), and the run has the call twice.
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")


#: (case, what the fake server answers with): the first exchange of each case.
EXCHANGES = {
    "openai_json": "otel_openai_v2/chat_sync",
    "openai_stream": "otel_openai_v2/chat_stream",
    "anthropic_json": "anthropic_openllmetry/sync",
    "anthropic_stream": "anthropic_openllmetry/stream",
}


def exchange(name: str) -> tuple[dict[str, Any], list[bytes], str]:
    """The recorded first request, the response as the chunks to send, and its content type."""
    first = requests_of(EXCHANGES[name])[0]
    raw = first["response_raw"].encode()
    if name.endswith("stream"):
        events = raw.split(b"\n\n")
        chunks = [e + b"\n\n" for e in events[:-1]] + ([events[-1]] if events[-1] else [])
        return first["body_json"], chunks, "text/event-stream; charset=utf-8"
    return first["body_json"], [raw], "application/json"


class FakeServer:
    """Answers every POST with one recorded response, chunk by chunk (HTTP chunked encoding)."""

    def __init__(self, chunks: list[bytes], content_type: str) -> None:
        self.chunks, self.content_type = chunks, content_type
        self.headers: list[dict[str, str]] = []

    @contextlib.contextmanager
    def serving(self) -> Iterator[str]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                fake.headers.append({k.lower(): v for k, v in self.headers.items()})
                send_chunked(self, {"Content-Type": fake.content_type}, fake.chunks, pause=0.01)

            def log_message(self, *args: Any) -> None:
                pass

        with serving_handler(Handler) as url:
            yield url


@contextlib.contextmanager
def recording(path: Path) -> Iterator[None]:
    provider = TracerProvider()
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
    )
    previous = otel_replay.use_tracer_provider(provider)
    try:
        yield
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()


def call_sdk(name: str, mode: str, url: str, body: dict[str, Any]) -> str:
    """One call through the SDK with a recording transport; the text the SDK read."""
    params = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    headers = {"Cookie": COOKIE}
    anth = name.startswith("anthropic")
    if mode == "async":
        http: Any = httpx2.AsyncClient(
            transport=otel_replay.AsyncRecordingTransport(httpx2.AsyncHTTPTransport())
        )
    else:
        http = httpx2.Client(transport=otel_replay.RecordingTransport(httpx2.HTTPTransport()))
    kw = {"api_key": API_KEY, "http_client": http, "default_headers": headers, "max_retries": 0}

    async def async_call() -> str:
        if anth:
            aclient = anthropic.AsyncAnthropic(base_url=url, **kw)
            if name.endswith("stream"):
                async with aclient.messages.stream(**params) as s:
                    message = await s.get_final_message()
            else:
                message = await aclient.messages.create(**params)
            return "".join(b.text for b in message.content if b.type == "text")
        oclient = openai.AsyncOpenAI(base_url=url + "/v1", **kw)
        if name.endswith("stream"):
            text = ""
            async for chunk in await oclient.chat.completions.create(stream=True, **params):
                text += "".join(c.delta.content or "" for c in chunk.choices)
            return text
        got = await oclient.chat.completions.create(**params)
        return got.choices[0].message.content or ""

    if mode == "async":
        return asyncio.run(async_call())
    if anth:
        client = anthropic.Anthropic(base_url=url, **kw)
        if name.endswith("stream"):
            with client.messages.stream(**params) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**params)
        return "".join(b.text for b in message.content if b.type == "text")
    oc = openai.OpenAI(base_url=url + "/v1", **kw)
    if name.endswith("stream"):
        return "".join(
            c.delta.content or ""
            for chunk in oc.chat.completions.create(stream=True, **params)
            for c in chunk.choices
        )
    return oc.chat.completions.create(**params).choices[0].message.content or ""


def record_one(tmp: Path, name: str, mode: str, with_span: bool) -> tuple[Path, FakeServer, str]:
    body, chunks, content_type = exchange(name)
    fake = FakeServer(chunks, content_type)
    path = tmp / "trace.otlp"
    with fake.serving() as url, recording(path):
        if with_span:
            provider = "anthropic" if name.startswith("anthropic") else "openai"
            with otel_replay.model_call(
                provider=provider,
                model=body["model"],
                messages=body["messages"],
                system=body.get("system"),
            ) as call:
                text = call_sdk(name, mode, url, body)
                call.record(text)
        else:
            text = call_sdk(name, mode, url, body)
    return path, fake, text


#: (exchange, SDK mode, with our model_call span around the call or not)
CASES = [
    ("openai_json", "sync", False),
    ("openai_json", "async", True),
    ("openai_stream", "sync", True),
    ("openai_stream", "async", False),
    ("anthropic_json", "sync", False),
    ("anthropic_json", "async", True),
    ("anthropic_stream", "sync", True),
    ("anthropic_stream", "async", False),
]
#: The default tier takes each wire format once (sync); the slow tier takes every mode.
TIERED = [
    pytest.param(*case, marks=pytest.mark.slow) if case[1] == "async" else case for case in CASES
]


@pytest.mark.parametrize(("name", "mode", "with_span"), TIERED)
def test_recorder_stores_the_exact_bytes_and_no_secret(
    tmp_path: Path, name: str, mode: str, with_span: bool
) -> None:
    path, fake, _ = record_one(tmp_path, name, mode, with_span)
    (run,) = otel_replay.load(str(path))
    (step,) = run.model_steps()
    assert step.model is not None and step.model.raw is not None
    raw = step.model.raw
    assert raw.usable and raw.response_body is not None
    assert raw.response_body.status == "exact"
    assert raw.chunks() == fake.chunks  # the bytes, and where the server's chunks ended
    assert len(raw.chunk_offsets_ms) == len(fake.chunks)
    assert raw.chunk_offsets_ms == sorted(raw.chunk_offsets_ms)
    if len(fake.chunks) > 1:  # the server paused 10 ms between chunks
        assert raw.chunk_offsets_ms[-1] - raw.chunk_offsets_ms[0] >= 5 * (len(fake.chunks) - 1)
    assert raw.request_body is not None and raw.request_body.status == "exact"
    sent = json.loads(raw.request_body.data)
    assert sent["messages"] == exchange(name)[0]["messages"]
    assert (
        raw.status == 200
        and raw.path is not None
        and raw.path.endswith(
            "/v1/messages" if name.startswith("anthropic") else "/v1/chat/completions"
        )
    )
    # The secret headers reached the server, not the file.
    assert fake.headers[0].get("cookie") == COOKIE
    # (x-api-key for older Anthropic SDKs; this one sends a bearer token too)
    secret_headers = [k for k, v in fake.headers[0].items() if API_KEY in v]
    assert secret_headers
    stored = path.read_bytes() + b"".join(
        p.read_bytes() for p in path.parent.rglob("*") if p.is_file() and p != path
    )
    assert API_KEY.encode() not in stored and b"cookie-value-4242" not in stored
    headers = json.loads(step.attributes[otel_replay.attributes.HTTP_REQUEST_HEADERS])
    assert all(headers[k] == "[REDACTED]" for k in [*secret_headers, "cookie"])
    (run_sdk,) = otel_replay.load(
        str(TESTS / "data" / "thirdparty" / EXCHANGES[name] / "traces.otlp.jsonl")
    )
    recorded = run_sdk.model_steps()[0].model
    assert recorded is not None
    # What only the wire says (usage, the response's id and model) is on the step, whether
    # the recorder made the span or a model_call around the call did.
    assert step.model.usage.get("input_tokens") == recorded.usage.get("input_tokens")
    # Output tokens as the wire says them: an Anthropic stream's message_delta count is the
    # total (an instrumentation that adds message_start's 1 to it says one more).
    said = re.findall(rb'"(?:output|completion)_tokens":\s*(\d+)', b"".join(fake.chunks))
    assert step.model.usage.get("output_tokens") == int(said[-1])
    assert step.model.response_id == recorded.response_id
    assert step.model.response_model == recorded.response_model
    if not with_span:  # the recorder's own span is a full model step (a stream folded)
        assert step.model.input_messages
        assert step.model.output_messages is not None
        assert _parts(step.model.output_messages) == _parts(recorded.output_messages or [])


def _parts(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    return [
        (p["type"], p.get("content") or (p.get("name"), json.dumps(p.get("arguments"))))
        for m in messages
        for p in m["parts"]
    ]


@pytest.mark.parametrize(("name", "mode", "with_span"), TIERED)
def test_replay_sends_the_recorded_bytes_back(
    tmp_path: Path, name: str, mode: str, with_span: bool
) -> None:
    path, fake, text = record_one(tmp_path, name, mode, with_span)
    (run,) = otel_replay.load(str(path))
    (step,) = run.model_steps()
    assert step.model is not None and step.model.raw is not None
    assert step.model.raw.request_body is not None
    body = step.model.raw.request_body.data
    route = "/v1/messages" if name.startswith("anthropic") else "/v1/chat/completions"
    # The in-process transport: the same bytes, cut where the server cut them.
    with otel_replay.replay(run) as session:
        with httpx2.Client(transport=session.transport(), base_url="http://replay") as http:
            with http.stream("POST", route, content=body) as r:
                # A JSON answer comes back whole (one chunk, as the server sent it).
                got = list(r.iter_raw()) if len(fake.chunks) > 1 else [r.read()]
                assert r.headers["x-otel-replay-body"] == "recorded"
                assert r.headers["content-type"] == fake.content_type
    assert b"".join(got) == b"".join(fake.chunks)
    assert got == fake.chunks
    # The server: the same bytes over HTTP.
    with serving(path) as url:
        r2 = httpx.post(url + route, content=body, headers={"content-type": "application/json"})
    assert r2.status_code == 200 and r2.content == b"".join(fake.chunks)
    assert r2.headers["x-otel-replay-body"] == "recorded"
    # The SDK reads the replay as it read the recording.
    with otel_replay.replay(run) as session:
        again = replay_sdk(name, mode, session, json.loads(body))
    assert again == text


def replay_sdk(name: str, mode: str, session: Any, body: dict[str, Any]) -> str:
    params = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    if name.startswith("anthropic"):
        client = anthropic.Anthropic(
            api_key="unused", http_client=httpx2.Client(transport=session.transport())
        )
        if name.endswith("stream"):
            with client.messages.stream(**params) as s:
                message = s.get_final_message()
        else:
            message = client.messages.create(**params)
        return "".join(b.text for b in message.content if b.type == "text")
    oc = openai.OpenAI(api_key="unused", http_client=httpx2.Client(transport=session.transport()))
    if name.endswith("stream"):
        return "".join(
            c.delta.content or ""
            for chunk in oc.chat.completions.create(stream=True, **params)
            for c in chunk.choices
        )
    return oc.chat.completions.create(**params).choices[0].message.content or ""


def test_other_api_or_mode_gets_a_rendered_answer(tmp_path: Path) -> None:
    """Recorded from the OpenAI API as a stream: an Anthropic client, or a JSON request, gets it rendered."""
    path, _, text = record_one(tmp_path, "openai_stream", "sync", True)
    (run,) = otel_replay.load(str(path))
    (step,) = run.model_steps()
    assert step.model is not None and step.model.raw is not None
    assert step.model.raw.request_body is not None
    body = json.loads(step.model.raw.request_body.data)
    with otel_replay.replay(run) as session:
        client = anthropic.Anthropic(
            api_key="unused", http_client=httpx2.Client(transport=session.transport())
        )
        message = client.messages.create(
            model=body["model"], max_tokens=100, messages=body["messages"]
        )
    assert "".join(b.text for b in message.content if b.type == "text") == text
    json_body = {k: v for k, v in body.items() if k not in ("stream", "stream_options")}
    with otel_replay.replay(run) as session:
        with httpx2.Client(transport=session.transport(), base_url="http://replay") as http:
            r = http.post("/v1/chat/completions", json=json_body)
    assert r.headers["x-otel-replay-body"] == "rendered"
    assert r.json()["choices"][0]["message"]["content"] == text


def test_recorder_leaves_the_client_working_when_the_server_fails(tmp_path: Path) -> None:
    path = tmp_path / "trace.otlp"
    with recording(path):
        http = httpx2.Client(transport=otel_replay.RecordingTransport(httpx2.HTTPTransport()))
        client = openai.OpenAI(
            api_key=API_KEY, base_url="http://127.0.0.1:9/v1", http_client=http, max_retries=0
        )
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert API_KEY.encode() not in path.read_bytes()


def test_timing_follows_the_recorded_chunk_offsets(tmp_path: Path) -> None:
    from otel_replay.replay.engine import ReplayEngine

    path, fake, _ = record_one(tmp_path, "anthropic_stream", "sync", True)
    (run,) = otel_replay.load(str(path))
    (step,) = run.model_steps()
    assert step.model is not None and step.model.raw is not None
    raw = step.model.raw
    assert raw.request_body is not None
    answer = ReplayEngine([run], timing=2.0).handle("POST", "/v1/messages", raw.request_body.data)
    assert answer.chunks == fake.chunks and answer.delays is not None
    assert sum(answer.delays) == pytest.approx(raw.chunk_offsets_ms[-1] / 1e3 / 2.0)
    gaps = [b - a for a, b in zip(raw.chunk_offsets_ms, raw.chunk_offsets_ms[1:], strict=False)]
    assert answer.delays[1:] == pytest.approx([g / 1e3 / 2.0 for g in gaps])


def test_large_bodies_go_to_blobs_and_stay_exact(tmp_path: Path) -> None:
    """A body over the inline limit (256 KiB): a preview on the span, the bytes in a blob."""
    body, chunks, _ = exchange("openai_json")
    answer = json.loads(chunks[0])
    answer["choices"][0]["message"]["content"] = "é" + "x" * 300_000
    big = [json.dumps(answer).encode()[i : i + 65536] for i in range(0, 310_000, 65536)]
    fake = FakeServer(big, "application/json")
    path = tmp_path / "trace.otlp"
    with fake.serving() as url, recording(path):
        text = call_sdk("openai_json", "sync", url, body)
    assert text == answer["choices"][0]["message"]["content"]
    data = b"".join(big)
    blobs = [p for p in tmp_path.rglob("*") if p.is_file() and p != path]
    assert any(p.read_bytes() == data for p in blobs)
    assert data not in path.read_bytes()
    (run,) = otel_replay.load(str(path))
    (step,) = run.model_steps()
    assert step.model is not None and step.model.raw is not None
    assert step.model.raw.usable and b"".join(step.model.raw.chunks()) == data


def test_each_raw_call_in_an_agent_run_gets_its_own_model_span(tmp_path: Path) -> None:
    # An agent run (or a tool) is not a model call: with no model_call around
    # them, two calls are two model steps, neither overwriting the other.
    path = tmp_path / "run.otlp"
    _, chunks, content_type = exchange("openai_json")
    fake = FakeServer(chunks, content_type)
    with fake.serving() as url, recording(path):
        with otel_replay.agent_run("two-calls"):
            client = openai.OpenAI(
                base_url=url + "/v1",
                api_key=API_KEY,
                http_client=httpx.Client(
                    transport=otel_replay.RecordingTransport(httpx.HTTPTransport())
                ),
            )
            for question in ("first question", "second question"):
                client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
                )
    (run,) = otel_replay.load(str(path))
    steps = run.model_steps()
    assert len(steps) == 2
    sent = [
        json.loads(s.model.raw.request_body.data)["messages"][0]["content"]  # type: ignore[union-attr]
        for s in steps
    ]
    assert sent == ["first question", "second question"]
    (agent,) = run.roots
    assert otel_replay.attributes.HTTP_REQUEST_BODY not in agent.attributes
