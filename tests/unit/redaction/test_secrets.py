"""Secrets never reach disk: a distinct secret planted through every path, every byte grepped.

The app records through the real OTel SDK: our capture helpers, the real
OpenAI and Anthropic SDKs over the recording transport (against a model
server on 127.0.0.1), a "third-party" instrumentation writing OpenInference
and HTTP attributes, events and statuses as such libraries do, scope and
resource attributes, and feature flags.  It exports three ways at once:
``FileSpanExporter`` behind ``ReplaySpanProcessor`` (rotated files, blobs),
a second provider with ``FileSpanExporter`` alone (JSON lines, no
processor: the exporter scrubs), and the standard OTLP/HTTP exporter to a
collector on 127.0.0.1.  Then ``otel-replay ls`` and ``check`` write their
cache.  No byte of any file, blob, cache, command output or OTLP request
may hold a secret, and the recording still replays.
"""

from __future__ import annotations

import dataclasses
import json
import secrets
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, NamedTuple

import anthropic
import httpx
import httpx2
import openai
import pydantic
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode

import otel_replay
from otel_replay.redaction import configure_redaction
from tests.fixtures.cli import cli_process
from tests.fixtures.http import serving

#: Where each secret goes in; each must be caught on its own path.
PLANTED: dict[str, str] = {}


def plant(path: str, make: str = "{}") -> str:
    value = make.format(secrets.token_hex(12))
    PLANTED[path] = value
    return value


@pytest.fixture(autouse=True)
def _default_redaction(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "false")
    configure_redaction()
    yield
    configure_redaction()


@dataclasses.dataclass
class Creds:
    user: str
    api_key: str


class Account(pydantic.BaseModel):
    name: str
    password: str


class Memory(NamedTuple):
    topic: str
    secret_token: str


@otel_replay.tool
def open_account(creds: Creds) -> Account:
    return Account(name=creds.user, password=PLANTED["pydantic result field"])


@otel_replay.tool
def connect(database: str) -> str:
    url = PLANTED["exception message and stack"]
    raise RuntimeError(f"login failed for postgres://app:{url}@db/{database}")


def _model_server() -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        handler.rfile.read(int(handler.headers["Content-Length"]))
        text = f"your temporary password={PLANTED['model answer text']} works"
        if handler.path.endswith("/messages"):
            body: dict[str, Any] = {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-x",
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 5},
            }
        else:
            body = {
                "id": "c1",
                "object": "chat.completion",
                "created": 1,
                "model": "gpt-x",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 3, "completion_tokens": 5, "total_tokens": 8},
            }
        return 200, "application/json", json.dumps(body).encode()

    return serving(answer)


def _collector(received: list[bytes]) -> Any:
    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        received.append(handler.rfile.read(int(handler.headers["Content-Length"])))
        return 200, "application/x-protobuf", b""

    return serving(answer)


def _third_party_spans(provider: TracerProvider) -> None:
    """Attributes, events and statuses as other instrumentations write them."""
    tracer = provider.get_tracer(
        "openinference.instrumentation.acme", attributes={"api_key": plant("scope attribute")}
    )
    with tracer.start_as_current_span("ChatModel") as span:
        params = {"model": "m", "api_key": plant("openinference invocation parameters")}
        span.set_attribute("llm.invocation_parameters", json.dumps(params))
        headers = {"Authorization": plant("openinference input header")}
        span.set_attribute("input.value", json.dumps({"headers": headers, "q": "hi"}))
        span.set_attribute(
            "url.full", f"https://api.example.com/v1/s?q=x&api_key={plant('url query')}"
        )
        span.add_event(
            "http.request",
            {
                "http.request.header.x-api-key": plant("event attribute by key"),
                "detail": f"retrying with db_password={plant('event attribute text')}",
            },
        )
        span.set_status(
            Status(StatusCode.ERROR, f"upstream refused Bearer {plant('status description')}")
        )


