"""Refuse outbound connections during replay, loopback excepted.

A replay that quietly reaches a real model or a real database is no replay.
The guard patches ``socket.socket.connect``/``connect_ex`` (which every
client, sync or asyncio, ends up calling) and lets through Unix sockets,
loopback addresses and the hosts the user allows.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any


class NetworkBlocked(ConnectionRefusedError):
    """An outbound connection was refused because a replay is running."""


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
    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allow = frozenset(allow)
        self._saved: tuple[Any, Any] | None = None
        self.refused: list[str] = []

    def _check(self, sock: socket.socket, address: Any) -> None:
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            return
        host = str(address[0]) if isinstance(address, tuple) and address else str(address)
        if _loopback(host) or host in self.allow:
            return
        target = f"{host}:{address[1]}" if isinstance(address, tuple) and len(address) > 1 else host
        self.refused.append(target)
        raise NetworkBlocked(
            f"otel-replay: outbound connection to {target} refused during replay "
            "(pass allow_network=True or allow_hosts=[...] to permit it)"
        )

    def start(self) -> None:
        if self._saved is not None:
            return
        connect, connect_ex = socket.socket.connect, socket.socket.connect_ex
        guard = self

        def guarded_connect(sock: socket.socket, address: Any) -> None:
            guard._check(sock, address)
            connect(sock, address)

        def guarded_connect_ex(sock: socket.socket, address: Any) -> int:
            guard._check(sock, address)
            return connect_ex(sock, address)

        self._saved = (connect, connect_ex)
        socket.socket.connect = guarded_connect  # type: ignore[method-assign,assignment]
        socket.socket.connect_ex = guarded_connect_ex  # type: ignore[method-assign,assignment]

    def stop(self) -> None:
        if self._saved is not None:
            socket.socket.connect, socket.socket.connect_ex = self._saved  # type: ignore[method-assign]
            self._saved = None
