"""``otel-replay serve``: the replay engine over HTTP.

The engine is wrapped in a plain ASGI application (no framework) and served
by uvicorn: HTTP/1.1 keep-alive, chunked streaming and concurrent
connections come from a maintained server instead of hand-written socket
code.  uvicorn is imported only when a server starts.
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Awaitable, Callable, Iterator, Mapping, MutableMapping
from typing import Any

from ..engine import Answer, ReplayEngine, error_answer, iter_chunks

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_END = object()


class ReplayApp:
    """An ASGI application answering every request with the engine.

    ``mcp``: an MCP server's ASGI application (see :mod:`.mcp_server`), which
    answers ``/mcp`` and owns the lifespan.
    """

    def __init__(self, engine: ReplayEngine, mcp: Any = None) -> None:
        self.engine = engine
        self.mcp = mcp

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.mcp is not None and (
            scope["type"] == "lifespan" or scope.get("path", "").rstrip("/") == MCP_PATH
        ):
            await self.mcp(scope, receive, send)
            return
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        body = bytearray()
        while True:
            message = await receive()
            body.extend(message.get("body", b""))
            if not message.get("more_body"):
                break
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        loop = asyncio.get_running_loop()
        # In a thread: forwarding upstream blocks; the engine has its own lock.
        answer = await loop.run_in_executor(
            None, self.engine.handle, scope["method"], scope["path"], bytes(body), headers
        )
        await send(
            {
                "type": "http.response.start",
                "status": answer.status,
                "headers": [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers],
            }
        )
        chunks = iter_chunks(answer)
        eager = isinstance(answer.chunks, (list, tuple))
        while True:
            item = next(chunks, _END) if eager else await loop.run_in_executor(None, _next, chunks)
            if item is _END:
                break
            assert isinstance(item, tuple)
            delay, chunk = item
            if delay:
                await asyncio.sleep(delay)
            await send({"type": "http.response.body", "body": chunk, "more_body": True})
        await send({"type": "http.response.body", "body": b"", "more_body": False})


def _next(chunks: Iterator[tuple[float, bytes]]) -> object:
    return next(chunks, _END)


#: Request headers not passed upstream (hop-by-hop, or set again by the client library).
_DROP = frozenset(
    {"host", "content-length", "connection", "accept-encoding", "transfer-encoding", "keep-alive"}
)
#: Upstream response headers not passed back (the server frames the body itself).
_DROP_BACK = frozenset({"content-length", "connection", "transfer-encoding", "keep-alive"})


def upstream(
    base_url: str, timeout: float = 600
) -> Callable[[str, bytes, Mapping[str, str]], Answer]:
    """A forwarder for ``--on-divergence live``: the request goes to ``base_url`` as it came.

    ``base_url`` may end in ``/v1`` or not; the response streams back as it arrives.
    """
    base = base_url.rstrip("/")

    def forward(path: str, body: bytes, headers: Mapping[str, str]) -> Answer:
        target = base + (path[3:] if base.endswith("/v1") and path.startswith("/v1/") else path)
        sent = {k: v for k, v in headers.items() if k.lower() not in _DROP}
        request = urllib.request.Request(target, data=body, headers=sent, method="POST")
        try:
            response = urllib.request.urlopen(request, timeout=timeout)
        except urllib.error.HTTPError as err:
            response = err
        except OSError as exc:
            return error_answer(502, "upstream_error", f"upstream {target}: {exc}")
        back = [(k.lower(), v) for k, v in response.headers.items() if k.lower() not in _DROP_BACK]
        back.append(("x-otel-replay-forwarded", target))

        def body_chunks() -> Iterator[bytes]:
            with response:
                while True:
                    chunk = response.read1(65536) if hasattr(response, "read1") else b""
                    if not chunk:
                        break
                    yield chunk

        return Answer(int(response.status), back, body_chunks())

    return forward


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def base_url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


#: How long a stopping server lets requests in flight finish before closing connections.
GRACEFUL_SHUTDOWN_S = 1


#: Where ``--mcp`` serves the recorded tools (Streamable HTTP).
MCP_PATH = "/mcp"


def run_server(engine: ReplayEngine, sock: socket.socket, mcp: Any = None) -> None:
    """Serve until interrupted (uvicorn handles SIGINT and SIGTERM); ``mcp``: see ReplayApp."""
    import uvicorn

    config = uvicorn.Config(
        ReplayApp(engine, mcp),
        log_level="warning",
        lifespan="off" if mcp is None else "on",
        access_log=False,
        # Stopped, it does not wait out clients' idle keep-alive connections (5 s each).
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )
    uvicorn.Server(config).run(sockets=[sock])


#: How long a background server may take to start listening.
START_TIMEOUT_S = 10


class BackgroundServer:
    """The engine served on a loopback port from a thread: a replay session's ``base_url``.

    For agents whose model client takes a base URL and nothing else (most
    framework model classes): the client talks HTTP to this process.
    """

    def __init__(self, engine: ReplayEngine, host: str = "127.0.0.1") -> None:
        import uvicorn

        self.sock = bind(host, 0)
        self.url = base_url(self.sock)
        config = uvicorn.Config(
            ReplayApp(engine),
            log_level="warning",
            lifespan="off",
            access_log=False,
            timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": [self.sock]},
            name="otel-replay-serve",
            daemon=True,
        )

    def start(self) -> str:
        """Start serving; the base URL (``http://127.0.0.1:PORT``)."""
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(f"the replay server on {self.url} did not start")
            time.sleep(0.005)
        return self.url

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(GRACEFUL_SHUTDOWN_S + 5)
        self.sock.close()
