"""Socket families that are no IP's: during a replay only those that stay on the
machine (Unix sockets, netlink, the kernel's crypto API) carry anything; every other
family (raw frames, VSOCK to a hypervisor, TIPC, RDS, CAN, Bluetooth...) is refused
like an address that is not allowed, whichever call would send."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from otel_replay.replay.network import NetworkBlocked, NetworkGuard

IP = {socket.AF_INET, socket.AF_INET6}
LOCAL = {getattr(socket, n) for n in ("AF_UNIX", "AF_NETLINK", "AF_ALG") if hasattr(socket, n)}
#: Every family this Python knows, but IP's and AF_UNSPEC.
FAMILIES = sorted(
    (f for f in socket.AddressFamily if f not in IP and f != socket.AF_UNSPEC), key=int
)


class Stand:
    """What the guard reads of a socket: its family and its peer."""

    def __init__(self, family: Any) -> None:
        self.family = family

    def getpeername(self) -> Any:
        raise OSError("not connected")


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_only_families_that_stay_on_the_machine_go_through(family: socket.AddressFamily) -> None:
    guard = NetworkGuard()
    if family in LOCAL:
        guard._check(Stand(family), "/run/some.sock")
        guard._check_peer(Stand(family))
    else:
        with pytest.raises(NetworkBlocked, match=family.name):
            guard._check(Stand(family), ("eth0", 0x88B5))
        with pytest.raises(NetworkBlocked, match=family.name):
            guard._check_peer(Stand(family))
    assert len(FAMILIES) >= 10  # the class is drawn wide: every family the platform has


def test_a_raw_frame_on_a_real_packet_socket_is_refused() -> None:
    try:
        raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x88B5))
    except (OSError, AttributeError) as exc:
        pytest.skip(f"no packet socket here ({exc}): the stand-in test covers the family")
    guard = NetworkGuard()
    guard.start()
    try:
        with pytest.raises(NetworkBlocked):
            raw.sendto(b"\xff" * 6 + b"\x00" * 6 + b"\x88\xb5" + b"x" * 46, ("lo", 0x88B5))
        with pytest.raises(NetworkBlocked):
            raw.send(b"x" * 60)
    finally:
        guard.stop()
        raw.close()
    a, b = socket.socketpair()  # Unix sockets still go, under a guard
    guard.start()
    try:
        a.sendall(b"ok")
        assert b.recv(2) == b"ok"
    finally:
        guard.stop()
        a.close()
        b.close()
