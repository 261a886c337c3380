"""``otel-replay serve``: the replay engine over HTTP.

The engine is wrapped in a plain ASGI application (no framework) and served
by uvicorn: HTTP/1.1 keep-alive, chunked streaming and concurrent
connections come from a maintained server instead of hand-written socket
code.  uvicorn is imported only when a server starts.

The server holds under abuse (see :class:`ServerLimits`): a request body
past a size limit gets 413 unread, a client that sends its headers or body
too slowly is cut off, idle keep-alive connections are closed, forwarding
upstream (``--on-divergence live``) runs with timeouts on threads of its own
and a bounded number of calls in flight (503 past it), so a stalled
upstream never holds up requests the recording answers, and the engine
keeps a bounded number of conversations.

A web page cannot use it (see :class:`RequestGate`): a request whose
``Host`` is not a loopback name (or one allowed) gets 421, so DNS
rebinding finds nothing; one whose ``Origin`` is another site's gets 403;
and a POST must say it carries JSON (415 otherwise), so a page's form or
``text/plain`` "simple request", which a browser sends with no CORS
preflight, is never served.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import socket
import threading
import time
import types
from collections.abc import (
    Awaitable,
    Callable,
    Coroutine,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    MutableMapping,
)
from typing import Any, Literal

from ..engine import Answer, ReplayEngine, error_answer, iter_chunks
from ..server_limits import DEFAULT_LIMITS, ServerLimits

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_END = object()


class ReplayApp:
    """An ASGI application answering every request with the engine.

    ``mcp``: an MCP server's ASGI application (see :mod:`.mcp_server`), which
    answers ``/mcp`` and owns the lifespan.  ``limits``: see :class:`ServerLimits`.
    ``hosts``: names a request's ``Host`` may give besides the loopback ones
    (see :class:`RequestGate`).
    """

    def __init__(
        self,
        engine: ReplayEngine,
        mcp: Any = None,
        limits: ServerLimits = DEFAULT_LIMITS,
        hosts: Iterable[str] = (),
    ) -> None:
        self.engine = engine
        self.mcp = mcp
        self.limits = limits
        self.gate = RequestGate(hosts)
        # Our own threads: the loop's default pool is small (cores + 4), and a few
        # stalled upstream calls would take all of it.  Forwarding holds at most
        # max_upstream of these; the rest always answer from the recording.
        self._pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=limits.max_upstream + 16, thread_name_prefix="otel-replay-serve"
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            if self.mcp is not None:
                await self.mcp(scope, receive, send)
                return
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        raw = scope["headers"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in raw}
        refused = self.gate.refuse(scope["method"], headers)
        if refused is None and len(headers) < len(raw):  # a header given twice
            refused = self.gate.repeated(raw)
        if refused is not None:
            await _send_whole(send, refused)
            return
        if self.mcp is not None and scope["path"].rstrip("/") == MCP_PATH:
            await self.mcp(scope, receive, send)  # which checks Host and Origin again
            return
        body = await self._body(receive, headers)
        if isinstance(body, Answer):
            await _send_whole(send, body)
            return
        loop = asyncio.get_running_loop()
        if self.engine.forward is None:
            # Answered from the recording alone: quick, and a hop to a thread and back
            # would cost more than the answer (a third of a call).
            answer = self.engine.handle(scope["method"], scope["path"], body, headers)
        else:  # may wait on the upstream: on a thread of our own
            answer = await loop.run_in_executor(
                self._pool, self.engine.handle, scope["method"], scope["path"], body, headers
            )
        headers_out = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers]
        whole = answer.chunks
        eager = isinstance(whole, (list, tuple))
        if answer.cut:
            # A recorded call that failed so: the answer begun, then the connection closed
            # (an ASGI app that returns with the body unfinished has its connection closed).
            # The body's length is promised, one byte past what is sent, and the close
            # announced: a client reads an answer shorter than its length and raises it, as
            # it did when the trace was recorded (which holds no retry of it).  A close it
            # was not told of, or inside a chunked body, reads as a lost connection, which
            # some clients retry (the AI SDK's: a socket error is retryable, a body shorter
            # than its length is not).
            sent = list(answer.chunks)
            promised = str(sum(len(c) for c in sent) + 1).encode("ascii")
            headers_out += [(b"content-length", promised), (b"connection", b"close")]
            await send(
                {"type": "http.response.start", "status": answer.status, "headers": headers_out}
            )
            for chunk in sent:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            return
        if isinstance(whole, (list, tuple)) and len(whole) == 1 and not answer.delays:
            # One chunk (a JSON answer): sent whole with its length, in one message, not
            # as a chunked body and an empty last chunk (a write and a send fewer).
            (data,) = whole
            headers_out.append((b"content-length", str(len(data)).encode("ascii")))
            await send(
                {"type": "http.response.start", "status": answer.status, "headers": headers_out}
            )
            await send({"type": "http.response.body", "body": data})
            return
        await send({"type": "http.response.start", "status": answer.status, "headers": headers_out})
        chunks = iter_chunks(answer)
        try:
            while True:
                item = (
                    next(chunks, _END)
                    if eager
                    else await loop.run_in_executor(self._pool, _next, chunks)
                )
                if item is _END:
                    break
                assert isinstance(item, tuple)
                delay, chunk = item
                if delay:
                    await asyncio.sleep(delay)
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            close = getattr(answer.chunks, "close", None)
            if close is not None:  # a forwarded answer cut short frees its upstream call
                await loop.run_in_executor(self._pool, close)

    async def _body(self, receive: Receive, headers: Mapping[str, str]) -> bytes | Answer:
        """The request body, or the answer refusing it (too large, too slow)."""
        limit = self.limits.max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return _too_large(limit)
        body = bytearray()
        while True:
            message = await _within(receive, self.limits.body_timeout)
            if message is None:
                return error_answer(
                    408, "request_timeout", f"no body for {self.limits.body_timeout} s"
                )
            if message["type"] == "http.disconnect":
                return error_answer(400, "invalid_request_error", "the client went away")
            body.extend(message.get("body", b""))
            if len(body) > limit:
                return _too_large(limit)
            if not message.get("more_body"):
                return bytes(body)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


#: Host names every server answers to (with any port): the loopback interface's.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")

#: ``Content-Type`` values told at once (others are parsed: see :meth:`RequestGate.json_type`).
_JSON_TYPES = frozenset(
    {"application/json", "application/json; charset=utf-8", "application/json;charset=utf-8"}
)


def host_name(name: str) -> str:
    """A host name as a ``Host`` header spells it: lower case, an IPv6 address in brackets."""
    name = name.strip().lower()
    return f"[{name}]" if ":" in name and not name.startswith("[") else name


#: The headers :class:`RequestGate` reads: each may be given once.
_GATED = frozenset({b"host", b"origin", b"content-type"})


class RequestGate:
    """Who may use the server: the requests refused before their body is read.

    A browser visiting any web page can be made to send requests here.  By DNS
    rebinding, a page of ``evil.example`` gets that name to resolve to
    127.0.0.1 and its requests then carry ``Host: evil.example:PORT``: so a
    ``Host`` must be a loopback name or one of ``hosts`` (any port; the
    address the server listens on is one of them), else 421.  A page that
    posts to ``http://127.0.0.1:PORT`` directly sends its own ``Origin``: an
    ``Origin`` whose host is not one of those names gets 403 (SDK clients
    send none).  And a POST must carry JSON (``application/json``, with any
    parameters, or a ``+json`` type), else 415: the types a page may send
    without a CORS preflight (``text/plain``, forms) are never served, and a
    preflight gets no CORS answer, so no page can send JSON here either.
    """

    def __init__(self, hosts: Iterable[str] = ()) -> None:
        names = [*LOOPBACK_HOSTS, *(host_name(h) for h in hosts if h.strip())]
        self.names = tuple(dict.fromkeys(names))
        self._names = frozenset(self.names)

    def host(self, value: str) -> bool:
        """Whether a ``Host`` value names this server (``NAME`` or ``NAME:PORT``)."""
        if value in self._names:
            return True
        name, colon, port = value.rpartition(":")
        if colon and port.isdigit() and name in self._names:
            return True
        lowered = value.lower()  # names are case-insensitive; most clients send lower case
        return lowered != value and self.host(lowered)

    def origin(self, value: str) -> bool:
        """Whether an ``Origin`` (``http://NAME[:PORT]``) is a page of this server's names."""
        scheme, sep, rest = value.partition("://")
        return bool(sep) and scheme.lower() in ("http", "https") and self.host(rest)

    @staticmethod
    def json_type(value: str) -> bool:
        """Whether a ``Content-Type`` says JSON: ``application/json`` or ``TYPE/NAME+json``."""
        if value in _JSON_TYPES:
            return True
        media = value.partition(";")[0].strip().lower()
        return media == "application/json" or ("/" in media and media.endswith("+json"))

    @staticmethod
    def repeated(raw: Iterable[tuple[bytes, bytes]]) -> Answer | None:
        """A 400 for a request that gives a header the gate reads more than once.

        The gate reads one value of each; a second ``Host``, ``Origin`` or
        ``Content-Type`` could say something else to what reads the request after it.
        """
        seen: set[bytes] = set()
        for key, _ in raw:
            name = key.lower()
            if name in _GATED and name in seen:
                return error_answer(
                    400, "invalid_request_error", f"the {name.decode()} header is given twice"
                )
            seen.add(name)
        return None

    def refuse(self, method: str, headers: Mapping[str, str]) -> Answer | None:
        """The answer refusing a request (``headers``: lower-case names), or None to serve it."""
        host = headers.get("host")
        if host is None or not self.host(host):
            named = "no Host" if host is None else f"Host {host!r}"
            return error_answer(
                421,
                "misdirected_request",
                f"{named}: this server answers to {', '.join(self.names)} "
                "(otel-replay serve --allow-host NAME adds a name)",
            )
        origin = headers.get("origin")
        if origin is not None and not self.origin(origin):
            return error_answer(
                403, "forbidden", f"requests from web pages of {origin!r} are not served"
            )
        if method == "POST" and not self.json_type(headers.get("content-type", "")):
            return error_answer(
                415,
                "unsupported_media_type",
                f"the body must be sent as application/json, not "
                f"{headers.get('content-type', 'without a Content-Type')!r}",
            )
        return None


def _too_large(limit: int) -> Answer:
    return error_answer(413, "request_too_large", f"the request body is over {limit} bytes")


async def _send_whole(send: Send, answer: Answer) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in answer.headers]
    # A refused request's body may still be on its way: the connection is not reused.
    headers.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": b"".join(answer.chunks)})


