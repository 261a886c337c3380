"""Refuse outbound network traffic during replay, loopback excepted.

A replay that quietly reaches a real model or a real database is no replay.
The guard patches, for the session, what Python code reaches the network
through, and puts each back on :meth:`NetworkGuard.stop` (one table of what it
replaced, saved and restored in one place):

- opening: ``socket.socket.connect``/``connect_ex`` (which every client, sync
  or asyncio, ends up calling; TLS sockets connect through them too) and the
  raw C socket type (``_socket.socket``, ``_socket.SocketType`` and
  ``socket.SocketType``, which are one class, not ``socket.socket``) as later
  code makes it;
- datagrams: ``sendto``/``sendmsg`` to a host that is not allowed (asyncio's
  datagram endpoints included);
- using a connection opened *before* the session (a client's keep-alive
  pool): ``send``/``sendall``/``sendmsg``/``sendfile``/``recv``/``recv_into``
  of ``socket.socket``, ``send``/``sendall``/``write``/``sendfile``/
  ``do_handshake``/``recv``/``recv_into``/``read`` of ``ssl.SSLSocket`` (whose
  C layer reads and writes below ``socket.send``), and ``os.write``/
  ``os.writev``/``os.sendfile`` on a descriptor that is a socket (and the same
  functions under their C module's name, ``posix.write``)
  (``socket.sendfile`` and ``socket.makefile`` go through these),
  ``os.splice``/``os.copy_file_range`` from or to one, and a file object made
  over one (``open(fd)``, ``io.open``, ``os.fdopen``, ``io.FileIO``: refused
  when made; one made before the session writes unchecked).  asyncio's
  transports, TLS included (``ssl.SSLObject`` encrypts into memory; the
  transport then calls ``socket.send``), and httpx/anyio write through them too;
- looking names up, a query to a DNS server being itself an outbound call:
  ``getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex``, ``gethostbyaddr``
  and ``getnameinfo``, in ``socket`` and in ``_socket``.  A name under
  ``localhost.`` (RFC 6761) is answered with loopback by the guard itself, in a
  lookup and in a ``connect``/``sendto`` address, never handed to the resolver.

Each guarded function takes the original's arguments, by position or keyword.

Each write checks the socket's peer: Unix sockets, loopback addresses (IPv4
mapped into IPv6 included) and the hosts the user allows go through; of the
families that are no IP's, only those that stay on the machine (Unix, netlink,
the kernel's crypto API) do.

What a Python-level guard cannot stop: native code calling the C library
(``ctypes``, extension modules with their own sockets, an event loop written in
C such as uvloop), other processes, a C socket object (``_socket.socket``, not
``socket.socket``) or a file object made before the session (their methods are
the C type's), and a function object taken before the session and called as
such (``send = _socket.socket.send``, ``from socket import gethostbyname`` in a
module imported earlier).  ``otel-replay replay
--isolate`` and the pytest plugin can run the agent where only loopback exists
(a network namespace), see the README.
"""

from __future__ import annotations

import _io
import _socket
import builtins
import io
import ipaddress
import logging
import os
import socket
import ssl
import stat
import sys
from collections.abc import Callable, Iterable
from typing import Any, Final

logger = logging.getLogger("otel_replay")


class NetworkBlocked(ConnectionRefusedError):
    """An outbound connection was refused because a replay is running."""


class LookupBlocked(NetworkBlocked, socket.gaierror):
    """A DNS lookup was refused because a replay is running (a ``socket.gaierror`` too,
    which is what code that resolves names expects to handle)."""


_LOOPBACK_V4: Final = "127.0.0.1"
_LOOPBACK_V6: Final = "::1"
#: An argument the caller did not pass.
_ABSENT: Final = object()


def _local_name(name: str) -> bool:
    """A name under ``localhost.`` (RFC 6761): loopback, answered here and never asked of
    a resolver (which may pass it on to a DNS server)."""
    return name.rstrip(".").lower().endswith(".localhost")


def _text(host: Any) -> str | None:
    if isinstance(host, (bytes, bytearray)):
        try:
            return bytes(host).decode("idna")
        except UnicodeError:
            return None
    return host if isinstance(host, str) else None


def _argument(args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str) -> Any:
    """The argument at ``index``, or passed as ``name``; :data:`_ABSENT` when neither."""
    if 0 <= index < len(args):
        return args[index]
    return kwargs.get(name, _ABSENT)


