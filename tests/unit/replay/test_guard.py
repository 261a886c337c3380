"""The in-process network guard, against every way Python code writes to a connection.

The class of input: a connection opened *before* the replay began (a client's
keep-alive pool, a database driver's socket), plain or TLS, to a peer the
replay may not reach, and each Python call that puts bytes on it; and each
resolver function.  The "outside" peer is a server on 127.0.0.2, which the
guard is told to refuse (``refuse=``), so no packet leaves the machine.  Each
write path from :data:`PLAIN` and :data:`TLS` is refused during the session,
nothing reaches the server, and the same call works again once the guard is
stopped; every attribute the guard replaced is back as it was.
"""

from __future__ import annotations

import _io
import _socket
import asyncio
import builtins
import contextlib
import io
import os
import shutil
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.replay.network import LookupBlocked, NetworkBlocked, NetworkGuard
from tests.fixtures.http import POLL_S

OUTSIDE = "127.0.0.2"
_MISSING = object()


def _certificate(directory: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.2 (and its key), made now."""
    cert, key = directory / "cert.pem", directory / "key.pem"
    openssl = shutil.which("openssl")
    if openssl is not None:
        subprocess.run(
            [
                *(openssl, "req", "-x509", "-newkey", "ec"),
                *("-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1"),
                *("-keyout", str(key), "-out", str(cert), "-subj", f"/CN={OUTSIDE}"),
                *("-addext", f"subjectAltName=IP:{OUTSIDE}"),
            ],
            check=True,
            capture_output=True,
        )
        return cert, key
    crypto = pytest.importorskip("cryptography", reason="no openssl and no cryptography")
    del crypto
    import datetime
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, OUTSIDE)])
    now = datetime.datetime.now(datetime.timezone.utc)
    built = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(private.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(OUTSIDE))]),
            critical=False,
        )
        .sign(private, hashes.SHA256())
    )
    cert.write_bytes(built.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(
        private.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert, key


@dataclass
class Peer:
    """A server on 127.0.0.2 that keeps every byte each connection sent it."""

    address: tuple[str, int]
    client_tls: ssl.SSLContext
    received: bytearray = field(default_factory=bytearray)

    def got(self, data: bytes, timeout: float = 5.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if data in self.received:
                return True
            time.sleep(0.01)
        return False


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return _certificate(tmp_path_factory.mktemp("tls"))


def _serve(listener: socket.socket, tls: ssl.SSLContext | None, into: bytearray) -> None:
    def handle(conn: socket.socket) -> None:
        try:
            if tls is not None:
                conn = tls.wrap_socket(conn, server_side=True)
            while chunk := conn.recv(65536):
                into.extend(chunk)
        except OSError:
            pass
        finally:
            conn.close()

    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=handle, args=(conn,), daemon=True).start()


@contextlib.contextmanager
def serving(tls_files: tuple[Path, Path], tls: bool) -> Iterator[Peer]:
    """A :class:`Peer` on 127.0.0.2, speaking TLS or not; clients trust its certificate."""
    cert, key = tls_files
    server_tls = None
    if tls:
        server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server_tls.load_cert_chain(cert, key)
    listener = socket.create_server((OUTSIDE, 0))
    got = Peer(listener.getsockname()[:2], ssl.create_default_context(cafile=str(cert)))
    threading.Thread(target=_serve, args=(listener, server_tls, got.received), daemon=True).start()
    try:
        yield got
    finally:
        listener.close()


def _connect(peer: Peer, tls: bool) -> socket.socket:
    sock = socket.create_connection(peer.address, timeout=5)
    if tls:
        return peer.client_tls.wrap_socket(sock, server_hostname=OUTSIDE)
    return sock


def _sendfile(sock: socket.socket, data: bytes) -> None:
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.seek(0)
        sock.sendfile(f)


def _os_sendfile(sock: socket.socket, data: bytes) -> None:
    with tempfile.TemporaryFile() as f:
        f.write(data)
        f.flush()
        os.sendfile(sock.fileno(), f.fileno(), 0, len(data))


def _fdopen_write(sock: socket.socket, data: bytes) -> None:
    fd = os.dup(sock.fileno())
    try:
        f = os.fdopen(fd, "wb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    with f:
        f.write(data)


def _splice(sock: socket.socket, data: bytes) -> None:
    r, w = os.pipe()
    try:
        os.write(w, data)
        os.splice(r, sock.fileno(), len(data))
    finally:
        os.close(r)
        os.close(w)


Write = Callable[[socket.socket, bytes], Any]

#: Each way Python code puts bytes on a plain connected socket.
PLAIN: dict[str, Write] = {
    "send": lambda s, d: s.send(d),
    "sendall": lambda s, d: s.sendall(d),
    "sendmsg": lambda s, d: s.sendmsg([d]),
    "sendfile": _sendfile,
    "makefile": lambda s, d: s.makefile("wb", buffering=0).write(d),
    "SocketType.send": lambda s, d: socket.SocketType.send(s, d),
    "_socket.socket.sendall": lambda s, d: _socket.socket.sendall(s, d),
    "os.write": lambda s, d: os.write(s.fileno(), d),
    "os.writev": lambda s, d: os.writev(s.fileno(), [d]),
    "os.sendfile": _os_sendfile,
    # A file object made over the socket's descriptor, and bytes moved from a pipe.
    "open(fd)": lambda s, d: open(s.fileno(), "wb", buffering=0, closefd=False).write(d),  # noqa: SIM115
    "os.fdopen": lambda s, d: _fdopen_write(s, d),
    "io.FileIO.writelines": lambda s, d: io.FileIO(s.fileno(), "w", closefd=False).writelines([d]),
    "os.splice": lambda s, d: _splice(s, d),
}

#: Each way Python code puts bytes on a TLS socket (raw descriptor writes would
#: break the TLS stream itself: the plain table has them).
TLS: dict[str, Write] = {
    "send": lambda s, d: s.send(d),
    "sendall": lambda s, d: s.sendall(d),
    "write": lambda s, d: s.write(d),  # type: ignore[attr-defined]
    "sendfile": _sendfile,
    "makefile": lambda s, d: s.makefile("wb", buffering=0).write(d),
}


CASES = [("plain", name) for name in PLAIN] + [("tls", name) for name in TLS]


@pytest.mark.parametrize(("kind", "name"), CASES)
def test_each_write_on_a_connection_opened_before_is_refused(
    tls_files: tuple[Path, Path], kind: str, name: str
) -> None:
    tls = kind == "tls"
    write = (TLS if tls else PLAIN)[name]
    with serving(tls_files, tls) as peer:
        sock = _connect(peer, tls)
        write(sock, b"<before>")
        assert peer.got(b"<before>")
        guard = NetworkGuard(refuse=[OUTSIDE])
        guard.start()
        try:
            with pytest.raises(NetworkBlocked, match=OUTSIDE):
                write(sock, b"<during>")
        finally:
            guard.stop()
        write(sock, b"<after>")
        assert peer.got(b"<after>")
        assert b"<during>" not in peer.received
        assert guard.refused and guard.refused[0].startswith(f"{OUTSIDE}:")
        sock.close()


def _recv_into(sock: socket.socket) -> Any:
    return sock.recv_into(bytearray(16))


#: Each way Python code reads from a connected socket, plain and TLS.
READS: dict[str, Callable[[socket.socket], Any]] = {
    "recv": lambda s: s.recv(16),
    "recv_into": _recv_into,
    "makefile": lambda s: s.makefile("rb", buffering=0).read(16),
}
READ_CASES = [("plain", n) for n in READS] + [("tls", n) for n in READS] + [("tls", "read")]


@pytest.mark.parametrize(("kind", "name"), READ_CASES)
def test_each_read_on_a_connection_opened_before_is_refused(
    tls_files: tuple[Path, Path], kind: str, name: str
) -> None:
    tls = kind == "tls"
    read = READS.get(name) or (lambda s: s.read(16))  # type: ignore[attr-defined]
    with serving(tls_files, tls) as peer:
        sock = _connect(peer, tls)
        sock.settimeout(0.2)
        guard = NetworkGuard(refuse=[OUTSIDE])
        guard.start()
        try:
            with pytest.raises(NetworkBlocked, match=OUTSIDE):
                read(sock)
        finally:
            guard.stop()
        with pytest.raises(TimeoutError):  # the read reached the socket: nothing came
            read(sock)
        sock.close()


def test_a_tls_handshake_on_a_socket_connected_before_is_refused(
    tls_files: tuple[Path, Path],
) -> None:
    with serving(tls_files, tls=True) as peer:
        sock = socket.create_connection(peer.address, timeout=5)
        guard = NetworkGuard(refuse=[OUTSIDE])
        guard.start()
        try:
            with pytest.raises(NetworkBlocked):
                peer.client_tls.wrap_socket(sock, server_hostname=OUTSIDE)
        finally:
            guard.stop()
        sock.close()
        assert peer.received == b""


def test_a_raw_c_socket_connect_is_refused() -> None:
    listener = socket.create_server((OUTSIDE, 0))
    guard = NetworkGuard(refuse=[OUTSIDE])
    guard.start()
    try:
        for make in (socket.SocketType, _socket.socket):
            raw = make(socket.AF_INET, socket.SOCK_STREAM)
            with pytest.raises(NetworkBlocked):
                raw.connect(listener.getsockname())
            raw.close()
        # The C type's methods called unbound on a socket.socket (SocketType is not it).
        for connect in (socket.SocketType.connect, _socket.socket.connect_ex):
            with socket.socket() as sock, pytest.raises(NetworkBlocked):
                connect(sock, listener.getsockname())
        with socket.create_server(("127.0.0.1", 0)) as inside:  # loopback still goes
            socket.SocketType(socket.AF_INET).connect(inside.getsockname())
    finally:
        guard.stop()
        listener.close()


def test_an_httpx_keep_alive_tls_connection_is_refused(tls_files: tuple[Path, Path]) -> None:
    import http.server

    cert, key = tls_files
    requests: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive

        def do_GET(self) -> None:
            requests.append(self.path)
            body = b"ok"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer((OUTSIDE, 0), Handler)
    server_tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_tls.load_cert_chain(cert, key)
    server.socket = server_tls.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True).start()
    url = f"https://{OUTSIDE}:{server.server_address[1]}/"
    try:
        verify = ssl.create_default_context(cafile=str(cert))
        with httpx.Client(verify=verify, timeout=30) as client:
            assert client.get(url).text == "ok"  # the pooled connection
            guard = NetworkGuard(refuse=[OUTSIDE])
            guard.start()
            try:
                with pytest.raises(httpx.HTTPError) as info:
                    client.get(url)
            finally:
                guard.stop()
            chain: list[BaseException] = []
            err: BaseException | None = info.value
            while err is not None and len(chain) < 10:
                chain.append(err)
                err = err.__cause__ or err.__context__
            assert any(isinstance(e, NetworkBlocked) for e in chain), chain
            assert len(requests) == 1
            assert client.get(url).text == "ok"
            assert len(requests) == 2
    finally:
        server.shutdown()
        server.server_close()


async def _asyncio_stream(peer: Peer, tls: bool) -> tuple[bool, list[str]]:
    host, port = peer.address
    _, writer = await asyncio.open_connection(
        host, port, ssl=peer.client_tls if tls else None, server_hostname=OUTSIDE if tls else None
    )
    writer.write(b"<before>")
    await writer.drain()
    guard = NetworkGuard(refuse=[OUTSIDE])
    guard.start()
    try:
        writer.write(b"<during>")
        try:
            await writer.drain()
            await asyncio.sleep(0.05)
        except OSError:
            pass
    finally:
        guard.stop()
    closing = writer.transport.is_closing()
    writer.close()
    return closing, guard.refused


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
def test_an_asyncio_stream_opened_before_is_refused(
    tls_files: tuple[Path, Path], tls: bool
) -> None:
    with serving(tls_files, tls) as peer:
        closing, refused = asyncio.run(_asyncio_stream(peer, tls))
        assert peer.got(b"<before>")
        time.sleep(0.1)
        assert b"<during>" not in peer.received
        assert closing and refused


#: Each resolver call that would ask a DNS server, and the target the guard names.
LOOKUPS: dict[str, Callable[[], Any]] = {
    "socket.getaddrinfo": lambda: socket.getaddrinfo("example.com", 443),
    "_socket.getaddrinfo": lambda: _socket.getaddrinfo("example.com", 443),
    "socket.gethostbyname": lambda: socket.gethostbyname("example.com"),
    "_socket.gethostbyname": lambda: _socket.gethostbyname("example.com"),
    "socket.gethostbyname_ex": lambda: socket.gethostbyname_ex("example.com"),
    "_socket.gethostbyname_ex": lambda: _socket.gethostbyname_ex("example.com"),
    "socket.gethostbyaddr name": lambda: socket.gethostbyaddr("example.com"),
    "socket.gethostbyaddr address": lambda: socket.gethostbyaddr("203.0.113.9"),
    "_socket.gethostbyaddr": lambda: _socket.gethostbyaddr("203.0.113.9"),
    "socket.getnameinfo": lambda: socket.getnameinfo(("203.0.113.9", 443), 0),
    "_socket.getnameinfo": lambda: _socket.getnameinfo(("203.0.113.9", 443), 0),
    "asyncio getaddrinfo": lambda: asyncio.run(_loop_getaddrinfo("example.com")),
}


async def _loop_getaddrinfo(host: str) -> Any:
    return await asyncio.get_running_loop().getaddrinfo(host, 443)


@pytest.mark.parametrize("name", list(LOOKUPS))
def test_each_resolver_is_guarded(name: str) -> None:
    guard = NetworkGuard()
    guard.start()
    try:
        with pytest.raises(LookupBlocked):
            LOOKUPS[name]()
        # What asks no server still answers: loopback names, numeric addresses.
        assert socket.gethostbyname("localhost").startswith("127.")
        numeric = socket.NI_NUMERICHOST | socket.NI_NUMERICSERV
        assert socket.getnameinfo(("203.0.113.9", 443), numeric) == ("203.0.113.9", "443")
        assert socket.gethostbyname("203.0.113.9") == "203.0.113.9"
    finally:
        guard.stop()
    assert guard.refused


#: Every attribute the guard replaces for the session, by owner.
PATCHED: list[tuple[Any, str]] = [
    *((socket.socket, n) for n in ("connect", "connect_ex", "sendto", "sendmsg")),
    *((socket.socket, n) for n in ("send", "sendall", "sendfile")),
    *((ssl.SSLSocket, n) for n in ("send", "sendall", "write", "sendfile", "do_handshake")),
    *((socket.socket, n) for n in ("recv", "recv_into")),
    *((ssl.SSLSocket, n) for n in ("recv", "recv_into", "read")),
    *((os, n) for n in ("write", "writev", "sendfile", "splice", "copy_file_range", "fdopen")),
    *((module, n) for module in (builtins, io, _io) for n in ("open",)),
    (io, "FileIO"),
    (_io, "FileIO"),
    *(
        (module, n)
        for module in (socket, _socket)
        for n in ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr")
    ),
    (socket, "getnameinfo"),
    (_socket, "getnameinfo"),
    (_socket, "socket"),
    (socket, "SocketType"),
]


def test_everything_replaced_is_put_back() -> None:
    before = {(o, n): vars(o).get(n, _MISSING) for o, n in PATCHED}
    guard = NetworkGuard()
    guard.start()
    try:
        during = {(o, n): vars(o).get(n, _MISSING) for o, n in PATCHED}
        changed = [k for k in PATCHED if during[k] is before[k]]
        assert changed == [], f"not guarded: {changed}"
        with socket.socket() as s:  # isinstance holds for sockets made before or after
            assert isinstance(s, socket.SocketType) and isinstance(s, _socket.socket)
    finally:
        guard.stop()
    after = {(o, n): vars(o).get(n, _MISSING) for o, n in PATCHED}
    assert after == before


# --- Each guarded function takes what the original takes --------------------------------
#
# The class of input: a call of a function the guard replaces, with any of the original's
# parameters passed by position or by keyword, defaults left out or not.  Under the guard
# an allowed call ends as it ends without it (same value, or same exception type), and a
# call to a refused host or name that the original accepts in that shape is refused
# (NetworkBlocked), never a TypeError of the guard's own.

Params = list[tuple[str, Any]]


@dataclass
class Env:
    """A server on 127.0.0.2, plain and TLS, a UDP socket there; what the calls opened."""

    plain: Peer
    tls: Peer
    udp: tuple[str, int]
    opened: list[Any] = field(default_factory=list)

    def connected(self, tls: bool = False) -> socket.socket:
        sock = _connect(self.tls if tls else self.plain, tls)
        sock.settimeout(0.05)
        self.opened.append(sock)
        return sock

    def new(self, kind: int = socket.SOCK_STREAM) -> socket.socket:
        sock = socket.socket(socket.AF_INET, kind)
        sock.settimeout(0.5)
        self.opened.append(sock)
        return sock

    def fd(self, tls: bool = False) -> int:
        """A duplicate of a connected socket's descriptor (a file object may close it)."""
        return os.dup(self.connected(tls).fileno())

    def file(self, data: bytes = b"f") -> Any:
        f = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close())
        f.write(data)
        f.seek(0)
        self.opened.append(f)
        return f

    def pipe(self) -> int:
        r, w = os.pipe()
        os.write(w, b"p")
        os.close(w)
        return r

    def close(self) -> None:
        for thing in self.opened:
            thing.close()
        self.opened.clear()


