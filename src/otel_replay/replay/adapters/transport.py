"""httpx transports that answer model requests from a recording, in-process.

::

    with otel_replay.replay("run.otlp") as session:
        http = httpx2.Client(transport=session.transport())
        client = openai.OpenAI(api_key="-", http_client=http)
        aclient = anthropic.AsyncAnthropic(
            api_key="-", http_client=httpx2.AsyncClient(transport=session.async_transport())
        )

They speak what ``otel-replay serve`` speaks (the same engine, so the same
wire formats), but through the session: the session's pinned model and
cursor, its divergence reporting (a request that does not match raises
:class:`~otel_replay.replay.divergence.ReplayDivergence`), its tool stubs and
clock.  The transports work with ``httpx`` and ``httpx2`` alike: the response
is built with the classes of the library the request came from.
"""

from __future__ import annotations

import sys
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from ..engine import Answer, ReplayEngine, iter_chunks


def _library(request: Any) -> Any:
    """The httpx-like module ``request`` belongs to (``httpx``, ``httpx2``)."""
    return sys.modules[type(request).__module__.split(".", 1)[0]]


def _request_parts(request: Any) -> tuple[str, str, dict[str, str]]:
    headers = {k.lower(): v for k, v in request.headers.items()}
    return str(request.method), str(request.url.path), headers


def _streamed(answer: Answer) -> bool:
    """Chunk by chunk (recorded timing, or recorded bytes whose chunking is part of them, or
    a body cut short)."""
    if answer.delays is not None or answer.cut:
        return True
    if not isinstance(answer.chunks, list):
        answer.chunks = list(answer.chunks)
    return len(answer.chunks) > 1 and ("x-otel-replay-body", "recorded") in answer.headers


def _cut(answer: Answer, library: Any) -> Exception:
    """What the client's library raises where a connection closes inside a body: what an
    answer cut short (a recorded call that failed so) reads as."""
    error: Exception = library.RemoteProtocolError(
        "peer closed connection without sending complete message body (a recorded call "
        f"that failed so: {answer.step.label() if answer.step else 'a model call'})"
    )
    return error


def _sync_body(answer: Answer, library: Any) -> Iterator[bytes]:
    for delay, chunk in iter_chunks(answer):
        if delay:
            time.sleep(delay)
        yield chunk
    if answer.cut:
        raise _cut(answer, library)


async def _async_body(answer: Answer, library: Any) -> AsyncIterator[bytes]:
    # lazy: only an async client pays for asyncio
    import asyncio

    for delay, chunk in iter_chunks(answer):
        if delay:
            await asyncio.sleep(delay)
        yield chunk
    if answer.cut:
        raise _cut(answer, library)


class ReplayTransport:
    """A synchronous httpx transport over a :class:`ReplayEngine`."""

    def __init__(self, engine: ReplayEngine) -> None:
        self.engine = engine

    def handle_request(self, request: Any) -> Any:
        method, path, headers = _request_parts(request)
        answer = self.engine.handle(method, path, request.read(), headers)
        library = _library(request)
        content = _sync_body(answer, library) if _streamed(answer) else b"".join(answer.chunks)
        return library.Response(
            answer.status, headers=answer.headers, content=content, request=request
        )

    def close(self) -> None:
        pass

    def __enter__(self) -> ReplayTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncReplayTransport:
    """An asynchronous httpx transport over a :class:`ReplayEngine`."""

    def __init__(self, engine: ReplayEngine) -> None:
        self.engine = engine

    async def handle_async_request(self, request: Any) -> Any:
        method, path, headers = _request_parts(request)
        body = await request.aread()
        answer = self.engine.handle(method, path, body, headers)
        library = _library(request)
        content = _async_body(answer, library) if _streamed(answer) else b"".join(answer.chunks)
        return library.Response(
            answer.status, headers=answer.headers, content=content, request=request
        )

    async def aclose(self) -> None:
        pass

    async def __aenter__(self) -> AsyncReplayTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
