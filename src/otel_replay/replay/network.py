"""Refuse outbound network traffic during replay, loopback excepted.

A replay that quietly reaches a real model or a real database is no replay.
The guard patches, for the session, what Python code reaches the network
through: ``connect``/``connect_ex`` (which every client, sync or asyncio,
ends up calling), ``sendto``/``sendmsg`` (datagrams, asyncio's datagram
endpoints included), ``send``/``sendall`` on a socket connected to a remote
host before the session began, ``socket.getaddrinfo`` (a DNS lookup of a
name that is not loopback is itself an outbound call), and the raw
``_socket.socket`` class.  Unix sockets, loopback addresses (IPv4 mapped into
IPv6 included) and the hosts the user allows go through.

What a Python-level guard cannot stop: native code calling the C library
(``ctypes``, extension modules with their own sockets) and other processes;
``otel-replay replay`` and the pytest plugin can run the agent where only
loopback exists (a network namespace), see the README.
"""

from __future__ import annotations

import _socket
import ipaddress
import socket
from collections.abc import Iterable
from typing import Any


class NetworkBlocked(ConnectionRefusedError):
    """An outbound connection was refused because a replay is running."""


class LookupBlocked(NetworkBlocked, socket.gaierror):
    """A DNS lookup was refused because a replay is running (a ``socket.gaierror`` too,
    which is what code that resolves names expects to handle)."""


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    # An IPv4 address mapped into IPv6 (``::ffff:127.0.0.1``, what a dual-stack socket
    # connects to) is loopback when the IPv4 address is.
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip.is_loopback or (mapped is not None and mapped.is_loopback)


class NetworkGuard:
    """Installed by :meth:`start`, removed by :meth:`stop`; what it refused is in ``refused``."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allow = frozenset(allow)
        self._saved: dict[tuple[Any, str], Any] | None = None
        self.refused: list[str] = []

    def allowed(self, host: str) -> bool:
        return _loopback(host) or host in self.allow

    def _refuse(self, target: str, what: str = "outbound connection to") -> NetworkBlocked:
        self.refused.append(target)
        cls = LookupBlocked if what.startswith("DNS") else NetworkBlocked
        return cls(
            f"otel-replay: {what} {target} refused during replay "
            "(pass allow_network=True or allow_hosts=[...] to permit it)"
        )

    def _check(self, sock: Any, address: Any) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        host = str(address[0]) if isinstance(address, tuple) and address else str(address)
        if self.allowed(host):
            return
        target = f"{host}:{address[1]}" if isinstance(address, tuple) and len(address) > 1 else host
        raise self._refuse(target)

    def _check_peer(self, sock: Any) -> None:
        """A socket connected before the session: refused unless its peer is allowed."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        try:
            peer = sock.getpeername()
        except OSError:
            return  # not connected: send fails by itself
        self._check(sock, peer)

    def _check_lookup(self, host: Any) -> None:
        if host is None:
            return
        name = host.decode("idna") if isinstance(host, (bytes, bytearray)) else str(host)
        try:
            ipaddress.ip_address(name.split("%", 1)[0])
            return  # an address, not a name: nothing is looked up
        except ValueError:
            pass
        if not self.allowed(name):
            raise self._refuse(name, "DNS lookup of")

    def start(self) -> None:
        if self._saved is not None:
            return
        guard = self
        saved: dict[tuple[Any, str], Any] = {}

        def patch(owner: Any, name: str, make: Any) -> None:
            original = getattr(owner, name)
            saved[(owner, name)] = original
            setattr(owner, name, make(original))

        def on_address(original: Any) -> Any:
            def guarded(sock: Any, address: Any) -> Any:
                guard._check(sock, address)
                return original(sock, address)

            return guarded

        def on_sendto(original: Any) -> Any:
            def sendto(sock: Any, data: Any, *rest: Any) -> Any:
                if rest:  # (flags, address) or (address,)
                    guard._check(sock, rest[-1])
                return original(sock, data, *rest)

            return sendto

        def on_sendmsg(original: Any) -> Any:
            def sendmsg(sock: Any, buffers: Any, *rest: Any) -> Any:
                if len(rest) >= 3 and rest[2] is not None:
                    guard._check(sock, rest[2])
                else:
                    guard._check_peer(sock)
                return original(sock, buffers, *rest)

            return sendmsg

        def on_send(original: Any) -> Any:
            def send(sock: Any, *args: Any) -> Any:
                guard._check_peer(sock)
                return original(sock, *args)

            return send

        def on_getaddrinfo(original: Any) -> Any:
            def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
                guard._check_lookup(host)
                return original(host, *args, **kwargs)

            return getaddrinfo

        for name in ("connect", "connect_ex"):
            patch(socket.socket, name, on_address)
        patch(socket.socket, "sendto", on_sendto)
        patch(socket.socket, "sendmsg", on_sendmsg)
        for name in ("send", "sendall"):
            patch(socket.socket, name, on_send)
        patch(socket, "getaddrinfo", on_getaddrinfo)
        # Code that makes ``_socket.socket()`` itself gets a guarded subclass.
        saved[(_socket, "socket")] = _socket.socket
        setattr(_socket, "socket", _guarded_raw_socket(guard, _socket.socket))  # noqa: B010
        self._saved = saved

    def stop(self) -> None:
        if self._saved is not None:
            for (owner, name), original in reversed(self._saved.items()):
                setattr(owner, name, original)
            self._saved = None


def _guarded_raw_socket(guard: NetworkGuard, base: type) -> type:
    """A subclass of the C socket type whose connects and datagrams the guard checks."""

    class GuardedSocket(base):  # type: ignore[misc]
        def connect(self, address: Any) -> Any:
            guard._check(self, address)
            return super().connect(address)

        def connect_ex(self, address: Any) -> Any:
            guard._check(self, address)
            return super().connect_ex(address)

        def sendto(self, data: Any, *rest: Any) -> Any:
            if rest:
                guard._check(self, rest[-1])
            return super().sendto(data, *rest)

    GuardedSocket.__name__ = GuardedSocket.__qualname__ = "socket"
    return GuardedSocket