def _late(owner: Any, name: str) -> Callable[..., Any]:
    """``owner.name`` called as it is when called (the guarded one during the session)."""
    return lambda *a, **k: getattr(owner, name)(*a, **k)


def _host(refused: bool) -> str:
    return "refused.invalid" if refused else "localhost"


def _ip(refused: bool) -> str:
    return "203.0.113.9" if refused else "127.0.0.1"


def _resolvers(module: Any) -> dict[str, Callable[[Env, bool], tuple[Callable[..., Any], Params]]]:
    prefix = module.__name__
    return {
        f"{prefix}.getaddrinfo": lambda e, r: (
            lambda *a, **k: module.getaddrinfo(*a, **k),
            [
                *[("host", _host(r)), ("port", 80), ("family", socket.AF_INET)],
                *[("type", socket.SOCK_STREAM), ("proto", 0), ("flags", 0)],
            ],
        ),
        f"{prefix}.gethostbyname": lambda e, r: (
            lambda *a, **k: module.gethostbyname(*a, **k),
            [("hostname", _host(r))],
        ),
        f"{prefix}.gethostbyname_ex": lambda e, r: (
            lambda *a, **k: module.gethostbyname_ex(*a, **k),
            [("hostname", _host(r))],
        ),
        f"{prefix}.gethostbyaddr": lambda e, r: (
            lambda *a, **k: module.gethostbyaddr(*a, **k),
            [("ip_address", _ip(r))],
        ),
        f"{prefix}.getnameinfo": lambda e, r: (
            lambda *a, **k: module.getnameinfo(*a, **k),
            [("sockaddr", (_ip(r), 80)), ("flags", 0)],
        ),
    }