def _record(provider: TracerProvider, base_url: str) -> None:
    previous = otel_replay.use_tracer_provider(provider)
    try:
        with otel_replay.agent_run("planted"):
            with otel_replay.model_call(
                provider="openai",
                model="gpt-x",
                messages=[{"role": "user", "content": "hi"}],
                extra_headers={"X-Auth-Token": plant("model_call extra_headers")},
                extra_body={"api_key": plant("model_call extra_body")},
            ) as call:
                call.record("ok", input_tokens=1, output_tokens=1)
            open_account(Creds(user="bob", api_key=plant("dataclass argument field")))
            otel_replay.snapshot("memory", Memory("billing", plant("named tuple snapshot field")))
            with pytest.raises(RuntimeError):
                connect("prod")
            transport = otel_replay.RecordingTransport(httpx.HTTPTransport())
            headers = {
                "Ocp-Apim-Subscription-Key": plant("header Ocp-Apim-Subscription-Key"),
                "X-Auth": plant("header X-Auth"),
                "X-Custom-Key": plant("header *-key"),
                "X-Session-Token": plant("header *-token"),
                "X-Client-Secret-Value": plant("header *secret*"),
            }
            oai = openai.OpenAI(
                base_url=base_url + "/v1",
                api_key=plant("OpenAI SDK api key", "sk-proj-{}"),
                http_client=httpx.Client(transport=transport),
                default_headers=headers,
            )
            oai.chat.completions.create(
                model="gpt-x",
                messages=[{"role": "user", "content": "hi"}],
                extra_body={"api_key": plant("raw HTTP request body field")},
            )
            ant = anthropic.Anthropic(
                base_url=base_url,
                api_key=plant("Anthropic SDK api key", "sk-ant-api03-{}"),
                http_client=httpx2.Client(
                    transport=otel_replay.RecordingTransport(httpx2.HTTPTransport())
                ),
            )
            ant.messages.create(
                model="claude-x", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
            )
        provider.force_flush()  # a record of its own: the next one rotates the file
        _third_party_spans(provider)
    finally:
        otel_replay.use_tracer_provider(previous)


def _every_byte(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def test_no_planted_secret_reaches_any_byte_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    PLANTED.clear()
    PLANTED["pydantic result field"] = secrets.token_hex(12)
    PLANTED["exception message and stack"] = secrets.token_hex(12)
    PLANTED["model answer text"] = secrets.token_hex(12)
    monkeypatch.setenv("OTEL_REPLAY_FLAGS", f"db_password={plant('feature flag')},beta=1")
    traces = tmp_path / "traces"
    traces.mkdir()
    received: list[bytes] = []
    with _model_server() as base_url, _collector(received) as collector:
        resource = Resource.create(
            {"service.name": "planted", "db.password": plant("resource attribute")}
        )
        full = TracerProvider(resource=resource)
        full.add_span_processor(otel_replay.ReplaySpanProcessor())
        exporter = otel_replay.FileSpanExporter(
            traces / "run.otlp", max_inline_bytes=64, max_megabytes=0.001
        )
        full.add_span_processor(otel_replay.RecordingSpanProcessor(exporter))
        full.add_span_processor(
            SimpleSpanProcessor(OTLPSpanExporter(endpoint=collector + "/v1/traces"))
        )
        bare = TracerProvider(resource=resource)  # no ReplaySpanProcessor: the exporter scrubs
        bare.add_span_processor(
            SimpleSpanProcessor(otel_replay.FileSpanExporter(traces / "bare.jsonl", format="json"))
        )
        for provider in (full, bare):
            _record(provider, base_url)
            provider.shutdown()
    listed = [cli_process(command, traces) for command in ("ls", "check")]
    # check exits 1 when it finds something to report (here the failed tool call).
    assert [p.returncode for p in listed] in ([0, 0], [0, 1]), [p.stderr for p in listed]
    written = _every_byte(traces)
    assert len([n for n in written if n.startswith("run-")]) >= 1, written.keys()  # rotated
    assert any(".blobs" in n for n in written), written.keys()
    assert any(n.endswith(".otel-replay-runs") for n in written), written.keys()  # ls cache
    written["otlp requests"] = b"".join(received)
    written["ls and check output"] = "".join(p.stdout + p.stderr for p in listed).encode()
    assert received, "the OTLP exporter sent nothing"
    leaks = [
        f"{where} (planted through {path})"
        for path, secret in PLANTED.items()
        for where, data in written.items()
        if secret.encode() in data
    ]
    assert not leaks, leaks
    # Every path was exercised: the placeholder stands where each secret was.
    everything = b"".join(written.values())
    assert everything.count(otel_replay.attributes.REDACTED_VALUE.encode()) >= len(PLANTED)

    # Hidden, the recording still replays: the live calls hold the real keys.
    run = next(
        r
        for r in otel_replay.load(str(traces / "run*.otlp"))
        if r.roots[0].name.endswith("planted")
    )
    with otel_replay.replay(run, require_complete=False) as session:
        account = open_account(Creds(user="bob", api_key="a-different-live-key"))
        client = openai.OpenAI(
            api_key="sk-proj-another-live-key-0000000000",
            http_client=httpx.Client(transport=session.transport()),
        )
        # The run asked "hi" twice: through model_call, then through the SDK.
        answers = [
            client.chat.completions.create(
                model="gpt-x",
                messages=[{"role": "user", "content": "hi"}],
                extra_body={"api_key": "yet-another-live-key"},
            )
            for _ in range(2)
        ]
    assert account.password == otel_replay.attributes.REDACTED_VALUE
    assert [a.choices[0].message.content for a in answers] == [
        "ok",
        "your temporary password=[REDACTED] works",
    ]
    assert session.report().divergence is None, session.report()
