"""Refuse outbound network traffic during replay, loopback excepted.

A replay that quietly reaches a real model or a real database is no replay.
The guard patches, for the session, what Python code reaches the network
through, and puts each back on :meth:`NetworkGuard.stop` (one table of what it
replaced, saved and restored in one place):

- opening: ``socket.socket.connect``/``connect_ex`` (which every client, sync
  or asyncio, ends up calling; TLS sockets connect through them too) and the
  raw C socket type (``_socket.socket`` and ``socket.SocketType``, which are
  one class, not ``socket.socket``) as later code makes it;
- datagrams: ``sendto``/``sendmsg`` to a host that is not allowed (asyncio's
  datagram endpoints included);
- using a connection opened *before* the session (a client's keep-alive
  pool): ``send``/``sendall``/``sendmsg``/``sendfile``/``recv``/``recv_into``
  of ``socket.socket``, ``send``/``sendall``/``write``/``sendfile``/
  ``do_handshake``/``recv``/``recv_into``/``read`` of ``ssl.SSLSocket`` (whose
  C layer reads and writes below ``socket.send``), and ``os.write``/
  ``os.writev``/``os.sendfile`` on a descriptor that is a socket
  (``socket.sendfile`` and ``socket.makefile`` go through these).  asyncio's
  transports, TLS included (``ssl.SSLObject`` encrypts into memory; the
  transport then calls ``socket.send``), and httpx/anyio write through them too;
- looking names up, a query to a DNS server being itself an outbound call:
  ``getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex``, ``gethostbyaddr``
  and ``getnameinfo``, in ``socket`` and in ``_socket``.

Each write checks the socket's peer: Unix sockets, loopback addresses (IPv4
mapped into IPv6 included) and the hosts the user allows go through.

What a Python-level guard cannot stop: native code calling the C library
(``ctypes``, extension modules with their own sockets, an event loop written in
C such as uvloop), other processes, and a function object taken before the
session and called as such (``send = _socket.socket.send``, ``from socket
import gethostbyname`` in a module imported earlier).  ``otel-replay replay
--isolate`` and the pytest plugin can run the agent where only loopback exists
(a network namespace), see the README.
"""

from __future__ import annotations

import _socket
import ipaddress
import os
import socket
import ssl
import stat
from collections.abc import Callable, Iterable
from typing import Any, Final


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


#: Saved for an attribute a class inherited rather than held.
_INHERITED: Final = object()

#: The resolver functions guarded, in ``socket`` and in ``_socket``.
RESOLVERS: Final = (
    "getaddrinfo",
    "gethostbyname",
    "gethostbyname_ex",
    "gethostbyaddr",
    "getnameinfo",
)