def _tls_calls() -> dict[str, Callable[[Env, bool], tuple[Callable[..., Any], Params]]]:
    def method(name: str, params: Callable[[Env], Params]) -> Any:
        return lambda e, r: (_late(e.connected(True), name), params(e))

    return {
        "ssl send": method("send", lambda e: [("data", b"t"), ("flags", 0)]),
        "ssl sendall": method("sendall", lambda e: [("data", b"t"), ("flags", 0)]),
        "ssl write": method("write", lambda e: [("data", b"t")]),
        "ssl sendfile": method("sendfile", lambda e: [("file", e.file()), ("offset", 0)]),
        "ssl do_handshake": method("do_handshake", lambda e: [("block", False)]),
        "ssl recv": method("recv", lambda e: [("buflen", 8), ("flags", 0)]),
        "ssl recv_into": method(
            "recv_into", lambda e: [("buffer", bytearray(8)), ("nbytes", 8), ("flags", 0)]
        ),
        "ssl read": method("read", lambda e: [("len", 8), ("buffer", None)]),
    }


#: name -> (how many parameters the call needs, make (function, its parameters in order)).
SIGNATURES: dict[str, tuple[int, Callable[[Env, bool], tuple[Callable[..., Any], Params]]]] = {
    **{name: (1, make) for name, make in _resolvers(socket).items()},
    **{name: (1, make) for name, make in _resolvers(_socket).items()},
    "connect": (
        1,
        lambda e, r: (_late(e.new(), "connect"), [("address", e.plain.address)]),
    ),
    "connect_ex": (
        1,
        lambda e, r: (_late(e.new(), "connect_ex"), [("address", e.plain.address)]),
    ),
    "create_connection": (
        1,
        lambda e, r: (
            _late(socket, "create_connection"),
            [("address", e.plain.address), ("timeout", 5), ("source_address", None)],
        ),
    ),
    "sendto": (
        2,
        lambda e, r: (
            _late(e.new(socket.SOCK_DGRAM), "sendto"),
            [("data", b"u"), ("flags", 0), ("address", e.udp)],
        ),
    ),
    "sendmsg": (
        1,
        lambda e, r: (
            _late(e.connected(), "sendmsg"),
            [("buffers", [b"m"]), ("ancdata", []), ("flags", 0), ("address", None)],
        ),
    ),
    "send": (1, lambda e, r: (_late(e.connected(), "send"), [("data", b"s"), ("flags", 0)])),
    "sendall": (1, lambda e, r: (_late(e.connected(), "sendall"), [("data", b"s"), ("flags", 0)])),
    "recv": (1, lambda e, r: (_late(e.connected(), "recv"), [("bufsize", 8), ("flags", 0)])),
    "recv_into": (
        1,
        lambda e, r: (
            _late(e.connected(), "recv_into"),
            [("buffer", bytearray(8)), ("nbytes", 8), ("flags", 0)],
        ),
    ),
    "sendfile": (
        1,
        lambda e, r: (
            _late(e.connected(), "sendfile"),
            [("file", e.file()), ("offset", 0), ("count", None)],
        ),
    ),
    **{name: (1, make) for name, make in _tls_calls().items()},
    "os.write": (
        2,
        lambda e, r: (_late(os, "write"), [("fd", e.connected().fileno()), ("data", b"w")]),
    ),
    "os.writev": (
        2,
        lambda e, r: (_late(os, "writev"), [("fd", e.connected().fileno()), ("buffers", [b"w"])]),
    ),
    "os.sendfile": (
        4,
        lambda e, r: (
            _late(os, "sendfile"),
            [
                *[("out_fd", e.connected().fileno()), ("in_fd", e.file().fileno())],
                *[("offset", 0), ("count", 1)],
            ],
        ),
    ),
    "os.splice": (
        3,
        lambda e, r: (
            _late(os, "splice"),
            [
                *[("src", e.pipe()), ("dst", e.connected().fileno()), ("count", 1)],
                *[("offset_src", None), ("offset_dst", None), ("flags", 0)],
            ],
        ),
    ),
    "os.copy_file_range": (
        3,
        lambda e, r: (
            _late(os, "copy_file_range"),
            [
                *[("src", e.file().fileno()), ("dst", e.connected().fileno()), ("count", 1)],
                *[("offset_src", None), ("offset_dst", None)],
            ],
        ),
    ),
    "open": (
        1,
        lambda e, r: (
            lambda *a, **k: open(*a, **k),  # noqa: SIM115
            [
                *[("file", e.fd()), ("mode", "wb"), ("buffering", 0), ("encoding", None)],
                *[("errors", None), ("newline", None), ("closefd", True), ("opener", None)],
            ],
        ),
    ),
    "io.open": (
        1,
        lambda e, r: (
            lambda *a, **k: io.open(*a, **k),  # noqa: SIM115, UP020
            [("file", e.fd()), ("mode", "wb"), ("buffering", 0)],
        ),
    ),
    "os.fdopen": (
        1,
        lambda e, r: (
            lambda *a, **k: os.fdopen(*a, **k),
            [("fd", e.fd()), ("mode", "wb"), ("buffering", 0)],
        ),
    ),
    "io.FileIO": (
        1,
        lambda e, r: (
            lambda *a, **k: io.FileIO(*a, **k),
            [("file", e.fd()), ("mode", "wb"), ("closefd", True), ("opener", None)],
        ),
    ),
}