async def _within(receive: Receive, timeout: float) -> MutableMapping[str, Any] | None:
    """The next message ``receive`` gives within ``timeout`` seconds, or None.

    ``asyncio.wait_for`` would run ``receive`` as a task of its own: a task
    made and scheduled, and a turn of the event loop, on every request, though
    the body has nearly always come with the headers.  Here the request's own
    task waits, and a timer cancels it if the body is too slow; a ``receive``
    that has its message at once (the body came with the headers) is not timed.
    """
    pending = receive()
    if isinstance(pending, Coroutine):
        try:
            waits_on = pending.send(None)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]
        pending = _resume(pending, waits_on)
    task = asyncio.current_task()
    assert task is not None
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        task.cancel()

    timer = asyncio.get_running_loop().call_later(timeout, expire)
    try:
        return await pending
    except asyncio.CancelledError:
        if not expired:
            raise  # cancelled from outside: not ours to answer
        uncancel = getattr(task, "uncancel", None)  # Python 3.11+: the cancel is handled
        if uncancel is not None:
            uncancel()
        return None
    finally:
        timer.cancel()


@types.coroutine
def _resume(coro: Coroutine[Any, Any, Any], waits_on: Any) -> Generator[Any, Any, Any]:
    """What ``await coro`` goes on doing once ``coro`` first waits (on ``waits_on``):
    what the task sends or throws in goes to ``coro``, what it waits on to the task."""
    while True:
        try:
            sent = yield waits_on
        except GeneratorExit:
            coro.close()
            raise
        except BaseException as exc:  # a cancel, thrown into the coroutine as await would
            try:
                waits_on = coro.throw(exc)
            except StopIteration as done:
                return done.value
        else:
            try:
                waits_on = coro.send(sent)
            except StopIteration as done:
                return done.value


def _next(chunks: Iterator[tuple[float, bytes]]) -> object:
    return next(chunks, _END)


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


#: Where ``--mcp`` serves the recorded tools (Streamable HTTP).
MCP_PATH = "/mcp"


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
