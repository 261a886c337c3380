"""Test helper: a real HTTP server on 127.0.0.1 answering with a given function."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

#: ``answer(request) -> (status, content type, body)`` or ``(..., more headers)``
Answer = Callable[
    [BaseHTTPRequestHandler], "tuple[int, str, bytes] | tuple[int, str, bytes, dict[str, str]]"
]


@contextlib.contextmanager
def serving(answer: Answer) -> Iterator[str]:
    """Base URL of a server that answers every GET and POST with ``answer``."""

    class Handler(BaseHTTPRequestHandler):
        def _reply(self) -> None:
            status, content_type, body, *more = answer(self)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            for name, value in (more[0] if more else {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _reply

        def log_message(self, *args: Any) -> None:
            pass

    with serving_handler(Handler) as url:
        yield url


@contextlib.contextmanager
def serving_handler(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    """Base URL of a threading server on 127.0.0.1 answering with ``handler``."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def send_chunked(
    handler: BaseHTTPRequestHandler,
    headers: dict[str, str],
    chunks: Iterable[bytes],
    pause: float = 0.0,
) -> None:
    """A 200 with ``headers``, its body sent as ``chunks`` (HTTP/1.1 chunked encoding), each
    flushed, ``pause`` seconds apart: the chunking is the server's."""
    handler.send_response(200)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    for chunk in chunks:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        handler.wfile.flush()
        if pause:
            time.sleep(pause)
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()
