"""serve's per-request path, cut to what a request needs: the same answers, the same log.

Each request used to pass through uvicorn's X-Forwarded-* middleware (the
client's address and scheme, which nothing in serve reads), have its body
copied when it came in one message, its encoding found by
``json.detect_encoding``, and its log line written by ``click.echo`` (which
looks up the stream and strips colours anew every line).  Drawn here: bodies
in any number of messages around the size limit, read whole or refused as
before; every byte string's encoding, told as ``json.detect_encoding`` tells
it; and runs recorded with model names holding what a terminal acts on,
served by the real process, one log line a request, escaped as before.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
from collections.abc import MutableMapping
from pathlib import Path
from typing import Any

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.cli.printable import printable
from otel_replay.replay.adapters.server import ReplayApp
from otel_replay.replay.adapters.uvicorn_server import _config
from otel_replay.replay.answers import Answer
from otel_replay.replay.engine import ReplayEngine
from otel_replay.replay.server_limits import DEFAULT_LIMITS, ServerLimits
from otel_replay.wire.shapes import _encoding
from tests.fixtures.recording import recording
from tests.unit.replay.test_serve import DATA

SRC = Path(otel_replay.__file__).resolve().parents[1]
#: A recording to serve (the engine is not asked here: the app reads the request first).
RUNS = otel_replay.load(DATA / "otel_openai_v2/chat_sync" / "traces.otlp.jsonl")


def _app(limit: int = DEFAULT_LIMITS.max_body_bytes) -> ReplayApp:
    return ReplayApp(ReplayEngine(RUNS), limits=ServerLimits(max_body_bytes=limit))


def _read(app: ReplayApp, pieces: list[bytes], declared: bool) -> bytes | Answer:
    messages: list[MutableMapping[str, Any]] = [
        {"type": "http.request", "body": p, "more_body": i < len(pieces) - 1}
        for i, p in enumerate(pieces)
    ]

    async def receive() -> MutableMapping[str, Any]:
        return messages.pop(0)

    headers = {"content-length": str(sum(map(len, pieces)))} if declared else {}
    try:
        return asyncio.run(app._body(receive, headers))
    finally:
        app.close()


@settings(max_examples=300, deadline=None)
@given(
    body=st.binary(max_size=120),
    cuts=st.lists(st.integers(0, 120), max_size=4),
    limit=st.integers(0, 130),
    declared=st.booleans(),
)
def test_a_body_in_any_number_of_messages_is_read_whole_or_refused_past_the_limit(
    body: bytes, cuts: list[int], limit: int, declared: bool
) -> None:
    edges = [0, *sorted(c for c in cuts if c <= len(body)), len(body)]
    pieces = [body[a:b] for a, b in itertools.pairwise(edges)]
    read = _read(_app(limit), pieces, declared)
    if len(body) > limit:
        assert isinstance(read, Answer) and read.status == 413
    else:
        assert type(read) is bytes and read == body


_JSONISH = st.one_of(
    st.binary(max_size=8),
    st.builds(lambda rest: b"{" + rest, st.binary(max_size=8)),
    st.sampled_from([b"{\x00", b"{\x00\x00\x00", b"{", b"\xef\xbb\xbf{}", b"\x00{", b"{}"]),
    st.builds(
        lambda t, enc: t.encode(enc),
        st.text(max_size=4),
        st.sampled_from(
            ["utf-8", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"]
        ),
    ),
)


@settings(max_examples=500, deadline=None)
@given(raw=_JSONISH)
def test_the_encoding_of_a_body_is_the_one_json_finds(raw: bytes) -> None:
    assert _encoding(raw) == json.detect_encoding(raw)


def test_nothing_stands_between_uvicorn_and_the_app() -> None:
    app = _app()
    try:
        config = _config(app, DEFAULT_LIMITS, "off")
        config.load()
        assert config.loaded_app is app  # no X-Forwarded-* middleware run on every request
    finally:
        app.close()


#: Model names a recorded span may hold: what a terminal acts on among ordinary text.
_NAMES = st.text(
    st.sampled_from(["a", "é", "-", " ", "\x1b", "[", "\n", "\r", "\t", "\x9b", "\u202e", "\x7f"]),
    min_size=1,
    max_size=12,
)


def _record(path: Path, models: list[str]) -> None:
    with recording(path), otel_replay.agent_run("logged") as run:
        for i, model in enumerate(models):
            question = [{"role": "user", "content": f"question {i}"}]
            with otel_replay.model_call(provider="openai", model=model, messages=question) as call:
                reply = {"role": "assistant", "parts": [{"type": "text", "content": f"a{i}"}]}
                call.record(reply, input_tokens=1, output_tokens=1)
        run.record("done")


@settings(max_examples=3, deadline=None)
@given(models=st.lists(_NAMES, min_size=1, max_size=6))
def test_each_request_is_logged_on_one_line_with_what_a_terminal_acts_on_escaped(
    tmp_path_factory: Any, models: list[str]
) -> None:
    trace = tmp_path_factory.mktemp("logged") / "run.otlp"
    _record(trace, models)
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_replay.cli.main", "serve", str(trace), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        encoding="utf-8",
        env={**os.environ, "PYTHONPATH": str(SRC), "PYTHONIOENCODING": "utf-8"},
    )
    assert proc.stdout is not None
    try:
        url = proc.stdout.readline().strip()
        with httpx.Client(timeout=10) as client:
            for i in range(len(models)):
                body = {"model": "m", "messages": [{"role": "user", "content": f"question {i}"}]}
                answer = client.post(url + "/v1/chat/completions", json=body)
                assert answer.status_code == 200, answer.text
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    served = [line for line in err.splitlines() if line.startswith("otel-replay: conversation")]
    assert len(served) == len(models)
    for line, model in zip(served, models, strict=True):
        assert line.startswith("otel-replay: conversation 1: step ")
        assert line.endswith(") served (exact) to openai.chat")
        assert f"model chat {printable(model)}" in line  # shown escaped, never obeyed
        assert printable(line) == line
