"""The strong network guard: a replay run again in a network namespace with only loopback.

The in-process guard (:mod:`otel_replay.replay.network`) sees what Python's
socket module is asked; a subprocess, native code or ``ctypes`` calling libc
``connect`` goes around it.  Linux can take the network away instead:
``unshare --net`` (with ``--map-root-user``, so that no privilege is needed
where unprivileged user namespaces are allowed) gives a child a network
stack of its own holding only a loopback interface, which the child brings
up.  Nothing the agent or its children do can then leave the machine, or
reach the host's own services on its loopback.

``otel-replay replay --isolate`` and the pytest plugin's ``--replay-isolate``
run themselves again that way; where namespaces are not available they say
why, once, and go on with the in-process guard.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import struct
import subprocess
import sys
from collections.abc import Sequence
from typing import Final

#: Set in the re-run child: it is in the namespace (and must not re-run itself again).
OTEL_REPLAY_ISOLATED: Final = "OTEL_REPLAY_ISOLATED"

_UNSHARE: Final = ("--net", "--map-root-user")
_SIOCGIFFLAGS: Final = 0x8913
_SIOCSIFFLAGS: Final = 0x8914
_IFF_UP: Final = 0x1
#: struct ifreq: the interface name, then (in a 24-byte union) its flags.
_IFREQ: Final = "16sH22x"


def isolated() -> bool:
    """True in a child this module started in a network namespace."""
    return os.environ.get(OTEL_REPLAY_ISOLATED) == "1"


def unavailable() -> str | None:
    """Why a network namespace cannot be had here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux's ({sys.platform} has none)"
    unshare = shutil.which("unshare")
    if unshare is None:
        return "the unshare command (util-linux) is not installed"
    try:
        probe = subprocess.run(
            [unshare, *_UNSHARE, "true"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare could not run: {exc}"
    if probe.returncode != 0:
        return f"unshare was refused: {probe.stderr.strip() or probe.returncode}"
    return None


def run_isolated(argv: Sequence[str]) -> int:
    """Run ``argv`` (a Python program's arguments after the interpreter) in a namespace.

    The child is marked (:data:`OTEL_REPLAY_ISOLATED`), brings loopback up
    before anything else (:func:`loopback_up`), and inherits this process's
    working directory, environment and standard streams; its exit code is
    returned.
    """
    unshare = shutil.which("unshare") or "unshare"
    env = {**os.environ, OTEL_REPLAY_ISOLATED: "1"}
    return subprocess.call([unshare, *_UNSHARE, sys.executable, *argv], env=env)


def loopback_up() -> None:
    """Bring up the namespace's loopback interface (down in a new namespace).

    Done with the ioctl ``ip link set lo up`` makes, so that no ``ip`` command
    is needed; raises :class:`OSError` when the interface cannot be raised.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        got = fcntl.ioctl(sock, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0))
        flags = struct.unpack(_IFREQ, got)[1]
        if not flags & _IFF_UP:
            fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))
