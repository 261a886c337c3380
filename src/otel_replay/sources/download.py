"""An http(s) URL's answer, fetched with a deadline and a size cap: the server may be anyone's.

The whole exchange (connecting, the status line, headers and body) must be
over within :data:`~.limits.URL_TIMEOUT`: a timer shuts the connection down
when it is not, whatever the read is blocked on, so a server trickling one
byte at a time cannot hold a command.  The body goes to a temporary file
(in memory while small) and may hold no more than a cap.  Every failure is
one :class:`FormatError` naming the URL (its password and secret query
values hidden) and the bytes received so far.

Backends behind authentication or multi-tenant (Tempo's ``X-Scope-OrgID``)
get their headers from :data:`OTEL_REPLAY_HTTP_HEADERS` (the OTLP exporters'
format: ``Authorization=Bearer%20abc,X-Scope-OrgID=acme``) and from
:func:`use_headers` (the CLI's ``--header``).  They are sent to the URL's
own origin only: a redirect elsewhere goes without them.  A URL's
``user:password@`` is sent as Basic authentication.  No error repeats
them.  An answer of 429 or 5xx is asked again, :data:`RETRIES` times, after
a growing pause (or the ``Retry-After`` the server asks for, within reason).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import socket
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import IO, Any, Final

from .. import limits, settings
from ..bytes_text import to_base64
from ..otlp.errors import FormatError
from ..settings import OTEL_REPLAY_HTTP_HEADERS as OTEL_REPLAY_HTTP_HEADERS

#: Bytes of an answer kept in memory before it spills to a temporary file.
IN_MEMORY: Final = 16 * limits.MiB
#: What one read of the body asks for.
CHUNK: Final = 1 << 16
#: OTLP/JSON or protobuf, as a backend prefers (Tempo answers protobuf to ``application/protobuf``).
ACCEPT: Final = "application/json, application/protobuf, application/x-protobuf"
#: Answers asked again: too many requests, and the server's own failures.
RETRIED: Final = frozenset({429, 500, 502, 503, 504})
RETRIES: Final = 3
#: The first pause before asking again; each next one doubles.
BACKOFF_SECONDS = 0.5
#: The longest pause a server's ``Retry-After`` may ask for.
MAX_RETRY_AFTER_SECONDS: Final = 30.0

_headers: dict[str, str] = {}


def use_headers(headers: Mapping[str, str] | None) -> None:
    """Send ``headers`` (beside those of :data:`OTEL_REPLAY_HTTP_HEADERS`) with every URL read.

    ``None`` forgets the ones given here.  Names are matched without case.
    """
    _headers.clear()
    for name, value in (headers or {}).items():
        _headers[name.strip().lower()] = value


def headers() -> dict[str, str]:
    """The headers a URL read sends: the environment's, then those of :func:`use_headers`."""
    # lazy: only a request with headers needs it
    from opentelemetry.util.re import parse_env_headers

    found = parse_env_headers(settings.current().http_headers or "", liberal=True)
    return {**found, **_headers}


class _Watchdog:
    """Shuts down the sockets it watches once ``seconds`` have passed, unless stopped first."""

    def __init__(self, seconds: float) -> None:
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._over = False
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def watch(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            if self._over:
                return
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def stop(self) -> bool:
        """Stop watching; whether the deadline had passed (the answer may be cut short)."""
        self._timer.cancel()
        with self._lock:
            self._over = True
            return self.expired


def _shut(sock: socket.socket) -> None:
    # socket.socket's own shutdown, also for an SSL socket: the system call
    # alone, which wakes a read blocked in another thread.
    with contextlib.suppress(OSError):  # closed already
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


class _Watched(http.client.HTTPConnection):
    """A connection whose socket the watchdog shuts down at the deadline."""

    def __init__(self, *args: Any, watchdog: _Watchdog, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._watchdog = watchdog

    def connect(self) -> None:
        super().connect()
        self._watchdog.watch(self.sock)


class _HTTPConnection(_Watched):
    pass


class _HTTPSConnection(_Watched, http.client.HTTPSConnection):
    pass


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, watchdog: _Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> http.client.HTTPResponse:
        watched = functools.partial(_HTTPConnection, watchdog=self.watchdog)
        return super().do_open(watched, req, **kwargs)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, watchdog: _Watchdog) -> None:
        super().__init__()
        self.watchdog = watchdog

    def do_open(self, http_class: Any, req: Any, **kwargs: Any) -> http.client.HTTPResponse:
        watched = functools.partial(_HTTPSConnection, watchdog=self.watchdog)
        return super().do_open(watched, req, **kwargs)


class _SameOrigin(urllib.request.HTTPRedirectHandler):
    """Follows redirects, without our headers once the redirect leaves the URL's origin."""

    def redirect_request(
        self,
        req: Any,
        fp: Any,
        code: int,
        msg: str,
        headers: http.client.HTTPMessage,
        newurl: str,
    ) -> urllib.request.Request | None:
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) != _origin(req.full_url):
            for name in list(new.headers):
                if name.lower() != "accept":
                    del new.headers[name]
        return new