def _replaced(
    args: tuple[Any, ...], kwargs: dict[str, Any], index: int, name: str, value: Any
) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """``args``/``kwargs`` with the argument at ``index`` (or ``name``) made ``value``."""
    if 0 <= index < len(args):
        return (*args[:index], value, *args[index + 1 :]), kwargs
    return args, {**kwargs, name: value}


def _loopback(host: str) -> bool:
    if host == "localhost" or _local_name(host):
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


#: Socket families that stay on this machine: Unix sockets, the kernel's netlink (the C
#: library asks it about interfaces) and its crypto API.  Every other family that is no
#: IP's leaves it (raw frames, VSOCK to a hypervisor, TIPC, RDS, CAN, Bluetooth...):
#: refused like an address that is not allowed.
_LOCAL_FAMILIES: Final = frozenset(
    getattr(socket, name) for name in ("AF_UNIX", "AF_NETLINK", "AF_ALG") if hasattr(socket, name)
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
            self._check_family(sock.family, address)
            return
        if not isinstance(address, tuple):
            return  # no IP address: the call fails by itself (TypeError)
        host = str(address[0]) if isinstance(address, tuple) and address else str(address)
        if self.allowed(host):
            return
        target = f"{host}:{address[1]}" if isinstance(address, tuple) and len(address) > 1 else host
        raise self._refuse(target)

    def _check_family(self, family: Any, address: Any) -> None:
        """A socket of a family that is no IP's: refused unless it stays on this machine."""
        if family in _LOCAL_FAMILIES:
            return
        name = getattr(family, "name", f"socket family {family}")
        raise self._refuse(name if address is None else f"{name} {address!r}")

    def _address(self, sock: Any, address: Any) -> Any:
        """``address`` checked; a ``*.localhost`` name in it made the loopback address of
        the socket's family (the C layer would otherwise look the name up)."""
        family = getattr(sock, "family", None)
        if (
            family in (socket.AF_INET, socket.AF_INET6)
            and isinstance(address, tuple)
            and address
            and (name := _text(address[0])) is not None
            and _local_name(name)
        ):
            loopback = _LOOPBACK_V4 if family == socket.AF_INET else _LOOPBACK_V6
            return (loopback, *address[1:])
        self._check(sock, address)
        return address

    def _check_opened(self, file: Any) -> None:
        """A file object made over a descriptor: checked as a write on it would be."""
        if isinstance(file, int) and not isinstance(file, bool):
            self._check_fd(file)

    def _check_peer(self, sock: Any) -> None:
        """A socket connected before the session: refused unless its peer is allowed."""
        if sock.family not in (socket.AF_INET, socket.AF_INET6):
            self._check_family(sock.family, None)
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
        """What :meth:`start` replaces: (owner, attribute, make the guarded one from it).

        Each guarded function takes what the original takes, positional or by keyword
        (``getaddrinfo(host=..., port=...)``), and hands the call on as it came, save
        for a ``*.localhost`` name, answered with loopback here (:func:`_local_name`).
        """
        guard = self

        def on_address(index: int, name: str) -> Callable[[Any], Any]:
            """Checks (and for ``*.localhost``, points at loopback) the address argument."""

            def make(original: Any) -> Any:
                def guarded(sock: Any, *args: Any, **kwargs: Any) -> Any:
                    at = index if index >= 0 else len(args) + index
                    address = _argument(args, kwargs, at, name) if at >= 0 else _ABSENT
                    if address is not _ABSENT and address is not None:
                        address = guard._address(sock, address)
                        args, kwargs = _replaced(args, kwargs, at, name, address)
                    return original(sock, *args, **kwargs)

                return guarded

            return make

        def on_sendto(original: Any) -> Any:
            def sendto(sock: Any, *args: Any, **kwargs: Any) -> Any:
                if len(args) >= 2:  # (data, flags, address) or (data, address)
                    return on_address(-1, "address")(original)(sock, *args, **kwargs)
                return original(sock, *args, **kwargs)

            return sendto

        def on_sendmsg(original: Any) -> Any:
            to_address = on_address(3, "address")(original)

            def sendmsg(sock: Any, *args: Any, **kwargs: Any) -> Any:
                if _argument(args, kwargs, 3, "address") in (_ABSENT, None):
                    guard._check_peer(sock)
                    return original(sock, *args, **kwargs)
                return to_address(sock, *args, **kwargs)

            return sendmsg

        def checking(check: Callable[[Any], None], *at: tuple[int, str]) -> Callable[[Any], Any]:
            """A maker of wrappers that ``check`` the arguments ``at`` (position, keyword):
            the socket, the descriptor, before the call."""

            def make(original: Any) -> Any:
                def guarded(*args: Any, **kwargs: Any) -> Any:
                    for index, name in at:
                        value = _argument(args, kwargs, index, name)
                        if value is not _ABSENT:
                            check(value)
                    return original(*args, **kwargs)

                return guarded

            return make

        on_peer = checking(self._check_peer, (0, "self"))
        on_fd = checking(self._check_fd, (0, "fd"))

        def on_opened(index: int, name: str) -> Callable[[Any], Any]:
            """``open(fd)`` and the like: a descriptor (not a path) is checked when opened."""
            return checking(self._check_opened, (index, name))

        def on_lookup(
            answer: Callable[[str, Any, tuple[Any, ...], dict[str, Any]], Any],
            check: Callable[[Any], None] = self._check_lookup,
        ) -> Any:
            """A resolver whose first argument is the name looked up; ``answer`` gives
            what a ``*.localhost`` name resolves to (without asking a server)."""

            def make(original: Any) -> Any:
                def guarded(*args: Any, **kwargs: Any) -> Any:
                    host = _argument(args, kwargs, 0, "host")
                    if host is _ABSENT:
                        host = _argument(args, kwargs, 0, "hostname")
                    if host is not _ABSENT and host is not None:
                        name = _text(host)
                        if name is not None and _local_name(name):
                            return answer(name, original, args, kwargs)
                        check(host)
                    return original(*args, **kwargs)

                return guarded

            return make

        def local_addrinfo(
            name: str, original: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
        ) -> Any:
            del name
            asked = _argument(args, kwargs, 2, "family")
            asked = 0 if asked is _ABSENT else asked
            answers: list[Any] = []
            for address, family in (("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)):
                if asked in (socket.AF_UNSPEC, family):
                    a, k = _replaced(args, kwargs, 0, "host", address)
                    answers += original(*a, **k)
            if not answers:  # a family that is no IP's: the original says what it says
                a, k = _replaced(args, kwargs, 0, "host", "127.0.0.1")
                return original(*a, **k)
            return answers

        def local_host(name: str, original: Any, args: Any, kwargs: Any) -> Any:
            del name, original, args, kwargs
            return _LOOPBACK_V4

        def local_host_ex(name: str, original: Any, args: Any, kwargs: Any) -> Any:
            del original, args, kwargs
            return (name, [], [_LOOPBACK_V4])

        def on_nameinfo(original: Any) -> Any:
            def getnameinfo(*args: Any, **kwargs: Any) -> Any:
                sockaddr = _argument(args, kwargs, 0, "sockaddr")
                flags = _argument(args, kwargs, 1, "flags")
                if isinstance(sockaddr, tuple) and sockaddr:
                    name = _text(sockaddr[0])
                    if name is not None and _local_name(name):
                        local = (_LOOPBACK_V4, *sockaddr[1:2])
                        args, kwargs = _replaced(args, kwargs, 0, "sockaddr", local)
                    elif not (isinstance(flags, int) and flags & socket.NI_NUMERICHOST):
                        guard._check_reverse(sockaddr[0])
                return original(*args, **kwargs)

            return getnameinfo

        # What a socket does that the guard checks, on socket.socket and the C type alike.
        # recv: reading from such a connection is using it too; and a client that ignores
        # a failed write (httpcore reads the answer anyway) then fails at once, not after
        # its read timeout.
        methods: dict[str, Callable[[Any], Any]] = {
            "connect": on_address(0, "address"),
            "connect_ex": on_address(0, "address"),
            "sendto": on_sendto,
            "sendmsg": on_sendmsg,
            "send": on_peer,
            "sendall": on_peer,
            "recv": on_peer,
            "recv_into": on_peer,
        }

        def raw(original: Any) -> Any:
            guarded = {name: make(getattr(original, name)) for name, make in methods.items()}
            return _guarded_subclass(original, "socket", guarded)

        def file_io(original: Any) -> Any:
            # FileIO(fd): the raw file object open() makes, made directly.
            init = on_opened(1, "file")(original.__init__)  # after self
            return _guarded_subclass(original, "FileIO", {"__init__": init}, module="io")

        # os.splice, os.copy_file_range: moving bytes from or to a socket's descriptor.
        on_moved = checking(self._check_fd, (0, "src"), (1, "dst"))
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
            *(
                (module, name, make)
                for module in _os_modules()
                for name, make in (
                    ("write", on_fd),
                    ("writev", on_fd),
                    ("sendfile", checking(self._check_fd, (0, "out_fd"))),
                    ("splice", on_moved),
                    ("copy_file_range", on_moved),
                )
            ),
            # A file object over a socket's descriptor writes with the C library's write.
            (builtins, "open", on_opened(0, "file")),
            (io, "open", on_opened(0, "file")),
            (_io, "open", on_opened(0, "file")),
            (os, "fdopen", on_opened(0, "fd")),
            (io, "FileIO", file_io),
            (_io, "FileIO", file_io),
        ]
        answers = {
            "getaddrinfo": local_addrinfo,
            "gethostbyname": local_host,
            "gethostbyname_ex": local_host_ex,
            "gethostbyaddr": local_host_ex,
        }
        for module in (socket, _socket):
            for name in RESOLVERS:
                if name == "getnameinfo":
                    table.append((module, name, on_nameinfo))
                elif name == "gethostbyaddr":
                    table.append((module, name, on_lookup(answers[name], self._check_reverse)))
                else:
                    table.append((module, name, on_lookup(answers[name])))
        # Code that makes the C socket type itself, by any of its names, gets a guarded
        # subclass.
        table += [
            (_socket, "socket", raw),
            (_socket, "SocketType", raw),
            (socket, "SocketType", raw),
        ]
        return table

    def start(self) -> None:
        if self._saved is not None:
            return
        outside = self.connected_outside()
        if outside:
            peers = list(dict.fromkeys(outside))
            # Python calls on them are refused from now on; a C socket or file object made
            # before the session writes below the patches.  Say so, naming them.
            logger.warning(
                "otel-replay: %d connection(s) opened before the replay lead to hosts it does "
                "not allow (%s): writes through Python's socket, ssl and os calls are refused; "
                "a raw socket or file object made before the replay is not covered "
                "(replay --isolate is)",
                len(outside),
                ", ".join(peers[:5]) + (", ..." if len(peers) > 5 else ""),
            )
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

    def connected_outside(self) -> list[str]:
        """The peers (``host:port``) of this process's TCP connections the guard does not
        allow, read from its descriptors (Linux); empty where they cannot be listed."""
        try:
            fds = [int(name) for name in os.listdir("/proc/self/fd")]
        except (OSError, ValueError):
            return []
        found = []
        for fd in fds:
            try:
                if not stat.S_ISSOCK(os.fstat(fd).st_mode):
                    continue
                with socket.socket(fileno=os.dup(fd)) as sock:
                    if sock.family not in (socket.AF_INET, socket.AF_INET6):
                        continue
                    host, port = sock.getpeername()[:2]
            except OSError:
                continue  # closed meanwhile, not connected, not ours to read
            if not self.allowed(str(host)):
                found.append(f"{host}:{port}")
        return found

    def stop(self) -> None:
        if self._saved is not None:
            for (owner, name), original in reversed(self._saved.items()):
                if original is _INHERITED:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)
            self._saved = None


def _os_modules() -> tuple[Any, ...]:
    """``os`` and the C module its descriptor functions come from (``posix``, ``nt``):
    the same functions under a second name, which the guard must replace as well."""
    native = sys.modules.get(os.name)
    return (os,) if native is None or native is os else (os, native)


def _guarded_subclass(
    base: type, name: str, methods: dict[str, Any], module: str = __name__
) -> type:
    """A subclass of the C type ``base`` with the guard's ``methods``, named as it is."""

    class Meta(type):
        # isinstance(sock, socket.SocketType) stays true of every socket made before.
        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, base)

        def __subclasscheck__(cls, sub: Any) -> bool:
            return issubclass(sub, base)

    return Meta(name, (base,), {"__module__": module, **methods})
