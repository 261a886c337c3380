"""``otel-replay serve``: the replay engine over HTTP.

The engine is wrapped in a plain ASGI application (no framework) and served
by uvicorn (:mod:`.uvicorn_server`): HTTP/1.1 keep-alive, chunked streaming
and concurrent connections come from a maintained server instead of
hand-written socket code.

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
from typing import Any

from ... import event_stream
from ..engine import Answer, ReplayEngine, error_answer, iter_chunks
from ..server_limits import DEFAULT_LIMITS, ServerLimits

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]

_END = object()


def _broken_off(answer: Answer) -> bool:
    """Whether a cut answer is sent chunked and broken off, not short of a promised length:
    an AWS event stream (Bedrock sends its streams chunked, and botocore reads a body that
    stops short of its length as a whole one; a chunked body broken off it raises)."""
    return any(
        k.lower() == "content-type" and v.startswith(event_stream.CONTENT_TYPE)
        for k, v in answer.headers
    )


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
            # than its length is not); an AWS event stream is broken off (see _broken_off).
            sent = list(answer.chunks)
            if not _broken_off(answer):
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
        body: bytearray | None = None
        while True:
            message = await _within(receive, self.limits.body_timeout)
            if message is None:
                return error_answer(
                    408, "request_timeout", f"no body for {self.limits.body_timeout} s"
                )
            if message["type"] == "http.disconnect":
                return error_answer(400, "invalid_request_error", "the client went away")
            chunk = message.get("body", b"")
            if body is None and not message.get("more_body"):
                # The whole body in one message (nearly every request): not copied.
                return bytes(chunk) if len(chunk) <= limit else _too_large(limit)
            body = bytearray() if body is None else body
            body.extend(chunk)
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
    if isinstance(pending, types.CoroutineType):  # (a coroutine, told without the ABC check)
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


#: Where ``--mcp`` serves the recorded tools (Streamable HTTP).
MCP_PATH = "/mcp"
