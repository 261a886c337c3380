"""An in-process replay's server, stopped: it ends, closing the connections clients keep alive.

The class: a server stopped with any number of clients' connections still open after their
answers (an SDK's pool keeps them), with a connection opened just before the stop (with
nothing sent or a request half sent: asyncio may accept it in the very turn its listener
closes), or with none.  ``stop()`` ends the server's thread (it no longer waits for uvicorn's
next tick and its fixed pause), each open connection is closed by the server, and the port
accepts no new one.
"""

from __future__ import annotations

import json
import socket

import pytest

import otel_replay
from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.engine import ReplayEngine
from tests.unit.replay.test_serve import DATA, requests_of, without_stream

CASE = "otel_openai_v2/chat_sync"


def _answered(host: str, port: int) -> socket.socket:
    """A connection kept alive after one answered request."""
    body = json.dumps(without_stream(requests_of(CASE)[0]["body_json"])).encode()
    conn = socket.create_connection((host, port), timeout=10)
    conn.sendall(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"
        b"Content-Length: %d\r\n\r\n%s" % (host.encode(), len(body), body)
    )
    got = b""
    while b"\r\n\r\n" not in got:
        got += conn.recv(65536)
    assert got.startswith(b"HTTP/1.1 200"), got[:200]
    return conn


@pytest.mark.parametrize("late", [None, b"", b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"])
@pytest.mark.parametrize("kept", [0, 1, 3])
def test_a_stopped_server_ends_and_closes_what_clients_keep_open(
    kept: int, late: bytes | None
) -> None:
    server = BackgroundServer(ReplayEngine(otel_replay.load(DATA / CASE / "traces.otlp.jsonl")))
    server.start()
    host, port = server.sock.getsockname()[:2]
    conns = [_answered(host, port) for _ in range(kept)]
    if late is not None:
        conns.append(socket.create_connection((host, port), timeout=10))
        conns[-1].sendall(late)
    try:
        server.stop()
        assert not server._thread.is_alive()
        for conn in conns:
            try:
                while conn.recv(65536):  # (the rest of an answer, then the server's close)
                    pass
            except ConnectionResetError:  # (closed with a request unread)
                pass
        with pytest.raises(OSError):
            socket.create_connection((host, port), timeout=2).close()
    finally:
        for conn in conns:
            conn.close()
