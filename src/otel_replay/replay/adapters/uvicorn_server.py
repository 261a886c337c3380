"""The replay application served by uvicorn: on a socket in the foreground
(``otel-replay serve``), or from a thread for an in-process replay
(:class:`BackgroundServer`), its connections guarded against slow headers.
uvicorn is imported only when a server starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any, Literal

from ..engine import ReplayEngine
from ..server_limits import DEFAULT_LIMITS, ServerLimits
from .server import ReplayApp


def bind(host: str, port: int) -> socket.socket:
    """A listening socket (port 0: any free port)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY on accepted connections only
    # then, and without it each answer's headers and body leave ~40 ms apart.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
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


def _config(app: ReplayApp, limits: ServerLimits, lifespan: Literal["on", "off"]) -> Any:
    # lazy: only serve needs the ASGI server
    import uvicorn

    return uvicorn.Config(
        app,
        log_level="warning",
        lifespan=lifespan,
        # HTTP alone is served (MCP too is plain HTTP): no websockets implementation is
        # imported at start (a tenth of a second of CPU).
        ws="none",
        access_log=False,
        # No X-Forwarded-* rewriting of the client's address and scheme, which nothing
        # here reads: uvicorn's middleware for it ran on every request.
        proxy_headers=False,
        http=_guarded_protocol(limits.header_timeout),
        timeout_keep_alive=limits.keep_alive,
        limit_concurrency=limits.max_connections,
        # Stopped, it does not wait out clients' idle keep-alive connections.
        timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S,
    )


def _guarded_protocol(header_timeout: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request headers are too slow.

    uvicorn times out idle keep-alive connections, but not a connection that
    sends nothing or half its headers: a few hundred of those would hold
    the server's connections for good.
    """
    # lazy: only serve needs the ASGI server
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None
        #: When the connection began to wait for a request's headers (loop time).
        _idle_since = 0.0

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._await_headers()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._await_headers()  # the next request's, on this kept-alive connection

        def connection_lost(self, exc: Exception | None) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
            super().connection_lost(exc)

        def _await_headers(self) -> None:
            # One timer a connection, not one a request (a timer made and cancelled on
            # every call of a kept-alive client): when it fires, it looks again.
            self._idle_since = self.loop.time()
            if self._header_timer is None:
                due = self._idle_since + header_timeout
                self._header_timer = self.loop.call_at(due, self._headers_due)

        def _headers_due(self) -> None:
            self._header_timer = None
            if self.conn.their_state is not h11.IDLE or self.transport.is_closing():
                return  # the headers are in: the timer is set again when it is answered
            due = self._idle_since + header_timeout
            if self.loop.time() < due:  # it went on waiting for a later request's
                self._header_timer = self.loop.call_at(due, self._headers_due)
            else:
                self.transport.close()

    return GuardedH11Protocol


def run_server(
    engine: ReplayEngine,
    sock: socket.socket,
    mcp: Any = None,
    limits: ServerLimits = DEFAULT_LIMITS,
    hosts: Iterable[str] = (),
    ready: Callable[[], None] | None = None,
) -> None:
    """Serve until interrupted (uvicorn handles SIGINT and SIGTERM); ``mcp``, ``hosts``: see
    ReplayApp (the address ``sock`` listens on is allowed as a ``Host`` too).

    ``ready`` is called once the server is set up (uvicorn imported, its
    configuration loaded), right before it serves: a client told of the
    server then has its first call answered at once, not after the start-up.
    """
    # lazy: only serve needs the ASGI server
    import uvicorn

    app = ReplayApp(engine, mcp, limits, [sock.getsockname()[0], *hosts])
    try:
        config = _config(app, limits, "off" if mcp is None else "on")
        config.load()  # what the server would do first (it loads a configuration once)
        if ready is not None:
            ready()
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        app.close()


#: Loop turns a stopping server gives a socket it accepted to become a connection (it
#: takes two: the transport's task, then ``connection_made``).
_SETTLING_TURNS = 3


@functools.cache
def _prompt_server() -> Any:
    """uvicorn's server, stopping as soon as it is told to: uvicorn looks for the word to
    stop once a tenth of a second, and an in-process replay stops a server per run (a
    cohort of a thousand runs waited a hundred seconds for nothing)."""
    # lazy: only serve needs the ASGI server
    import uvicorn

    class PromptServer(uvicorn.Server):
        _loop: asyncio.AbstractEventLoop | None = None
        _woken: asyncio.Event | None = None

        async def main_loop(self) -> None:
            # uvicorn's own loop, but its tenth-of-a-second pause ends early when woken.
            self._woken = asyncio.Event()
            self._loop = asyncio.get_running_loop()
            counter = 0
            while not await self.on_tick(counter):
                counter = (counter + 1) % 864000
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._woken.wait(), 0.1)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            # uvicorn's, but for its fixed pause of a tenth of a second after telling open
            # connections to close: the loop turns only until they have.
            await self._stop_accepting()
            for server in self.servers:
                server.close()
            for sock in sockets or []:
                sock.close()
            for connection in list(self.server_state.connections):
                connection.shutdown()
            for _ in range(100):
                if not self.server_state.connections:
                    break
                await asyncio.sleep(0.001)
            try:
                await asyncio.wait_for(
                    self._wait_tasks_to_complete(), self.config.timeout_graceful_shutdown
                )
            except asyncio.TimeoutError:
                for task in self.server_state.tasks:
                    task.cancel()
            if not self.force_exit:
                await self.lifespan.shutdown()

        async def _stop_accepting(self) -> None:
            # A socket asyncio accepted in the turn its server closes is left half made and
            # open until it is garbage (the closed server refuses to attach its transport),
            # so a client waits on it: the listeners stop being read first, and the loop
            # turns until what they accepted are connections, told to close with the rest.
            loop = asyncio.get_running_loop()
            if not isinstance(loop, asyncio.selector_events.BaseSelectorEventLoop):
                return  # (uvloop accepts in libuv, where this race is not)
            for server in self.servers:
                for sock in server.sockets:
                    loop.remove_reader(sock.fileno())
            for _ in range(_SETTLING_TURNS):
                await asyncio.sleep(0)

        def wake(self) -> None:
            """From any thread: look at ``should_exit`` now."""
            loop, woken = self._loop, self._woken
            if loop is not None and woken is not None:
                with contextlib.suppress(RuntimeError):  # (its loop already closed)
                    loop.call_soon_threadsafe(woken.set)

    return PromptServer


#: How long a background server may take to start listening.
START_TIMEOUT_S = 10


class BackgroundServer:
    """The engine served on a loopback port from a thread: a replay session's ``base_url``.

    For agents whose model client takes a base URL and nothing else (most
    framework model classes): the client talks HTTP to this process.
    """

    def __init__(
        self, engine: ReplayEngine, host: str = "127.0.0.1", limits: ServerLimits = DEFAULT_LIMITS
    ) -> None:
        self.sock = bind(host, 0)
        self.url = base_url(self.sock)
        self._app = ReplayApp(engine, limits=limits, hosts=[host])
        self._server = _prompt_server()(_config(self._app, limits, "off"))
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
        self._server.wake()
        self._thread.join(GRACEFUL_SHUTDOWN_S + 5)
        self.sock.close()
        self._app.close()
