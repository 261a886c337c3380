"""``otel-replay show URL`` against servers that misbehave: one line, exit 2, in bounded time.

Each server is a raw socket on 127.0.0.1 that answers one request the way
a broken or hostile server would.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from click.testing import CliRunner, Result

from otel_replay.cli.main import cli

SPANS = json.dumps(
    {
        "resourceSpans": [
            {
                "scopeSpans": [
                    {"spans": [{"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "served"}]}
                ]
            }
        ]
    }
).encode()

Reply = Callable[[socket.socket, threading.Event], None]


@contextlib.contextmanager
def server(reply: Reply) -> Iterator[str]:
    """The URL of a one-request server answering with ``reply(connection, stop)``."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def run() -> None:
        with contextlib.suppress(OSError):
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)  # the request
                reply(conn, stop)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/traces"
    finally:
        stop.set()
        listener.close()
        thread.join(5)


def trickle(data: bytes, every: float = 0.2, for_at_most: float = 10) -> Reply:
    """Send ``data`` a byte every ``every`` seconds (until stopped, or ``for_at_most`` seconds)."""

    def reply(conn: socket.socket, stop: threading.Event) -> None:
        end = time.monotonic() + for_at_most
        for byte in data:
            if stop.wait(every) or time.monotonic() > end:
                return
            conn.sendall(bytes([byte]))

    return reply


def send(data: bytes) -> Reply:
    def reply(conn: socket.socket, stop: threading.Event) -> None:
        conn.sendall(data)

    return reply


def show(url: str) -> tuple[Result, float]:
    started = time.monotonic()
    result = CliRunner().invoke(cli, ["show", url])
    return result, time.monotonic() - started


def one_error_line(result: Result, url: str) -> str:
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"otel-replay: error: {url}: ")
    return line[len(f"otel-replay: error: {url}: ") :]


def test_a_good_answer_still_shows() -> None:
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(SPANS)}\r\n\r\n".encode()
    with server(send(head + SPANS)) as url:
        result, _ = show(url)
    assert result.exit_code == 0, result.output
    assert "served" in result.stdout


def test_an_answer_cut_short() -> None:
    with server(send(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n" + SPANS[:19])) as url:
        result, _ = show(url)
    reason = one_error_line(result, url)
    assert reason == "answer cut short: 1000 bytes announced, 19 received at byte 19"


@pytest.mark.parametrize(
    "garbage",
    [b"HELLO THERE\r\n\r\n", b"\x1b[31m\x00\xff garbage", b"HTTP/1.1 abc\r\n\r\n"],
)
def test_a_garbage_status_line(garbage: bytes) -> None:
    with server(send(garbage)) as url:
        result, _ = show(url)
    reason = one_error_line(result, url)
    assert reason.startswith("not an HTTP answer (") and " at byte" not in reason
    assert "\x1b" not in reason


@pytest.mark.parametrize(
    "where",
    ["status line", "headers", "body"],
)
def test_a_trickling_server_meets_the_deadline(where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_REPLAY_URL_TIMEOUT", "1")
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n"
    if where == "status line":
        reply = trickle(head)
    elif where == "headers":
        reply = trickle(head + b"X-Pad: " + b"a" * 1000)
    else:
        first = send(head + b"\r\n")

        def reply(conn: socket.socket, stop: threading.Event) -> None:
            first(conn, stop)
            trickle(b" " * 1000)(conn, stop)

    with server(reply) as url:
        result, took = show(url)
    reason = one_error_line(result, url)
    assert reason.startswith("no whole answer within the 1 s limit (OTEL_REPLAY_URL_TIMEOUT)")
    assert took < 4, took


@pytest.mark.parametrize("announced", [True, False])
def test_an_answer_past_the_size_cap(announced: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_REPLAY_MAX_URL_BYTES", "4096")
    body = b" " * 100_000 + SPANS
    length = f"Content-Length: {len(body)}\r\n" if announced else "Connection: close\r\n"
    with server(send(f"HTTP/1.1 200 OK\r\n{length}\r\n".encode() + body)) as url:
        result, _ = show(url)
    reason = one_error_line(result, url)
    if announced:
        assert reason == (
            f"answer of {len(body)} bytes is past the 4 KiB limit (OTEL_REPLAY_MAX_URL_BYTES)"
        )
    else:
        assert reason.startswith("answer larger than the 4 KiB limit (OTEL_REPLAY_MAX_URL_BYTES)")


def test_an_http_error_status(tmp_path: Any) -> None:
    with server(send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")) as url:
        result, _ = show(url)
    assert one_error_line(result, url) == "HTTP 404 Not Found"


def test_one_trace_of_a_dump_served_over_http(tmp_path: Any) -> None:
    # A 4-byte framed dump read a trace at a time: no index is kept beside a URL.
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    import otel_replay
    from otel_replay.otlp.proto_writer import encode_request

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    for name in ("first", "second"):
        with provider.get_tracer("url").start_as_current_span(name):
            pass
    spans = memory.get_finished_spans()
    body = b"".join(len(r).to_bytes(4, "big") + r for r in (encode_request([s]) for s in spans))
    wanted = f"{spans[1].context.trace_id:032x}"
    head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    with server(send(head + body)) as url:
        runs = otel_replay.load(url, trace_id=wanted[:8], strict=True)
    assert [r.steps[0].name for r in runs] == ["second"]
