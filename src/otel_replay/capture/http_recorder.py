"""Byte-exact model I/O: an httpx transport wrapper that records the raw HTTP exchange.

::

    http = httpx2.Client(transport=otel_replay.RecordingTransport(httpx2.HTTPTransport()))
    client = openai.OpenAI(http_client=http)
    aclient = anthropic.AsyncAnthropic(
        http_client=httpx2.AsyncClient(transport=otel_replay.AsyncRecordingTransport(
            httpx2.AsyncHTTPTransport()))
    )

Works with ``httpx`` and ``httpx2`` clients (anything with their transport
API), sync and async.  Each request's body and the response's body go on the
current model span (a span carrying ``gen_ai.*`` attributes: our
``model_call``, or an instrumentation's span) as byte-exact payloads (digest,
exact bytes, blob beside the trace file when large), with, for every
response, the size of each chunk the server sent and its offset in ms from
the request: an SSE stream is kept with its byte boundaries and timing.
With no model span current, the recorder makes a ``chat <model>`` span of its
own with the request (and a JSON response) in GenAI terms.

Headers are recorded after redaction: ``authorization``, api keys, cookies
and anything else the redactor calls secret never reach a span.  The
response is recorded as the client reads it (when the stream ends or is
closed), so streaming stays streaming.

Bodies are recorded as the client reads them: decoded per their
``content-encoding`` (gzip, deflate, zstd, br when a Brotli library is
installed, and codings stacked one on another; httpx asks for gzip by
default), then scrubbed.  The recorded headers then name no coding, the
chunk sizes are of the decoded chunks, and ``otel_replay.http.*.decoded_from``
says what the body came in.  A secret must be hidden in the bytes written,
not only in what is derived from them: a body is left out, and why said in
``otel_replay.http.*.body_dropped``, when it cannot be decoded, or when its
text, read as the client reads it (a JSON document; a stream's events with
the text of their deltas joined), shows a secret its scrubbed bytes still
hold (a key split across streamed deltas, a key spelled with JSON escapes).
What a body is, is told from its bytes, not its content type (which may be
missing, ``text/plain`` or ``application/x-ndjson``): server-sent events,
JSON lines and the Vercel AI SDK's data stream are each read as a stream, and
lines none of them reads as their raw text; a body that cannot be read with
certainty is left out.  Replay then answers from the recorded messages.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind

from .. import attributes as A
from ..dialects import bodies
from ..payload import codec as payload
from ..redaction import redactor
from . import content_coding
from .body_text import shows_secret
from .content import capture_content
from .model_call import tell_agent
from .spans import payload_attributes, tracer, warn_once

REQUEST_BODY = A.HTTP_REQUEST_BODY
RESPONSE_BODY = A.HTTP_RESPONSE_BODY
REQUEST_HEADERS = A.HTTP_REQUEST_HEADERS
RESPONSE_HEADERS = A.HTTP_RESPONSE_HEADERS
CHUNK_SIZES = A.HTTP_CHUNK_SIZES
CHUNK_OFFSETS_MS = A.HTTP_CHUNK_OFFSETS_MS
#: The ``content-encoding`` a recorded body was decoded from (the body and headers
#: recorded are the decoded ones).
REQUEST_DECODED_FROM = "otel_replay.http.request.decoded_from"
RESPONSE_DECODED_FROM = "otel_replay.http.response.decoded_from"
#: Why a body was left out of the recording.
REQUEST_BODY_DROPPED = "otel_replay.http.request.body_dropped"
RESPONSE_BODY_DROPPED = "otel_replay.http.response.body_dropped"

#: ``server.port`` where the URL names none.
_DEFAULT_PORTS = {"https": 443, "http": 80}
_PROVIDERS = {"/v1/messages": "anthropic"}
#: Spans of these operations are never a model call's own span.
_NOT_MODEL_OPERATIONS = A.AGENT_OPERATIONS | {A.OP_EXECUTE_TOOL}


def _library(obj: Any) -> Any:
    """The httpx-like module ``obj`` belongs to (``httpx``, ``httpx2``)."""
    return sys.modules[type(obj).__module__.split(".", 1)[0]]


#: Headers that describe the bytes on the wire, not a decoded body.
_WIRE_HEADERS = ("content-encoding", "content-length")


def _headers(headers: Any, hidden: list[str], key: str, decoded: bool = False) -> str:
    """Headers as a JSON object (lower-case names, repeated names joined), secrets redacted;
    of a ``decoded`` body: without the coding and length of the bytes on the wire."""
    out: dict[str, str] = {}
    for name, value in headers.multi_items():
        name = name.lower()
        if decoded and name in _WIRE_HEADERS:
            continue
        out[name] = f"{out[name]}, {value}" if name in out else value
    clean = redactor().headers(out, key, hidden)
    return json.dumps(clean, sort_keys=True, ensure_ascii=False)


def _is_model_span(span: Span) -> bool:
    """A model call's span with no exchange on it yet: the exchange is recorded there.

    An agent's or a tool's span, or a model span already holding an exchange
    (a client that calls twice), gets a span of its own per exchange.
    """
    if not span.is_recording():
        return False
    attrs = getattr(span, "attributes", None) or {}
    if REQUEST_HEADERS in attrs:
        return False
    operation = attrs.get(A.OPERATION_NAME)
    if operation is not None:
        return operation not in _NOT_MODEL_OPERATIONS
    return A.REQUEST_MODEL in attrs or A.PROVIDER_NAME in attrs


class _Exchange:
    """One request and its response as the client reads it; recorded once, at the end."""

    def __init__(self, request: Any) -> None:
        self.started = time.perf_counter()
        self.request = request
        self.hidden: list[str] = []
        self.sizes: list[int] = []
        self.offsets: list[float] = []
        self.chunks: list[bytes] = []
        self.done = False
        self.lock = threading.Lock()
        self.request_codings = content_coding.codings(request.headers)
        #: The request body as the server decodes it (None: it could not be decoded).
        self.body: bytes | None = bytes(request.content)
        self.body_dropped: str | None = None
        if self.request_codings:
            try:
                self.body = b"".join(content_coding.decoded([self.body], self.request_codings))
            except Exception as exc:
                why = content_coding.cannot_decode(self.request_codings, exc)
                self.body, self.body_dropped = None, why
        current = trace.get_current_span()
        self.own = not _is_model_span(current)
        self.span: Span = self._start_span() if self.own else current
        self.status: int | None = None
        self.response_headers: Any = None
        #: The chunks are the decoded body already (a response read whole before we saw it).
        self.read_decoded = False

    def _start_span(self) -> Span:
        try:
            doc = json.loads(self.body) if self.body else None
        except ValueError:
            doc = None
        model = doc.get("model") if isinstance(doc, dict) else None
        path = self.request.url.path
        span = tracer().start_span(
            f"chat {model}" if isinstance(model, str) else f"{self.request.method} {path}",
            kind=SpanKind.CLIENT,
        )
        if not span.is_recording():
            return span
        provider = next((p for suffix, p in _PROVIDERS.items() if path.endswith(suffix)), "openai")
        attrs: dict[str, Any] = {A.OPERATION_NAME: A.OP_CHAT, A.PROVIDER_NAME: provider}
        tell_agent(provider)
        if isinstance(doc, dict):
            genai = bodies.request(doc)
            for key, value in genai.items():
                if key in (A.INPUT_MESSAGES, A.SYSTEM_INSTRUCTIONS, A.TOOL_DEFINITIONS):
                    if capture_content() or key == A.TOOL_DEFINITIONS:
                        attrs.update(payload_attributes(span, key, value, self.hidden))
                elif isinstance(value, (str, bool, int, float)):
                    attrs[key] = value
        span.set_attributes(attrs)
        return span

    def add(self, chunk: bytes) -> None:
        if chunk:
            self.chunks.append(chunk)
            self.sizes.append(len(chunk))
            self.offsets.append(round((time.perf_counter() - self.started) * 1e3, 3))

    def finish(self) -> None:
        with self.lock:
            if self.done:
                return
            self.done = True
        try:
            self._record()
        except Exception as exc:  # recording must never break the client
            warn_once("http-record", "otel-replay could not record an HTTP exchange: %r", exc)
        finally:
            if self.own:
                self.span.end()

    def _record(self) -> None:
        span = self.span
        if not span.is_recording():
            return
        request = self.request
        content = capture_content()
        chunks, sizes, offsets = self.chunks, self.sizes, self.offsets
        on_wire = content_coding.codings(self.response_headers)
        codings = [] if self.read_decoded else on_wire
        body: bytes | None = b"".join(chunks)
        dropped: str | None = None
        if content and codings:
            try:
                chunks = content_coding.decoded(chunks, codings)
            except Exception as exc:
                body, dropped = None, content_coding.cannot_decode(codings, exc)
            else:
                # Sizes of the decoded chunks; a chunk that decoded to nothing (a gzip
                # header alone) has its bytes arrive with the next.
                kept = [i for i, c in enumerate(chunks) if c]
                body = b"".join(chunks)
                sizes = [len(chunks[i]) for i in kept]
                offsets = [offsets[i] for i in kept]
        decoded = body is not None and bool(on_wire)
        attrs: dict[str, Any] = {
            A.HTTP_METHOD: str(request.method),
            A.URL_PATH: str(request.url.path),
            A.SERVER_ADDRESS: str(request.url.host),
            REQUEST_HEADERS: _headers(
                request.headers,
                self.hidden,
                REQUEST_HEADERS,
                decoded=content and bool(self.request_codings) and self.body is not None,
            ),
            CHUNK_SIZES: sizes,
            CHUNK_OFFSETS_MS: offsets,
        }
        port = request.url.port or _DEFAULT_PORTS.get(request.url.scheme)
        if port:
            attrs[A.SERVER_PORT] = port
        if self.status is not None:
            attrs[A.HTTP_STATUS] = self.status
        if self.response_headers is not None:
            attrs[RESPONSE_HEADERS] = _headers(
                self.response_headers, self.hidden, RESPONSE_HEADERS, decoded=content and decoded
            )
        if content:
            # The bodies are recorded as the client reads them, byte for byte, but for
            # the secrets in them (an api_key field, a token in an answer); the digest
            # is of what is kept.
            self._body(attrs, REQUEST_BODY, self.body, self.body_dropped)
            content_type = (self.response_headers or {}).get("content-type", "")
            self._body(attrs, RESPONSE_BODY, body, dropped, content_type)
            if self.request_codings and self.body is not None:
                attrs[REQUEST_DECODED_FROM] = ", ".join(self.request_codings)
            if decoded:
                attrs[RESPONSE_DECODED_FROM] = ", ".join(on_wire)
        if content and self.status == 200 and body is not None:
            if self.own:
                attrs.update(self._response_genai(span, body, messages=True))
            else:
                # A model_call's span: its record() gives the messages; what only the wire
                # says (usage, the response's id and model, finish reasons) is filled in
                # where the span has none.
                present = getattr(span, "attributes", None) or {}
                said = self._response_genai(span, body, messages=False)
                attrs.update({k: v for k, v in said.items() if k not in present})
        if self.hidden:
            previous = getattr(span, "attributes", {}).get(A.REDACTED) or ()
            attrs[A.REDACTED] = [*previous, *self.hidden]
        span.set_attributes(attrs)

    def _body(
        self,
        attrs: dict[str, Any],
        key: str,
        data: bytes | None,
        dropped: str | None,
        content_type: str = "",
    ) -> None:
        """A body as a payload on ``attrs``, scrubbed; or why it is left out.
        ``content_type`` is the body's own (an AWS event stream is read as its frames)."""
        if data is not None:
            clean = redactor().data(data)
            if clean is not data:
                self.hidden.append(key)
            if shows_secret(data, clean, content_type):
                dropped = (
                    "its text shows a secret its bytes still hold (split across streamed "
                    "parts, spelled with escapes or in base64), or it could not be read "
                    "for certain (an event-stream frame that breaks the format)"
                )
            else:
                attrs.update(_exact(self.span, key, clean))
                return
        if dropped is not None:
            warn_once("http-body-dropped", "otel-replay left an HTTP body out: %s", dropped)
            attrs[REQUEST_BODY_DROPPED if key == REQUEST_BODY else RESPONSE_BODY_DROPPED] = dropped
            if key not in self.hidden:
                self.hidden.append(key)

    def _response_genai(self, span: Span, body: bytes, *, messages: bool) -> dict[str, Any]:
        content_type = (self.response_headers or {}).get("content-type", "")
        if "text/event-stream" in content_type:
            folded = bodies.sse_response(body)  # the stream as the JSON answer it adds up to
            if folded is None:
                return {}
            genai = bodies.response(folded)
        elif "json" in content_type:
            try:
                genai = bodies.response(json.loads(body))
            except ValueError:
                return {}
        else:
            return {}
        attrs: dict[str, Any] = {}
        for key, value in genai.items():
            if key == A.OUTPUT_MESSAGES:
                if messages:
                    attrs.update(payload_attributes(span, key, value, self.hidden))
            elif isinstance(value, (str, bool, int, float)) or _strings(value):
                attrs[key] = value
        return attrs


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _exact(span: Span, key: str, clean: bytes) -> dict[str, Any]:
    """A scrubbed body as a payload: text when it is UTF-8 (the display is then the
    exact bytes, kept once), else bytes; the digest is of the bytes either way."""
    try:
        value: str | bytes = clean.decode("utf-8")
    except UnicodeDecodeError:
        value = clean
    return payload_attributes(span, key, value, [], encoded=payload.encode(value))


