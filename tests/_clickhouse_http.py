"""A ClickHouse HTTP interface on 127.0.0.1, its queries run by embedded ClickHouse (chdb).

Enough of the interface for clickhouse-connect: the query in the body or in
``?query=``, query parameters as ``param_<name>``, the output format from
``default_format`` (or the query's own ``FORMAT``), the user and password
from Basic authentication or ``X-ClickHouse-User``/``X-ClickHouse-Key``, an
error as ClickHouse sends one (status 500, ``Code: N. DB::Exception: ...``,
``X-ClickHouse-Exception-Code``).  Every request is kept for the test to
look at.
"""

from __future__ import annotations

import base64
import contextlib
import re
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    """What the server was sent."""

    queries: list[str] = field(default_factory=list)
    users: list[tuple[str, str]] = field(default_factory=list)


@contextlib.contextmanager
def clickhouse_http(directory: str, password: str = "") -> Iterator[tuple[str, Seen]]:
    """A server over the chdb database in ``directory`` (``password`` required when set):
    its base URL and what it was sent."""
    from chdb import session

    held = session.Session(directory)
    lock = threading.Lock()
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            self._answer(b"")

        def do_POST(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            self._answer(self.rfile.read(size))

        def _answer(self, body: bytes) -> None:
            url = urllib.parse.urlsplit(self.path)
            if url.path == "/ping":
                return self._send(200, b"Ok.\n", {})
            query = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
            user, key = self._user()
            seen.users.append((user, key))
            if password and key != password:
                return self._error(516, "AUTHENTICATION_FAILED", "default: Authentication failed")
            sql = (query.get("query", "") + " " + body.decode()).strip()
            seen.queries.append(sql)
            params = {k[len("param_") :]: v for k, v in query.items() if k.startswith("param_")}
            fmt = query.get("default_format") or "TabSeparated"
            if query.get("database"):
                sql = re.sub(r"^\s*", "", sql)
            try:
                with lock:
                    if query.get("database"):
                        held.query(f"USE {query['database']}")
                    out = held.query(sql, fmt, params=params).bytes()
            except Exception as exc:  # chdb's errors: what ClickHouse would answer
                text = str(exc)
                code = re.match(r"Code: (\d+)", text)
                return self._error(int(code[1]) if code else 1000, "", text)
            self._send(200, out, {"X-ClickHouse-Format": fmt, "X-ClickHouse-Timezone": "UTC"})

        def _user(self) -> tuple[str, str]:
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Basic "):
                user, _, key = base64.b64decode(auth[6:]).decode().partition(":")
                return user, key
            return self.headers.get("X-ClickHouse-User", ""), self.headers.get(
                "X-ClickHouse-Key", ""
            )

        def _error(self, code: int, name: str, text: str) -> None:
            body = (
                text
                if text.startswith("Code:")
                else f"Code: {code}. DB::Exception: {text}. ({name})"
            )
            self._send(500, body.encode(), {"X-ClickHouse-Exception-Code": str(code)})

        def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        held.close()
