"""``otel-replay serve`` and a request body that comes slowly: the wait for each piece is bounded.

A real server (uvicorn on a loopback port) over a third-party recording, with
a short body timeout, is sent requests over a raw socket, the body cut into
pieces at drawn places: pieces that each come within the timeout (the whole
body taking longer than it) are served; a body that stops coming after any
of its pieces is answered 408 once the timeout is up, and the server goes on
serving.
"""

from __future__ import annotations

import itertools
import json
import random
import socket
import time
from collections.abc import Iterator

import pytest

import otel_replay
from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.engine import ReplayEngine
from otel_replay.replay.server_limits import ServerLimits
from tests.unit.replay.test_serve import DATA, requests_of, without_stream

CASE = "otel_openai_v2/chat_sync"
TIMEOUT = 0.4


def first_request() -> bytes:
    return json.dumps(without_stream(requests_of(CASE)[0]["body_json"])).encode()


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    runs = otel_replay.load(DATA / CASE / "traces.otlp.jsonl")
    server = BackgroundServer(ReplayEngine(runs), limits=ServerLimits(body_timeout=TIMEOUT))
    try:
        yield server.start()
    finally:
        server.stop()


def cuts(seed: int) -> list[int]:
    """Drawn places to cut the body at (one to five pieces)."""
    rng = random.Random(seed)
    size = len(first_request())
    return sorted(rng.sample(range(1, size), rng.randint(0, 4)))


def pieces(body: bytes, at: list[int]) -> list[bytes]:
    edges = [0, *at, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(edges)]


def post(url: str, body: bytes, at: list[int], pause: float, stop_after: int | None) -> bytes:
    """POST ``body`` in pieces cut ``at``, ``pause`` s apart, sending none after piece
    ``stop_after`` (None: all); the status line and headers of the answer."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        head = (
            f"POST /v1/chat/completions HTTP/1.1\r\nhost: {host}:{port}\r\n"
            f"content-type: application/json\r\ncontent-length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode())
        for n, piece in enumerate(pieces(body, at)):
            if n:
                time.sleep(pause)
            sock.sendall(piece)
            if stop_after is not None and n == stop_after:
                break
        answer = b""
        while b"\r\n\r\n" not in answer:
            got = sock.recv(65536)
            if not got:
                break
            answer += got
        return answer


@pytest.mark.parametrize("seed", range(4))
def test_a_body_whose_pieces_each_come_in_time_is_served(url: str, seed: int) -> None:
    at = cuts(seed) or [1]
    # Each piece well within the timeout; all of them past it when there are several.
    answer = post(url, first_request(), at, TIMEOUT / 3, None)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]


@pytest.mark.parametrize("seed", range(4))
def test_a_body_that_stops_coming_is_answered_408_and_the_server_goes_on(
    url: str, seed: int
) -> None:
    at = cuts(seed) or [1]
    stop_after = random.Random(seed).randrange(len(at))  # never the last piece
    t0 = time.monotonic()
    answer = post(url, first_request(), at, TIMEOUT / 4, stop_after)
    waited = time.monotonic() - t0
    assert answer.startswith(b"HTTP/1.1 408"), answer[:200]
    assert waited >= TIMEOUT, waited
    assert post(url, first_request(), [], 0, None).startswith(b"HTTP/1.1 200")
