"""A header value ``serve`` takes from a recording is one HTTP can carry, whatever it holds.

``serve`` sends a recorded answer back with its recorded ``content-type`` and
``content-encoding``, and names in ``x-otel-replay-respelled`` the tool calls
whose arguments it spelled again (their recorded ids).  A recording may come
from anyone: a CR LF in a recorded content type made uvicorn refuse the
response (h11: "Illegal header value") and a character past Latin-1 failed to
encode, each a 500 with a traceback.  The class: real raw exchanges the
``RecordingTransport`` recorded (OpenAI and Anthropic, JSON and a stream), their
recorded headers given text drawn with control characters, CR/LF, NUL, DEL and
characters past Latin-1, served by ``serve``'s ASGI app; every response must
pass h11's own validation (what uvicorn sends through) and still answer the
recorded call.  And :func:`header_text` makes any text one h11 accepts, leaving
one it accepts as it is.
"""

from __future__ import annotations

import asyncio
import copy
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import h11
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import otel_replay
from otel_replay import attributes as A
from otel_replay.otlp.json_writer import request_to_json
from otel_replay.otlp.sniff import iter_records
from otel_replay.replay.adapters.server import ReplayApp
from otel_replay.replay.engine import ReplayEngine, header_text
from tests.unit.capture.test_http_recorder import exchange, record_one

#: (exchange recorded, path served)
CASES = {
    "openai_json": "/v1/chat/completions",
    "openai_stream": "/v1/chat/completions",
    "anthropic_json": "/v1/messages",
    "anthropic_stream": "/v1/messages",
}


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """Each case recorded for real (the SDK through RecordingTransport), as OTLP/JSON."""
    out = {}
    for name in CASES:
        path, _, _ = record_one(tmp_path_factory.mktemp(name), name, "sync", True)
        out[name] = [
            json.loads(request_to_json(ExportTraceServiceRequest.FromString(body)))
            for _, body in iter_records(path)
        ]
    return out


def _spans(docs: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for doc in docs:
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                yield from ss["spans"]


#: Text HTTP cannot carry in a header, mixed with text it can.
_BAD = st.sampled_from(
    ["\r\n", "\n", "\r", "\x00", "\x7f", "\x1b", "\u2603", "\U0001f600", "\ud800"]
)
_TEXT = st.lists(_BAD | st.text(st.characters(max_codepoint=0xFF), max_size=4), max_size=6).map(
    "".join
)


def _h11_accepts(status: int, headers: list[tuple[bytes, bytes]]) -> None:
    """What uvicorn's h11 protocol does with the response start: raises if HTTP cannot."""
    conn = h11.Connection(h11.SERVER)
    conn.receive_data(b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    conn.next_event()
    conn.send(h11.Response(status_code=status, headers=headers))


def _serve(engine: ReplayEngine, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    incoming = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": path,
        "headers": [(b"host", b"localhost"), (b"content-type", b"application/json")],
    }
    asyncio.run(asyncio.wait_for(ReplayApp(engine)(scope, receive, send), 10))
    return sent


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    case=st.sampled_from(sorted(CASES)),
    content_type=_TEXT,
    content_encoding=_TEXT,
    keep_type=st.booleans(),
)
def test_a_recorded_header_http_cannot_carry_is_never_sent(
    tmp_path_factory: pytest.TempPathFactory,
    recorded: dict[str, list[dict[str, Any]]],
    case: str,
    content_type: str,
    content_encoding: str,
    keep_type: bool,
) -> None:
    docs = copy.deepcopy(recorded[case])
    hit = 0
    for span in _spans(docs):
        for attr in span["attributes"]:
            if attr["key"] == A.HTTP_RESPONSE_HEADERS:
                headers = json.loads(attr["value"]["stringValue"])
                recorded_type = headers.get("content-type", "")
                # The recorded type kept in front (a stream stays a stream) or replaced.
                headers["content-type"] = (recorded_type if keep_type else "") + content_type
                headers["content-encoding"] = content_encoding
                attr["value"]["stringValue"] = json.dumps(headers)
                hit += 1
    assert hit
    path = tmp_path_factory.mktemp("headers") / "run.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    request, _, _ = exchange(case)
    sent = _serve(ReplayEngine(otel_replay.load(path)), CASES[case], request)
    start = sent[0]
    assert start["status"] == 200, sent
    _h11_accepts(start["status"], start["headers"])
    assert b"".join(m.get("body", b"") for m in sent[1:])  # the recorded call is answered


#: What uvicorn's httptools protocol refuses in a header value (stricter than h11: DEL).
_HTTPTOOLS_REFUSES = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")
#: RFC 9110's field-value: tab, visible ASCII, the rest of Latin-1.
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


@settings(max_examples=300, deadline=None)
@given(text=_TEXT | st.text())
def test_header_text_is_always_a_header_value(text: str) -> None:
    value = header_text(text)
    _h11_accepts(200, [(b"x-otel-replay-respelled", value.encode("latin-1"))])
    assert not _HTTPTOOLS_REFUSES.search(value)
    if _FIELD_VALUE.fullmatch(text):  # what HTTP carries is sent as HTTP reads it
        assert value == text.strip(" \t")


def test_the_real_server_answers_a_recording_with_a_broken_content_type(
    tmp_path: Path, recorded: dict[str, list[dict[str, Any]]]
) -> None:
    """Through uvicorn itself (a process): the recorded call answered, no header planted."""
    import urllib.request

    from tests.unit.replay.test_serve import serving

    docs = copy.deepcopy(recorded["openai_json"])
    for span in _spans(docs):
        for attr in span["attributes"]:
            if attr["key"] == A.HTTP_RESPONSE_HEADERS:
                attr["value"]["stringValue"] = json.dumps(
                    {"content-type": "application/json\r\nSet-Cookie: planted=1; \u2603"}
                )
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    request, _, _ = exchange("openai_json")
    with serving(path) as url:
        sent = urllib.request.Request(
            url + "/v1/chat/completions",
            data=json.dumps(request).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(sent, timeout=10) as answer:
            assert answer.status == 200
            assert answer.headers.get("set-cookie") is None
            assert json.loads(answer.read())["choices"]