class NetworkGuard:
    """Installed by :meth:`start`, removed by :meth:`stop`; what it refused is in ``refused``.

    ``allow``: hosts (names or addresses) allowed besides loopback.  ``refuse``:
    hosts refused even though they are loopback (a local service the replay
    must not reach, such as a database on 127.0.0.2).
    """

    def __init__(self, allow: Iterable[str] = (), *, refuse: Iterable[str] = ()) -> None:
        self.allow = frozenset(allow)
        self.refuse = frozenset(refuse)
        self._saved: dict[tuple[Any, str], Any] | None = None
        self.refused: list[str] = []
        self._verdicts: dict[str, bool] = {}

    def allowed(self, host: str) -> bool:
        known = self._verdicts.get(host)
        if known is None:
            known = host not in self.refuse and (_loopback(host) or host in self.allow)
            # Every send and recv asks about its peer: parsing the address each time
            # cost more than the call.  Few hosts, each asked again and again.
            if len(self._verdicts) < 4096:
                self._verdicts[host] = known
        return known

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

    def _check_fd(self, fd: Any) -> None:
        """A write on a descriptor: checked as a socket's when it is one."""
        try:
            if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                return
            blocking = os.get_blocking(fd)
            # A socket object for the descriptor (it learns the family itself), let go of
            # again without closing: the descriptor stays the caller's.
            sock = socket.socket(fileno=fd)
        except (OSError, TypeError, ValueError, OverflowError):
            return  # not a descriptor: the write fails by itself
        try:
            self._check_peer(sock)
        finally:
            sock.detach()
            # Made under socket.setdefaulttimeout(), the object set O_NONBLOCK on the
            # descriptor it shares: the caller's mode is put back.
            if os.get_blocking(fd) != blocking:
                os.set_blocking(fd, blocking)

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

    def _check_reverse(self, host: Any) -> None:
        """A lookup of the names of an address (or of a name): refused unless allowed."""
        name = host.decode("idna") if isinstance(host, (bytes, bytearray)) else str(host)
        if not self.allowed(name.split("%", 1)[0]) and not self.allowed(name):
            raise self._refuse(name, "DNS lookup of")

    def _wrappers(self) -> list[tuple[Any, str, Callable[[Any], Any]]]:
        """What :meth:`start` replaces: (owner, attribute, make the guarded one from it)."""
        guard = self

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

        def first(check: Callable[[Any], None]) -> Callable[[Any], Any]:
            """A maker of wrappers that ``check`` the first argument (the socket, the
            descriptor, the name looked up) before the call."""

            def make(original: Any) -> Any:
                def guarded(first: Any, *args: Any, **kwargs: Any) -> Any:
                    check(first)
                    return original(first, *args, **kwargs)

                return guarded

            return make

        on_peer = first(self._check_peer)
        on_fd = first(self._check_fd)
        on_lookup = first(self._check_lookup)
        on_reverse = first(self._check_reverse)

        def on_nameinfo(original: Any) -> Any:
            def getnameinfo(sockaddr: Any, flags: Any, *args: Any, **kwargs: Any) -> Any:
                numeric = isinstance(flags, int) and flags & socket.NI_NUMERICHOST
                if not numeric and isinstance(sockaddr, tuple) and sockaddr:
                    guard._check_reverse(sockaddr[0])
                return original(sockaddr, flags, *args, **kwargs)

            return getnameinfo

        # What a socket does that the guard checks, on socket.socket and the C type alike.
        # recv: reading from such a connection is using it too; and a client that ignores
        # a failed write (httpcore reads the answer anyway) then fails at once, not after
        # its read timeout.
        methods: dict[str, Callable[[Any], Any]] = {
            "connect": on_address,
            "connect_ex": on_address,
            "sendto": on_sendto,
            "sendmsg": on_sendmsg,
            "send": on_peer,
            "sendall": on_peer,
            "recv": on_peer,
            "recv_into": on_peer,
        }

        def raw(original: Any) -> Any:
            guarded = {name: make(getattr(original, name)) for name, make in methods.items()}
            return _guarded_raw_socket(original, guarded)

        table: list[tuple[Any, str, Callable[[Any], Any]]] = [
            *((socket.socket, name, make) for name, make in methods.items()),
            (socket.socket, "sendfile", on_peer),
            # TLS: the C layer reads and writes the descriptor itself, below socket.send.
            (ssl.SSLSocket, "send", on_peer),
            (ssl.SSLSocket, "sendall", on_peer),
            (ssl.SSLSocket, "write", on_peer),
            (ssl.SSLSocket, "sendfile", on_peer),
            (ssl.SSLSocket, "do_handshake", on_peer),
            (ssl.SSLSocket, "recv", on_peer),
            (ssl.SSLSocket, "recv_into", on_peer),
            (ssl.SSLSocket, "read", on_peer),
            (os, "write", on_fd),
            (os, "writev", on_fd),
            (os, "sendfile", on_fd),
        ]
        for module in (socket, _socket):
            for name in RESOLVERS:
                make = {"gethostbyaddr": on_reverse, "getnameinfo": on_nameinfo}.get(
                    name, on_lookup
                )
                table.append((module, name, make))
        # Code that makes the C socket type itself gets a guarded subclass.
        table += [(_socket, "socket", raw), (socket, "SocketType", raw)]
        return table

    def start(self) -> None:
        if self._saved is not None:
            return
        saved: dict[tuple[Any, str], Any] = {}
        made: dict[int, Any] = {}  # one guarded class for the one C type, however named
        try:
            for owner, name, make in self._wrappers():
                if not hasattr(owner, name):
                    continue  # os.sendfile, os.writev: not on every platform
                original = getattr(owner, name)
                # What the owner itself held (socket.socket inherits send from the C
                # type: nothing, put back as nothing).
                saved[(owner, name)] = vars(owner).get(name, _INHERITED)
                if id(original) not in made:
                    made[id(original)] = make(original)
                setattr(owner, name, made[id(original)])
        finally:
            self._saved = saved  # a failure part way: stop() undoes what was done

    def stop(self) -> None:
        if self._saved is not None:
            for (owner, name), original in reversed(self._saved.items()):
                if original is _INHERITED:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)
            self._saved = None


def _guarded_raw_socket(base: type, methods: dict[str, Any]) -> type:
    """A subclass of the C socket type with the guard's ``methods``, named as it is."""

    class Meta(type):
        # isinstance(sock, socket.SocketType) stays true of every socket made before.
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, base)

        def __subclasscheck__(cls, sub: Any) -> bool:
            return issubclass(sub, base)

    return Meta("socket", (base,), {"__module__": __name__, **methods})
