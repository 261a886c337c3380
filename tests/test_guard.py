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

import _socket
import asyncio
import contextlib
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

from otel_replay.replay.network import LookupBlocked, NetworkBlocked, NetworkGuard

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
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
    *((os, n) for n in ("write", "writev", "sendfile")),
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
