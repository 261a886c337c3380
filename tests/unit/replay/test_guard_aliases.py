"""The guard replaces a guarded function under every name code reaches it by.

The class of input: a function or class the guard replaces (``os.write``,
``_socket.socket``...) called through another name it has in this process:
the C module that defines it (``posix.write`` is ``os.write``,
``_socket.SocketType`` is ``_socket.socket``) or another standard module
(``os``, ``socket``, ``io``, ``builtins``, ``ssl``).  The names are found by walking every loaded module before the guard
starts and looking at what it replaced; each must be guarded during the session
and put back after.  A copy another module took at its import (``tokenize._builtin_open``,
``tarfile.bltn_open``) is what the guard documents it cannot see.
Then each such name is used as an agent would, on a connection to a peer the
guard refuses (a server on 127.0.0.2, told to refuse it: no packet leaves).
"""

from __future__ import annotations

import _socket
import asyncio
import contextlib
import http.client
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from otel_replay.replay.network import NetworkBlocked, NetworkGuard

OUTSIDE = "127.0.0.2"
_GONE = object()
# Loaded so that the walk sees the modules an agent's clients bring in.
LOADED = (asyncio, http.client, ssl, subprocess, urllib.request, httpx)


def _attributes() -> list[tuple[Any, str, Any]]:
    found = []
    for module in list(sys.modules.values()):
        try:
            names = list(vars(module).items())
        except TypeError:
            continue
        found += [(module, name, value) for name, value in names]
    return found


def _home(value: Any) -> Any:
    """The module that defines ``value`` (a C function's or class's own module)."""
    return sys.modules.get(getattr(value, "__module__", None) or "")


#: The modules whose names for the guarded functions an agent's code calls: the standard
#: library's and their C modules.  A copy another module took at its import
#: (``tarfile.bltn_open``) is a function taken before the session, which the guard
#: documents it cannot see.
HOMES = frozenset(
    {"os", "posix", "nt", "socket", "_socket", "io", "_io", "builtins", "ssl", "_ssl"}
)


def _aliases() -> list[tuple[Any, str, Any]]:
    """(module, name, original) of each other name a replaced original has: in its
    defining module, or in the standard modules code calls it through."""
    before = _attributes()
    guard = NetworkGuard()
    guard.start()
    try:
        replaced = {
            id(value): value
            for module, name, value in before
            if vars(module).get(name, _GONE) is not value
        }
    finally:
        guard.stop()
    return [
        (module, name, value)
        for module, name, value in before
        if id(value) in replaced
        and (module is _home(value) or getattr(module, "__name__", "") in HOMES)
    ]


ALIASES = _aliases()


def _label(alias: tuple[Any, str, Any]) -> str:
    return f"{alias[0].__name__}.{alias[1]}"


def test_the_walk_finds_the_c_modules_names() -> None:
    labels = {_label(a) for a in ALIASES}
    assert {"_socket.socket", "_socket.SocketType", "socket.SocketType"} <= labels
    if os.name == "posix":
        assert {"posix.write", "posix.writev", "os.write"} <= labels


@pytest.mark.parametrize("alias", ALIASES, ids=_label)
def test_every_name_of_a_guarded_function_is_guarded(alias: tuple[Any, str, Any]) -> None:
    module, name, original = alias
    guard = NetworkGuard()
    guard.start()
    try:
        assert getattr(module, name) is not original, f"{_label(alias)} is not guarded"
    finally:
        guard.stop()
    assert getattr(module, name) is original


@contextlib.contextmanager
def _outside() -> Iterator[tuple[tuple[str, int], list[bytes]]]:
    """A TCP server on 127.0.0.2 that keeps what it is sent."""
    listener = socket.create_server((OUTSIDE, 0))
    received: list[bytes] = []

    def serve() -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = listener.accept()
                threading.Thread(target=_drain, args=(conn, received), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[:2], received
    finally:
        listener.close()


def _drain(conn: socket.socket, received: list[bytes]) -> None:
    with conn, contextlib.suppress(OSError):
        while data := conn.recv(65536):
            received.append(data)


def _sendfile(call: Callable[..., Any]) -> Callable[[int, bytes], Any]:
    def send(fd: int, data: bytes) -> Any:
        with tempfile.TemporaryFile() as f:
            f.write(data)
            f.flush()
            return call(fd, f.fileno(), 0, len(data))

    return send


#: How each descriptor function is called to put ``data`` on descriptor ``fd``.
WRITES: dict[str, Callable[[Callable[..., Any]], Callable[[int, bytes], Any]]] = {
    "write": lambda call: lambda fd, data: call(fd, data),
    "writev": lambda call: lambda fd, data: call(fd, [data]),
    "sendfile": _sendfile,
}
WRITE_ALIASES = [a for a in ALIASES if a[1] in WRITES and callable(a[2])]
SOCKET_TYPES = [a for a in ALIASES if a[2] is _socket.socket]


@pytest.mark.parametrize("alias", WRITE_ALIASES, ids=_label)
def test_a_write_by_any_name_on_a_connection_opened_before_is_refused(
    alias: tuple[Any, str, Any],
) -> None:
    module, name, _ = alias
    with _outside() as (address, received):
        sock = socket.create_connection(address, timeout=5)
        guard = NetworkGuard(refuse=[OUTSIDE])
        guard.start()
        try:
            write = WRITES[name](getattr(module, name))
            with pytest.raises(NetworkBlocked, match=OUTSIDE):
                write(sock.fileno(), b"<during>")
        finally:
            guard.stop()
            sock.close()
        assert b"<during>" not in b"".join(received)


@pytest.mark.parametrize("alias", SOCKET_TYPES, ids=_label)
def test_a_socket_made_by_any_name_of_the_c_type_cannot_connect(
    alias: tuple[Any, str, Any],
) -> None:
    module, name, _ = alias
    with _outside() as (address, _received):
        guard = NetworkGuard(refuse=[OUTSIDE])
        guard.start()
        try:
            sock = getattr(module, name)(socket.AF_INET, socket.SOCK_STREAM)
            try:
                with pytest.raises(NetworkBlocked, match=OUTSIDE):
                    sock.connect(address)
            finally:
                sock.close()
        finally:
            guard.stop()
