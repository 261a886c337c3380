"""Secrets split across the parts of a streamed body, whatever its framing and content type.

A server on 127.0.0.1 streams an answer through plain httpx and
``RecordingTransport``, one HTTP chunk per part, in each framing a model
client reads: OpenAI and Anthropic server-sent events (text deltas, tool
input deltas, events pretty-printed over several ``data:`` lines), JSON
lines (Ollama), the Vercel AI SDK's data stream (``0:"text"`` lines, tool
argument deltas) and its UI message stream (SSE), with ``\\n`` or ``\\r\\n``
line ends.  Each goes out under its own content type or another one
(``text/plain; charset=utf-8``, ``application/x-ndjson``,
``text/event-stream; charset=utf-8``, ``application/octet-stream``, none): a
recorder that reads what a body is from its content type alone keeps a
secret split across two parts.  Secrets of every family the redactor knows
are split at every place Hypothesis draws; no byte written (compressed bytes
decompressed first) may hold one.  Streams with no secret are kept byte for
byte, so the check leaves out only what it must.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import attributes as A
from otel_replay.capture import http_recorder as H
from otel_replay.dialects import bodies
from otel_replay.redaction import configure_redaction
from otel_replay.sources.reader import SpanReader
from tests.fixtures.http import send_chunked, serving_handler
from tests.fixtures.secrets import SECRET_SHAPES, WRITING, every_byte
from tests.unit.capture.test_http_recorder import recording

Framing = Callable[[list[str], str], list[bytes]]


def _sse(events: list[Any], eol: str, names: list[str] | None = None) -> list[bytes]:
    out = []
    for i, event in enumerate(events):
        data = event if isinstance(event, str) else json.dumps(event)
        head = f"event: {names[i]}{eol}" if names else ""
        out.append(f"{head}data: {data}{eol}{eol}".encode())
    return out


def openai_sse(pieces: list[str], eol: str) -> list[bytes]:
    base = {"id": "c1", "object": "chat.completion.chunk", "model": "gpt-x"}
    events: list[Any] = [
        {**base, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}
        for p in pieces
    ]
    return _sse([*events, "[DONE]"], eol)


def openai_sse_pretty(pieces: list[str], eol: str) -> list[bytes]:
    """Each event's JSON over several ``data:`` lines: a client joins them with newlines."""
    out = []
    for p in pieces:
        event = {"choices": [{"index": 0, "delta": {"content": p}}]}
        lines = json.dumps(event, indent=1).split("\n")
        out.append("".join(f"data: {line}{eol}" for line in lines).encode() + eol.encode())
    return out


def anthropic_text(pieces: list[str], eol: str) -> list[bytes]:
    events = [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        for p in pieces
    ]
    start = {"type": "message_start", "message": {"id": "m1", "role": "assistant"}}
    stop = {"type": "message_stop"}
    names = ["message_start", *("content_block_delta" for _ in pieces), "message_stop"]
    return _sse([start, *events, stop], eol, names)


def anthropic_tool_input(pieces: list[str], eol: str) -> list[bytes]:
    events = [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": p},
        }
        for p in pieces
    ]
    return _sse(events, eol, ["content_block_delta"] * len(events))


def json_lines(pieces: list[str], eol: str) -> list[bytes]:
    lines = [{"message": {"role": "assistant", "content": p}, "done": False} for p in pieces]
    lines.append({"message": {"role": "assistant", "content": ""}, "done": True})
    return [(json.dumps(line) + eol).encode() for line in lines]


def vercel_data_stream(pieces: list[str], eol: str) -> list[bytes]:
    head = f'f:{{"messageId":"msg-1"}}{eol}'.encode()
    tail = f'e:{{"finishReason":"stop"}}{eol}d:{{"finishReason":"stop"}}{eol}'.encode()
    return [head, *(f"0:{json.dumps(p)}{eol}".encode() for p in pieces), tail]


def vercel_tool_args(pieces: list[str], eol: str) -> list[bytes]:
    head = f'b:{{"toolCallId":"call-1","toolName":"login"}}{eol}'.encode()
    deltas = [
        f"c:{json.dumps({'toolCallId': 'call-1', 'argsTextDelta': p})}{eol}".encode()
        for p in pieces
    ]
    return [head, *deltas]


def vercel_ui_stream(pieces: list[str], eol: str) -> list[bytes]:
    events: list[Any] = [{"type": "start"}, {"type": "text-start", "id": "t1"}]
    events += [{"type": "text-delta", "id": "t1", "delta": p} for p in pieces]
    events += [{"type": "text-end", "id": "t1"}, {"type": "finish"}, "[DONE]"]
    return _sse(events, eol)


