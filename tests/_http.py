"""Test helper: a real HTTP server on 127.0.0.1 answering with a given function."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
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

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