def _stream_classes(lib: Any) -> tuple[type, type]:
    """Byte-stream wrappers that subclass the library's own stream base classes."""
    cached = _STREAMS.get(lib.__name__)
    if cached is not None:
        return cached

    class RecordingStream(lib.SyncByteStream):  # type: ignore[misc]
        def __init__(self, wrapped: Any, exchange: _Exchange) -> None:
            self._wrapped = wrapped
            self._exchange = exchange

        def __iter__(self) -> Iterator[bytes]:
            for chunk in self._wrapped:
                self._exchange.add(chunk)
                yield chunk
            self._exchange.finish()

        def close(self) -> None:
            try:
                self._wrapped.close()
            finally:
                self._exchange.finish()

    class AsyncRecordingStream(lib.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, wrapped: Any, exchange: _Exchange) -> None:
            self._wrapped = wrapped
            self._exchange = exchange

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for chunk in self._wrapped:
                self._exchange.add(chunk)
                yield chunk
            self._exchange.finish()

        async def aclose(self) -> None:
            try:
                await self._wrapped.aclose()
            finally:
                self._exchange.finish()

    _STREAMS[lib.__name__] = (RecordingStream, AsyncRecordingStream)
    return RecordingStream, AsyncRecordingStream


_STREAMS: dict[str, tuple[type, type]] = {}