def _outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    try:
        value = call()
    except Exception as exc:  # what the call raised: compared by type
        return "raised", type(exc)
    if isinstance(value, (int, str, bytes, tuple, list, type(None))):
        return "returned", value
    if hasattr(value, "close"):
        value.close()
    return "returned", type(value).__name__  # the guard's FileIO is a subclass, named alike


@pytest.fixture(scope="module")
def env(tls_files: tuple[Path, Path]) -> Iterator[Env]:
    with serving(tls_files, False) as plain, serving(tls_files, True) as tls:
        udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        udp.bind((OUTSIDE, 0))
        got = Env(plain, tls, udp.getsockname()[:2])
        try:
            yield got
        finally:
            got.close()
            udp.close()


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_each_guarded_function_takes_the_originals_arguments(env: Env, data: Any) -> None:
    name = data.draw(st.sampled_from(sorted(SIGNATURES)), label="function")
    needs, make = SIGNATURES[name]

    def shape(params: Params) -> tuple[list[Any], dict[str, Any]]:
        return [v for _, v in params[:positional]], dict(params[positional:given])

    total = len(make(env, False)[1])
    env.close()
    given = data.draw(st.integers(min(needs, total), total), label="passed")
    positional = data.draw(st.integers(0, given), label="by position")
    try:
        fn, params = make(env, False)
        args, kwargs = shape(params)
        unguarded = _outcome(lambda: fn(*args, **kwargs))
        fn, params = make(env, False)
        args, kwargs = shape(params)
        guard = NetworkGuard()
        guard.start()
        try:
            guarded = _outcome(lambda: fn(*args, **kwargs))
        finally:
            guard.stop()
        assert guarded == unguarded, (name, args, kwargs)

        fn, params = make(env, True)
        args, kwargs = shape(params)
        guard = NetworkGuard(refuse=[OUTSIDE])
        guard.start()
        try:
            refused = _outcome(lambda: fn(*args, **kwargs))
        finally:
            guard.stop()
        if unguarded[0] == "returned":
            assert refused[0] == "raised" and issubclass(refused[1], NetworkBlocked), (
                name,
                args,
                kwargs,
                refused,
            )
        else:  # a shape the original does not take: its error, or the guard's refusal
            assert refused[1] is unguarded[1] or issubclass(refused[1], NetworkBlocked)
    finally:
        env.close()


