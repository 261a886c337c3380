"""``otel-replay serve`` under abuse: big bodies, slow clients, a stalled upstream, many clients.

Each test starts the real server process on 127.0.0.1 over a third-party
recording (the order-support conversation of OpenTelemetry's OpenAI
instrumentation) and attacks it as a careless or hostile client would,
while a good client replays the recorded conversation and must be answered
correctly and promptly.  The slow tier has the servers under slow clients
and a stalled upstream, and the soak test: thousands of requests, the
server's memory flat.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import otel_replay
from otel_replay.replay.engine import ReplayEngine
from tests.unit.replay.test_serve import DATA, requests_of, serving, without_stream

CASE = "otel_openai_v2/chat_sync"
TRACE = DATA / CASE / "traces.otlp.jsonl"
PATH = "/v1/chat/completions"
JSON = {"content-type": "application/json"}


def conversation() -> list[bytes]:
    """The recorded requests of the conversation, as a client sends them (no streaming)."""
    return [json.dumps(without_stream(r["body_json"])).encode() for r in requests_of(CASE)]


def divergent() -> bytes:
    body = without_stream(requests_of(CASE)[0]["body_json"])
    body["messages"] = [{"role": "user", "content": "something never recorded"}]
    return json.dumps(body).encode()


def replay_conversation(client: httpx.Client, url: str) -> list[Any]:
    """One good client's whole conversation; the answers' messages."""
    out = []
    for body in conversation():
        r = client.post(url + PATH, content=body, headers=JSON)
        assert r.status_code == 200, r.text[:300]
        out.append(r.json()["choices"][0]["message"])
    return out


def _address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def test_a_body_over_the_limit_is_refused_unread() -> None:
    with serving(TRACE, "--max-body-mb", "0.01") as url, httpx.Client(timeout=10) as client:
        declared = client.post(url + PATH, content=b"{" + b" " * 20_000 + b"}", headers=JSON)
        assert declared.status_code == 413, declared.text

        def chunked() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
            yield b"{"
            for _ in range(30):
                yield b" " * 1000

        streamed = client.post(url + PATH, content=chunked(), headers=JSON)
        assert streamed.status_code == 413, streamed.text
        assert replay_conversation(client, url)  # the server is fine


@pytest.mark.slow
def test_slow_and_idle_connections_are_cut_off_and_starve_nobody() -> None:
    with serving(TRACE, "--header-timeout", "0.5") as url:
        idle = [socket.create_connection(_address(url)) for _ in range(150)]
        slow = [socket.create_connection(_address(url)) for _ in range(150)]
        for sock in slow:  # half a request's headers, then nothing
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Ty")
        started = time.monotonic()
        with httpx.Client(timeout=10) as client:
            assert replay_conversation(client, url)
        assert time.monotonic() - started < 5
        time.sleep(1.5)
        for sock in idle + slow:
            sock.settimeout(5)
            with contextlib.suppress(ConnectionResetError):
                assert sock.recv(1) == b""  # closed by the server
            sock.close()


@pytest.mark.slow
def test_a_stalled_upstream_holds_up_only_what_it_was_sent() -> None:
    stalled = socket.socket()  # accepts (in the kernel) and never answers
    stalled.bind(("127.0.0.1", 0))
    stalled.listen(64)
    upstream = f"http://127.0.0.1:{stalled.getsockname()[1]}"
    statuses: list[int] = []

    def send_divergent(url: str) -> None:
        try:
            with httpx.Client(timeout=60) as client:
                post = client.post(url + PATH, content=divergent(), headers=JSON)
                statuses.append(post.status_code)
        except httpx.HTTPError:
            pass

    try:
        with serving(TRACE, "--on-divergence", "live", "--upstream", upstream) as url:
            for _ in range(24):
                threading.Thread(target=send_divergent, args=(url,), daemon=True).start()
            time.sleep(1)
            started = time.monotonic()
            with httpx.Client(timeout=10) as client:
                assert replay_conversation(client, url)
            assert time.monotonic() - started < 5
            # Past 16 calls in flight to the upstream, the rest are told at once.
            assert statuses.count(503) >= 8, statuses
    finally:
        stalled.close()


def test_conversations_are_bounded() -> None:
    runs = otel_replay.load(str(TRACE))
    engine = ReplayEngine(runs, max_conversations=8)
    first = conversation()[0]
    for _ in range(100):  # each a new client starting the conversation
        answer = engine.handle("POST", PATH, first, {})
        assert answer.status == 200
    assert len(engine.conversations) <= 8
    waiting = sum(len(q) for q in engine._waiting.values())
    assert waiting <= 8, waiting
    # The most recent conversations go on.
    second = engine.handle("POST", PATH, conversation()[1], {})
    assert second.status == 200


# --- soak ------------------------------------------------------------------------------


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _hostile(url: str, stop: threading.Event, counts: dict[str, int]) -> None:
    """Oversized, malformed and divergent requests, half headers, dropped connections."""
    host, port = _address(url)
    with httpx.Client(timeout=10) as client:
        i = 0
        while not stop.is_set():
            i += 1
            kind = i % 5
            try:
                if kind == 0:
                    big = b"{" + b" " * 300_000 + b"}"
                    status = client.post(url + PATH, content=big, headers=JSON)
                    counts["413" if status.status_code == 413 else "other"] += 1
                elif kind == 1:
                    status = client.post(url + PATH, content=b"{not json", headers=JSON)
                    counts["400" if status.status_code == 400 else "other"] += 1
                elif kind == 2:
                    status = client.post(url + PATH, content=divergent(), headers=JSON)
                    counts["409" if status.status_code == 409 else "other"] += 1
                elif kind == 3:
                    sock = socket.create_connection((host, port))
                    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n")
                    sock.close()
                    counts["half headers"] += 1
                else:
                    sock = socket.create_connection((host, port))
                    sock.sendall(
                        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n"
                        b"Content-Length: 100000\r\n\r\n{"
                    )
                    sock.close()  # gone mid-body
                    counts["cut body"] += 1
            except httpx.HTTPError:
                counts["client error"] += 1


@pytest.mark.slow
def test_soak_many_clients_some_hostile_memory_flat() -> None:
    from tests.unit.replay.test_serve import _start, _stop

    # Fewer conversations kept than the clients start: the oldest are forgotten as it runs.
    proc, url = _start(
        TRACE, "--max-body-mb", "0.25", "--header-timeout", "2", "--max-conversations", "256"
    )
    try:
        with httpx.Client(timeout=10) as client:
            expected = replay_conversation(client, url)
        counts: dict[str, int] = {
            k: 0 for k in ("413", "400", "409", "half headers", "cut body", "client error", "other")
        }
        stop = threading.Event()
        hostiles = [threading.Thread(target=_hostile, args=(url, stop, counts)) for _ in range(4)]
        for t in hostiles:
            t.start()
        wrong: list[Any] = []
        served = [0]
        lock = threading.Lock()

        def good(rounds: int) -> None:
            with httpx.Client(timeout=30) as client:
                for _ in range(rounds):
                    got = replay_conversation(client, url)
                    with lock:
                        served[0] += len(got)
                        if got != expected:
                            wrong.append(got)

        def wave(clients: int, rounds: int) -> None:
            threads = [threading.Thread(target=good, args=(rounds,)) for _ in range(clients)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(300)

        started = time.monotonic()
        wave(12, 25)  # warm-up: the server's caches and pools fill
        warm = _rss_kb(proc.pid)
        wave(12, 80)
        middle = _rss_kb(proc.pid)
        wave(12, 80)
        end = _rss_kb(proc.pid)
        stop.set()
        for t in hostiles:
            t.join(60)
        took = time.monotonic() - started
    finally:
        _stop([proc])
    print(
        f"soak: {served[0]} good requests, hostile {counts}, {took:.0f} s, "
        f"RSS {warm} -> {middle} -> {end} kB"
    )
    assert served[0] >= 12 * 185 * 3 and not wrong
    assert counts["other"] == 0, counts
    assert min(counts["413"], counts["400"], counts["409"], counts["half headers"]) > 50, counts
    # Flat: what the second long wave adds is noise, not growth per request.
    assert end - middle < 8_000, (warm, middle, end)