def _without_credentials(url: str) -> tuple[str, dict[str, str]]:
    """``user:password@`` taken out of ``url`` into a Basic ``Authorization`` header
    (a header given too wins), as curl does; urllib would take them for the host."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, {}
    user = urllib.parse.unquote(parts.username)
    password = urllib.parse.unquote(parts.password or "")
    token = to_base64(f"{user}:{password}".encode())
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=host)), {"authorization": f"Basic {token}"}


def _origin(url: str) -> tuple[str, str | None, int | None]:
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, parts.hostname, parts.port


def _announced(response: http.client.HTTPResponse) -> int | None:
    """The body length the headers announce, if they do."""
    if "chunked" in (response.headers.get("Transfer-Encoding") or "").lower():
        return None
    try:
        length = int(response.headers.get("Content-Length") or "")
    except ValueError:
        return None
    return length if length >= 0 else None


class _Again(Exception):
    """An answer worth asking again for (see :data:`RETRIED`), after ``pause`` seconds."""

    def __init__(self, error: FormatError, pause: float | None) -> None:
        super().__init__(str(error))
        self.error = error
        self.pause = pause


def download(
    url: str, accept: str = ACCEPT, cap: limits.Limit = limits.MAX_URL_BYTES
) -> tuple[IO[bytes], int]:
    """The body of ``url``'s answer, rewound, and its size.

    Raises :class:`FormatError` for an answer that is not HTTP, is cut short,
    grows past ``cap`` or is not over within :data:`~.limits.URL_TIMEOUT`, and
    for an HTTP error status or a connection that fails; 429 and 5xx answers
    are asked again first (see the module docstring).
    """
    try:
        urllib.parse.urlsplit(url)
    except ValueError as exc:  # an unclosed IPv6 bracket, a port that is no number
        raise FormatError.whole(url, f"not a URL: {exc}") from None
    pause = BACKOFF_SECONDS
    for attempt in range(RETRIES + 1):
        try:
            return _download_once(url, accept, cap)
        except _Again as again:
            if attempt == RETRIES:
                raise again.error from None
            time.sleep(again.pause if again.pause is not None else pause)
            pause *= 2
    raise AssertionError("unreachable")


def _download_once(url: str, accept: str, cap: limits.Limit) -> tuple[IO[bytes], int]:
    seconds = limits.URL_TIMEOUT.get()
    name = url  # (a FormatError shows a URL with its secrets hidden)
    most = cap.bytes()
    body: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115
    received = 0
    watchdog = _Watchdog(seconds)
    try:
        opener = urllib.request.build_opener(
            _HTTPHandler(watchdog), _HTTPSHandler(watchdog), _SameOrigin()
        )
        address, basic = _without_credentials(url)
        sent = {**basic, **headers(), "accept": accept}
        request = urllib.request.Request(address, headers=sent)
        with opener.open(request, timeout=seconds) as response:
            announced = _announced(response)
            if announced is not None and announced > most:
                raise FormatError.whole(name, f"answer of {announced} bytes is past {cap.text()}")
            # read1: one receive at a time, so the watchdog's shutdown is seen at once.
            while chunk := response.read1(CHUNK):
                if received + len(chunk) > most:
                    raise FormatError(name, received, f"answer larger than {cap.text()}")
                body.write(chunk)
                received += len(chunk)
        if watchdog.stop():
            raise TimeoutError
        if announced is not None and received < announced:
            reason = f"answer cut short: {announced} bytes announced, {received} received"
            raise FormatError(name, received, reason)
    except FormatError:
        body.close()
        raise
    except urllib.error.HTTPError as exc:
        body.close()
        watchdog.stop()
        error = FormatError.whole(name, _refused(exc))
        if exc.code in RETRIED:
            raise _Again(error, _retry_after(exc.headers.get("Retry-After"))) from None
        raise error from None
    except (OSError, http.client.HTTPException) as exc:
        body.close()
        if watchdog.stop() or isinstance(exc, TimeoutError):
            reason = f"no whole answer within {limits.URL_TIMEOUT.text()}"
        elif isinstance(exc, http.client.HTTPException):
            reason = f"not an HTTP answer ({exc!r})"  # repr: the server's text on one line
        else:
            reason = f"cannot read ({exc.strerror or exc})"
        # Before any byte of the body, the answer as a whole failed: no place to name.
        if not received:
            raise FormatError.whole(name, reason) from None
        raise FormatError(name, received, reason) from None
    finally:
        watchdog.stop()
    body.seek(0)
    return body, received


#: Characters of an error answer's body quoted in the error.
_QUOTED = 200


def _refused(exc: urllib.error.HTTPError) -> str:
    """An HTTP error status as a reason: the status, and the start of what the server said."""
    try:
        said = exc.read(_QUOTED + 1)
    except (OSError, http.client.HTTPException):
        said = b""
    finally:
        exc.close()
    text = " ".join(said[:_QUOTED].decode("utf-8", "replace").split())
    if len(said) > _QUOTED:
        text += "…"
    reason = f"HTTP {exc.code} {exc.reason}"
    return f"{reason}: {text!r}" if text else reason


def _retry_after(value: str | None) -> float | None:
    """The pause a ``Retry-After`` header asks for, in seconds, at most
    :data:`MAX_RETRY_AFTER_SECONDS` (its date form is not read)."""
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    if seconds is None or not seconds >= 0:  # (NaN too)
        return None
    return min(seconds, MAX_RETRY_AFTER_SECONDS)


def fetch(url: str, accept: str = ACCEPT, cap: limits.Limit = limits.MAX_URL_BYTES) -> bytes:
    """The body of ``url``'s answer, as :func:`download` gets it."""
    body, _ = download(url, accept, cap)
    with body:
        return body.read()
