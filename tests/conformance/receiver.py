"""An OTLP/HTTP receiver (stdlib) that keeps what a stack exports, in files our readers read.

A stack under test exports with its own OTLP/HTTP exporter
(``OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT``).  Each request to
``/v1/traces`` or ``/v1/logs`` is appended to a file of ``outdir`` as it came:

- protobuf bodies to ``traces.binpb`` / ``logs.binpb``, in the Collector
  ``fileexporter``'s proto format (a 4-byte big-endian length, then the body);
- OTLP/JSON bodies (the JavaScript exporters' default) to ``traces.jsonl`` /
  ``logs.jsonl``, one request per line.

Bodies sent gzip-compressed are stored decompressed.  Metrics are answered
and dropped.
"""

from __future__ import annotations

import gzip
import json
import struct
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.conformance.server import Background

SIGNALS = {"/v1/traces": "traces", "/v1/logs": "logs"}
#: Every file the receiver may write.
TRACE_FILES = tuple(f"{signal}.{ext}" for signal in SIGNALS.values() for ext in ("binpb", "jsonl"))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while size := int(self.rfile.readline().split(b";")[0], 16):
                data += self.rfile.read(size)
                self.rfile.readline()
            self.rfile.readline()
        else:
            data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            data = gzip.decompress(data)
        return data

    def do_POST(self) -> None:
        body = self._body()
        as_json = "json" in self.headers.get("Content-Type", "")
        signal = SIGNALS.get(self.path.split("?", 1)[0])
        if signal is not None:
            self.server.keep(signal, body, as_json)
        answer = b"{}" if as_json else b""
        self.send_response(200)
        self.send_header(
            "Content-Type", "application/json" if as_json else "application/x-protobuf"
        )
        self.send_header("Content-Length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, outdir: Path, port: int) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.outdir = outdir
        self.lock = threading.Lock()
        #: Requests kept per file name.
        self.requests: dict[str, int] = {}

    def keep(self, signal: str, body: bytes, as_json: bool) -> None:
        if as_json:
            name = f"{signal}.jsonl"
            if b"\n" in body:  # one request per line
                body = json.dumps(json.loads(body), ensure_ascii=False).encode()
            record = body + b"\n"
        else:
            name = f"{signal}.binpb"
            record = struct.pack(">I", len(body)) + body
        with self.lock:
            with (self.outdir / name).open("ab") as f:
                f.write(record)
            self.requests[name] = self.requests.get(name, 0) + 1


class OtlpReceiver(Background):
    """The receiver on 127.0.0.1 (a free port unless given), writing into ``outdir``.

    Point a stack's exporter at it with ``OTEL_EXPORTER_OTLP_ENDPOINT=<url>``.
    """

    def __init__(self, outdir: Path, port: int = 0) -> None:
        self._receiver = _Server(outdir, port)
        super().__init__(self._receiver)

    @property
    def requests(self) -> dict[str, int]:
        """How many export requests each file got."""
        with self._receiver.lock:
            return dict(self._receiver.requests)