def _wrap(response: Any, exchange: _Exchange, asynchronous: bool) -> Any:
    exchange.status = int(response.status_code)
    exchange.response_headers = response.headers
    content = getattr(response, "_content", None)
    if isinstance(content, bytes):
        # Read already (a transport that builds whole responses, as mock transports do),
        # and decoded: the client will not read the stream again, so the exchange is
        # complete now.
        exchange.read_decoded = True
        exchange.add(content)
        exchange.finish()
        return response
    sync_cls, async_cls = _stream_classes(_library(response))
    cls = async_cls if asynchronous else sync_cls
    response.stream = cls(response.stream, exchange)
    return response


class RecordingTransport:
    """A synchronous httpx / httpx2 transport that records each exchange (see module doc)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    def handle_request(self, request: Any) -> Any:
        request.read()
        exchange = _Exchange(request)
        try:
            response = self.wrapped.handle_request(request)
        except BaseException:
            exchange.finish()
            raise
        return _wrap(response, exchange, asynchronous=False)

    def close(self) -> None:
        self.wrapped.close()

    def __enter__(self) -> RecordingTransport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncRecordingTransport:
    """An asynchronous httpx / httpx2 transport that records each exchange (see module doc)."""

    def __init__(self, wrapped: Any) -> None:
        self.wrapped = wrapped

    async def handle_async_request(self, request: Any) -> Any:
        await request.aread()
        exchange = _Exchange(request)
        try:
            response = await self.wrapped.handle_async_request(request)
        except BaseException:
            exchange.finish()
            raise
        return _wrap(response, exchange, asynchronous=True)

    async def aclose(self) -> None:
        await self.wrapped.aclose()

    async def __aenter__(self) -> AsyncRecordingTransport:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def recording_transport(wrapped: Any) -> RecordingTransport | AsyncRecordingTransport:
    """The recording wrapper that fits ``wrapped`` (sync or async transport)."""
    if hasattr(wrapped, "handle_async_request"):
        return AsyncRecordingTransport(wrapped)
    return RecordingTransport(wrapped)


__all__ = [
    "CHUNK_OFFSETS_MS",
    "CHUNK_SIZES",
    "REQUEST_BODY",
    "REQUEST_HEADERS",
    "RESPONSE_BODY",
    "RESPONSE_HEADERS",
    "AsyncRecordingTransport",
    "RecordingTransport",
    "recording_transport",
]
