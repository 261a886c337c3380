"""serve: a kept-alive connection is cut off when a request's headers are too slow, and only then.

One timer a connection watches for a request's headers (not one a request), looking
again when it fires: a client sending its requests on one connection with gaps
shorter than ``--header-timeout``, for longer than it in all, is served every time;
the same connection, once it sends half a request's headers or nothing, is closed
after ``--header-timeout``, well before the keep-alive limit (5 s).  A real server
process and a raw socket, so that the gaps are the client's own.
"""

from __future__ import annotations

import contextlib
import json
import socket
import time

import pytest

from tests.unit.replay.test_serve import DATA, requests_of, serving, without_stream

CASE = "otel_openai_v2/chat_sync"
TIMEOUT = 0.6


def _request(body: bytes) -> bytes:
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _response(sock: socket.socket) -> tuple[int, bytes]:
    """The status and body of one response with a Content-Length."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the connection was closed"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    length = next(
        int(v) for k, _, v in (h.partition(":") for h in lines[1:]) if k.lower() == "content-length"
    )
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection was closed"
        body += chunk
    return int(lines[0].split()[1]), body


def _closed_within(sock: socket.socket, seconds: float) -> float:
    """How long the server took to close the connection (it must within ``seconds``)."""
    started = time.monotonic()
    sock.settimeout(seconds)
    with contextlib.suppress(ConnectionResetError):
        assert sock.recv(1) == b""
    return time.monotonic() - started


@pytest.mark.parametrize(
    ("gaps", "then"),
    [
        ([0.4, 0.4, 0.4], b""),
        ([0.05, 0.5, 0.2], b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty"),
        ([0.3, 0.0, 0.45], b"POST /v1/chat/comp"),
    ],
)
def test_a_kept_alive_connection_is_cut_off_only_when_its_headers_are_slow(
    gaps: list[float], then: bytes
) -> None:
    bodies = [json.dumps(without_stream(r["body_json"])).encode() for r in requests_of(CASE)]
    trace = DATA / CASE / "traces.otlp.jsonl"
    with serving(trace, "--header-timeout", str(TIMEOUT)) as url:
        host, port = url.removeprefix("http://").split(":")
        with socket.create_connection((host, int(port))) as sock:
            sock.settimeout(10)
            for gap, body in zip(gaps, bodies, strict=True):
                time.sleep(gap)
                sock.sendall(_request(body))
                status, answer = _response(sock)
                assert status == 200, answer[:300]
            assert sum(gaps) > TIMEOUT  # the connection outlived one header timeout
            sock.sendall(then)
            took = _closed_within(sock, 4)
            assert TIMEOUT * 0.8 <= took <= TIMEOUT + 1.5, took
