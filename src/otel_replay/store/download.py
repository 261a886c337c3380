"""An http(s) URL's answer, fetched with a deadline and a size cap: the server may be anyone's.

The whole exchange (connecting, the status line, headers and body) must be
over within :data:`~.limits.URL_TIMEOUT`: a timer shuts the connection down
when it is not, whatever the read is blocked on, so a server trickling one
byte at a time cannot hold a command.  The body goes to a temporary file
(in memory while small) and may hold no more than a cap.  Every failure is
one :class:`FormatError` naming the URL and the bytes received so far.
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import socket
import tempfile
import threading
import urllib.error
import urllib.request
from typing import IO, Any, Final

from . import limits
from .errors import FormatError

#: Bytes of an answer kept in memory before it spills to a temporary file.
IN_MEMORY: Final = 16 * limits.MiB
#: What one read of the body asks for.
CHUNK: Final = 1 << 16
ACCEPT: Final = "application/json, application/x-protobuf"


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


def _announced(response: http.client.HTTPResponse) -> int | None:
    """The body length the headers announce, if they do."""
    if "chunked" in (response.headers.get("Transfer-Encoding") or "").lower():
        return None
    try:
        length = int(response.headers.get("Content-Length") or "")
    except ValueError:
        return None
    return length if length >= 0 else None


def download(
    url: str, accept: str = ACCEPT, cap: limits.Limit = limits.MAX_URL_BYTES
) -> tuple[IO[bytes], int]:
    """The body of ``url``'s answer, rewound, and its size.

    Raises :class:`FormatError` for an answer that is not HTTP, is cut short,
    grows past ``cap`` or is not over within :data:`~.limits.URL_TIMEOUT`, and
    for an HTTP error status or a connection that fails.
    """
    seconds = limits.URL_TIMEOUT.get()
    most = cap.bytes()
    body: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=IN_MEMORY)  # noqa: SIM115
    received = 0
    watchdog = _Watchdog(seconds)
    try:
        opener = urllib.request.build_opener(_HTTPHandler(watchdog), _HTTPSHandler(watchdog))
        request = urllib.request.Request(url, headers={"Accept": accept})
        with opener.open(request, timeout=seconds) as response:
            announced = _announced(response)
            if announced is not None and announced > most:
                raise FormatError(url, 0, f"answer of {announced} bytes is past {cap.text()}")
            # read1: one receive at a time, so the watchdog's shutdown is seen at once.
            while chunk := response.read1(CHUNK):
                if received + len(chunk) > most:
                    raise FormatError(url, received, f"answer larger than {cap.text()}")
                body.write(chunk)
                received += len(chunk)
        if watchdog.stop():
            raise TimeoutError
        if announced is not None and received < announced:
            reason = f"answer cut short: {announced} bytes announced, {received} received"
            raise FormatError(url, received, reason)
    except FormatError:
        body.close()
        raise
    except (OSError, http.client.HTTPException) as exc:
        body.close()
        if watchdog.stop() or isinstance(exc, TimeoutError):
            reason = f"no whole answer within {limits.URL_TIMEOUT.text()}"
        elif isinstance(exc, http.client.HTTPException):
            reason = f"not an HTTP answer ({exc!r})"  # repr: the server's text on one line
        else:
            if isinstance(exc, urllib.error.HTTPError):
                exc.close()
            reason = f"cannot read ({exc.strerror or exc})"
        raise FormatError(url, received, reason) from None
    finally:
        watchdog.stop()
    body.seek(0)
    return body, received


def fetch(url: str, accept: str = ACCEPT, cap: limits.Limit = limits.MAX_URL_BYTES) -> bytes:
    """The body of ``url``'s answer, as :func:`download` gets it."""
    body, _ = download(url, accept, cap)
    with body:
        return body.read()