#: Each framing, whether its parts carry JSON text (tool arguments), and its own content type.
FRAMINGS: dict[str, tuple[Framing, bool, str]] = {
    "openai sse": (openai_sse, False, "text/event-stream"),
    "openai sse pretty": (openai_sse_pretty, False, "text/event-stream"),
    "anthropic text": (anthropic_text, False, "text/event-stream; charset=utf-8"),
    "anthropic tool input": (anthropic_tool_input, True, "text/event-stream"),
    "json lines": (json_lines, False, "application/x-ndjson"),
    "vercel data stream": (vercel_data_stream, False, "text/plain; charset=utf-8"),
    "vercel tool args": (vercel_tool_args, True, "text/plain; charset=utf-8"),
    "vercel ui stream": (vercel_ui_stream, False, "text/event-stream"),
}
#: Content types a server may send any of these under (None: no content type at all).
CONTENT_TYPES = [
    None,
    "text/plain; charset=utf-8",
    "application/octet-stream",
    "application/x-ndjson",
    "text/event-stream; charset=utf-8",
    "application/json",
]


class StreamServer:
    """Answers each POST with ``parts`` (one HTTP chunk each) under ``content_type``."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.content_type: str | None = None

    @contextlib.contextmanager
    def serving(self) -> Iterator[str]:
        plan = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                headers = {} if plan.content_type is None else {"Content-Type": plan.content_type}
                send_chunked(self, headers, plan.parts)

            def log_message(self, *args: Any) -> None:
                pass

        with serving_handler(Handler) as url:
            yield url


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[StreamServer, str]]:
    configure_redaction()
    s = StreamServer()
    with s.serving() as url:
        yield s, url
    configure_redaction()


def record(url: str, path: Path) -> tuple[bytes, dict[str, Any]]:
    """One streamed POST through the recording transport: what the client read, and the
    attributes of the span it recorded.  Plain HTTP to 127.0.0.1: the transport loads no
    certificates (20 ms a transport, per example)."""
    with recording(path):
        transport = httpx.HTTPTransport(verify=False)
        http = httpx.Client(transport=otel_replay.RecordingTransport(transport))
        with http.stream("POST", url + "/v1/chat", json={"model": "m"}) as response:
            read = b"".join(response.iter_bytes())
    (span,) = SpanReader(path)
    return read, span.attributes


def split(text: str, secret_at: int, size: int, cuts: list[int]) -> list[str]:
    """``text`` in parts, each cut inside the secret that starts at ``secret_at``."""
    at = sorted({secret_at + c for c in cuts if 0 < c < size})
    bounds = [0, *at, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def test_a_secret_split_across_stream_parts_never_reaches_disk(
    server: tuple[StreamServer, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    stream, url = server

    @settings(WRITING, max_examples=60)
    @given(
        framing=st.sampled_from(sorted(FRAMINGS)),
        content_type=st.sampled_from([*CONTENT_TYPES, "own"]),
        eol=st.sampled_from(["\n", "\r\n"]),
        shape=SECRET_SHAPES,
        cuts=st.lists(st.integers(1, 80), min_size=1, max_size=3),
    )
    def check(
        framing: str, content_type: str | None, eol: str, shape: tuple[str, str], cuts: list[int]
    ) -> None:
        text, secret = shape
        make, carries_json, own = FRAMINGS[framing]
        whole = json.dumps({"note": f"use {text} now"}) if carries_json else f"use {text} now"
        at = whole.index(text)
        stream.parts = make(split(whole, at, len(text), cuts), eol)
        stream.content_type = own if content_type == "own" else content_type
        path = tmp_path_factory.mktemp("stream") / "run.otlp"
        read, attrs = record(url, path)
        assert read == b"".join(stream.parts)  # the client read the stream as sent
        written = b"".join(every_byte(path.parent).values())
        assert secret.encode() not in written, (framing, stream.content_type, stream.parts)
        kept = A.HTTP_RESPONSE_BODY in attrs or A.BYTES + A.HTTP_RESPONSE_BODY in attrs
        assert kept or attrs.get(H.RESPONSE_BODY_DROPPED)

    check()


@pytest.mark.parametrize("content_type", CONTENT_TYPES, ids=str)
@pytest.mark.parametrize("framing", sorted(FRAMINGS))
def test_a_stream_with_no_secret_is_kept_byte_for_byte(
    server: tuple[StreamServer, str], tmp_path: Path, framing: str, content_type: str | None
) -> None:
    """The check leaves out only what would show a secret: a stream of ordinary text
    (words split across parts too) is recorded whole, under any content type."""
    stream, url = server
    make, carries_json, _ = FRAMINGS[framing]
    words = "the answer is forty two, see https://example.com/docs?page=2 for more"
    whole = json.dumps({"note": words}) if carries_json else words
    stream.parts = make([whole[i : i + 7] for i in range(0, len(whole), 7)], "\n")
    stream.content_type = content_type
    path = tmp_path / "run.otlp"
    _, attrs = record(url, path)
    assert H.RESPONSE_BODY_DROPPED not in attrs
    assert attrs[A.HTTP_RESPONSE_BODY] == b"".join(stream.parts).decode()


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"[" * 5000 + b"]" * 5000, id="JSON nested past the bound"),
        pytest.param(b"data: " + b"[" * 5000 + b"]" * 5000 + b"\n\n", id="an event nested so"),
    ],
)
def test_a_body_that_cannot_be_read_with_certainty_is_left_out(
    server: tuple[StreamServer, str], tmp_path: Path, body: bytes
) -> None:
    stream, url = server
    stream.parts, stream.content_type = [body], None
    path = tmp_path / "run.otlp"
    _, attrs = record(url, path)
    assert attrs.get(H.RESPONSE_BODY_DROPPED)
    assert A.HTTP_RESPONSE_BODY not in attrs


# --- interleaved streams ---------------------------------------------------------------
#
# Class: a secret split across the deltas of one stream of a body that interleaves
# several (``n`` choices, a Responses answer's output text beside its reasoning
# summary, Anthropic content blocks, Vercel text parts, JSON lines of channels
# no reading knows).  Joined per JSON path alone, the text holds the other
# streams' deltas between the secret's parts and shows none: the body would be kept
# whole, and a client joining the one stream reads the secret.

#: Fillers another stream sends between the secret's parts.
FILLERS = [".", " ", "ok", "x1 ", "-"]


def _openai_n(stream: int, text: str) -> Any:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "choices": [{"index": stream, "delta": {"content": text}, "finish_reason": None}],
    }


def _responses(stream: int, text: str) -> Any:
    if stream == 0:
        kind, item = "response.output_text.delta", "m1"
    else:
        kind, item = "response.reasoning_summary_text.delta", f"r{stream}"
    return {
        "type": kind,
        "item_id": item,
        "output_index": stream,
        "content_index": 0,
        "delta": text,
    }


def _anthropic_blocks(stream: int, text: str) -> Any:
    return {
        "type": "content_block_delta",
        "index": stream,
        "delta": {"type": "text_delta", "text": text},
    }


def _vercel_ui(stream: int, text: str) -> Any:
    return {"type": "text-delta", "id": f"t{stream}", "delta": text}


def _channels(stream: int, text: str) -> Any:
    return {"channel": f"c{stream}", "out": text}  # no key a reading knows


#: Each interleaving framing: how stream ``i`` sends a delta, whether its events are SSE
#: (with their types), and whether the streams strictly take turns.
INTERLEAVED: dict[str, tuple[Callable[[int, str], Any], bool, bool]] = {
    "openai n choices": (_openai_n, False, False),
    "responses output and reasoning": (_responses, True, False),
    "anthropic content blocks": (_anthropic_blocks, True, False),
    "vercel ui text parts": (_vercel_ui, False, False),
    "json lines of unknown channels": (_channels, False, True),
}


def _interleaved(
    framing: str, pieces: list[str], streams: int, gaps: list[list[int]], eol: str
) -> list[bytes]:
    make, sse, turns = INTERLEAVED[framing]
    events: list[Any] = []
    for i, piece in enumerate(pieces):
        events.append(make(0, piece))
        others = range(1, streams) if turns else gaps[i % len(gaps)]
        events += [make(s, FILLERS[(i + s) % len(FILLERS)]) for s in others]
    if framing.startswith("json lines"):
        return [(json.dumps(e) + eol).encode() for e in events]
    names = [e["type"] for e in events] if sse else None
    return _sse(events, eol, names)


def _first_stream(framing: str, body: bytes) -> str:
    """The text a client joins of stream 0 of a recorded body."""
    make, _, _ = INTERLEAVED[framing]
    probe = make(0, "\x00")
    out = []
    for line in body.decode("utf-8", "replace").splitlines():
        data = line[5:].strip() if line.startswith("data:") else line.strip()
        try:
            event = json.loads(data)
        except ValueError:
            continue
        if _same_stream(event, probe):
            out.append(_delta(event))
    return "".join(out)


def _same_stream(event: Any, probe: Any) -> bool:
    if isinstance(probe, dict):
        return isinstance(event, dict) and all(
            _same_stream(event.get(k), v) for k, v in probe.items()
        )
    if isinstance(probe, list):
        return (
            isinstance(event, list)
            and len(event) == len(probe)
            and all(_same_stream(e, p) for e, p in zip(event, probe, strict=True))
        )
    return probe == "\x00" or event == probe


def _delta(event: Any) -> str:
    if isinstance(event, dict):
        return "".join(
            _delta(v)
            for k, v in event.items()
            if k not in ("type", "id", "item_id", "channel", "object")
        )
    if isinstance(event, list):
        return "".join(_delta(v) for v in event)
    return event if isinstance(event, str) else ""


def test_a_secret_split_across_one_of_interleaved_streams_is_never_kept(
    server: tuple[StreamServer, str], tmp_path_factory: pytest.TempPathFactory
) -> None:
    stream, url = server

    @settings(WRITING, max_examples=60)
    @given(
        framing=st.sampled_from(sorted(INTERLEAVED)),
        streams=st.integers(2, 4),
        eol=st.sampled_from(["\n", "\r\n"]),
        shape=SECRET_SHAPES,
        cuts=st.lists(st.integers(1, 60), min_size=1, max_size=5),
        data=st.data(),
    )
    def check(
        framing: str,
        streams: int,
        eol: str,
        shape: tuple[str, str],
        cuts: list[int],
        data: st.DataObject,
    ) -> None:
        text, secret = shape
        whole = f"use {text} now"
        pieces = split(whole, whole.index(text), len(text), cuts)
        others = st.lists(st.integers(1, streams - 1), min_size=1, max_size=3)
        gaps = data.draw(st.lists(others, min_size=1, max_size=len(pieces)))
        stream.parts = _interleaved(framing, pieces, streams, gaps, eol)
        stream.content_type = "text/event-stream"
        path = tmp_path_factory.mktemp("interleaved") / "run.otlp"
        read, attrs = record(url, path)
        assert read == b"".join(stream.parts)
        assert secret in _first_stream(framing, read)  # a client joining stream 0 reads it
        written = b"".join(every_byte(path.parent).values())
        assert secret.encode() not in written
        if attrs.get(H.RESPONSE_BODY_DROPPED):
            return
        kept = attrs.get(A.BYTES + A.HTTP_RESPONSE_BODY) or attrs[A.HTTP_RESPONSE_BODY]
        kept = kept if isinstance(kept, bytes) else kept.encode()
        assert secret not in _first_stream(framing, kept), (framing, stream.parts)

    check()


@pytest.mark.parametrize("framing", sorted(INTERLEAVED))
def test_interleaved_streams_with_no_secret_are_kept_byte_for_byte(
    server: tuple[StreamServer, str], tmp_path: Path, framing: str
) -> None:
    stream, url = server
    words = "the answer is forty two, see https://example.com/docs?page=2 for more"
    pieces = [words[i : i + 7] for i in range(0, len(words), 7)]
    stream.parts = _interleaved(framing, pieces, 3, [[1, 2], [2], [1]], "\n")
    stream.content_type = "text/event-stream"
    _, attrs = record(url, tmp_path / "run.otlp")
    assert H.RESPONSE_BODY_DROPPED not in attrs
    assert attrs[A.HTTP_RESPONSE_BODY] == b"".join(stream.parts).decode()


def test_a_streamed_answer_of_several_choices_folds_each_choice_apart() -> None:
    """The answer folded from ``n`` interleaved choices is each choice's own text: merged,
    a choice's secret would read with another's deltas between its parts, and show none
    to the redactor."""

    @settings(max_examples=100, deadline=None)
    @given(
        texts=st.lists(st.text(min_size=1, max_size=12), min_size=2, max_size=4),
        data=st.data(),
    )
    def check(texts: list[str], data: st.DataObject) -> None:
        deltas = [(i, t[j : j + 3]) for i, t in enumerate(texts) for j in range(0, len(t), 3)]
        order = data.draw(st.permutations(range(len(deltas))))
        seen: dict[int, int] = {}
        # Each choice's deltas in their own order, interleaved as drawn.
        per_choice = {i: [d for c, d in deltas if c == i] for i in range(len(texts))}
        chunks = []
        for k in order:
            choice = deltas[k][0]
            n = seen.get(choice, 0)
            seen[choice] = n + 1
            chunks.append(_openai_n(choice, per_choice[choice][n]))
        body = b"".join(_sse([*chunks, "[DONE]"], "\n"))
        folded = bodies.sse_response(body)
        assert folded is not None
        got = {c["index"]: c["message"]["content"] for c in folded["choices"]}
        assert got == dict(enumerate(texts))

    check()