# --- Names under localhost. ---------------------------------------------------------------
#
# The class of input: a name under ``localhost.`` (RFC 6761: loopback, whatever the labels,
# their case, a final dot), looked up or connected to during the session.  The guard
# answers loopback itself; the resolver below it (which may ask a DNS server) never sees
# the name.

_LABEL = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12).filter(
    lambda s: not s.startswith("-") and not s.endswith("-")
)


@st.composite
def _local_names(draw: st.DrawFn) -> str:
    labels = draw(st.lists(_LABEL, min_size=1, max_size=3))
    suffix = draw(st.sampled_from(["localhost", "LOCALHOST", "LocalHost"]))
    return ".".join([*labels, suffix]) + draw(st.sampled_from(["", "."]))


def _addresses(module: Any) -> Callable[[str, int], Any]:
    return lambda n, p: {a[4][0] for a in module.getaddrinfo(host=n, port=p)}


def _looked_up(module: Any, function: str) -> Callable[[str, int], Any]:
    return lambda n, p: getattr(module, function)(n)


#: How the name is used: each returns the loopback address it got.
LOCAL_USES: dict[str, Callable[[str, int], Any]] = {
    **{f"{m.__name__}.getaddrinfo": _addresses(m) for m in (socket, _socket)},
    **{
        f"{m.__name__}.{f}": _looked_up(m, f)
        for m in (socket, _socket)
        for f in ("gethostbyname", "gethostbyname_ex", "gethostbyaddr")
    },
    "connect": lambda n, p: _connect_to(n, p),
    "create_connection": lambda n, p: _closed(socket.create_connection((n, p), timeout=5)),
}


def _closed(sock: socket.socket) -> str:
    with sock:
        return str(sock.getpeername()[0])


def _connect_to(name: str, port: int) -> str:
    sock = socket.socket()
    sock.settimeout(5)
    sock.connect((name, port))
    return _closed(sock)


@settings(max_examples=60, deadline=None)
@given(name=_local_names(), use=st.sampled_from(sorted(LOCAL_USES)))
def test_a_name_under_localhost_is_answered_without_the_resolver(name: str, use: str) -> None:
    asked: list[str] = []
    saved = {(m, f): vars(m)[f] for m in (socket, _socket) for f in LOOKUP_NAMES}

    def recorder(original: Any) -> Any:
        def resolve(*args: Any, **kwargs: Any) -> Any:
            host = args[0] if args else next(iter(kwargs.values()), None)
            asked.append(str(host[0] if isinstance(host, tuple) else host))
            return original(*args, **kwargs)

        return resolve

    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        for (module, f), original in saved.items():
            setattr(module, f, recorder(original))
        guard = NetworkGuard()
        guard.start()
        try:
            got = LOCAL_USES[use](name, port)
        finally:
            guard.stop()
            for (module, f), original in saved.items():
                setattr(module, f, original)
    assert "127.0.0.1" in str(got) or "::1" in str(got), got
    assert not [h for h in asked if "localhost" in h.lower() and h != "localhost"], asked
    assert not guard.refused


LOOKUP_NAMES = ("getaddrinfo", "gethostbyname", "gethostbyname_ex", "gethostbyaddr", "getnameinfo")


@pytest.mark.parametrize("connections", [1, 3, 7])
def test_connections_opened_before_are_named_when_the_session_starts(
    tls_files: tuple[Path, Path], connections: int, caplog: pytest.LogCaptureFixture
) -> None:
    """What the guard cannot see (a raw socket or file object made before the session
    writes below its patches) is said once, naming the peers, when it starts."""
    with serving(tls_files, False) as peer:
        socks = [_connect(peer, False) for _ in range(connections)]
        allowed = socket.create_connection(("127.0.0.1", _listening_port()))
        guard = NetworkGuard(refuse=[OUTSIDE])
        ours = f"{OUTSIDE}:{peer.address[1]}"
        try:
            outside = guard.connected_outside()
            assert outside.count(ours) == connections
            with caplog.at_level("WARNING", logger="otel_replay"):
                guard.start()
        finally:
            guard.stop()
            for s in [*socks, allowed]:
                s.close()
    (record,) = [r for r in caplog.records if "opened before the replay" in r.getMessage()]
    message = record.getMessage()
    assert f"{len(outside)} connection(s) opened before the replay" in message
    assert f"{OUTSIDE}:" in message
    assert "127.0.0.1:" not in message  # an allowed peer is not named
    assert ours not in NetworkGuard().connected_outside()  # 127.0.0.2 is loopback: allowed


_held: list[socket.socket] = []


def _listening_port() -> int:
    """A listener on 127.0.0.1 kept for the test run (the allowed peer)."""
    listener = socket.create_server(("127.0.0.1", 0))
    _held.append(listener)
    return int(listener.getsockname()[1])
