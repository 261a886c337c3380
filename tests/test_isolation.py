"""The strong network guard: ``otel-replay replay --isolate`` and ``pytest --replay-isolate``.

The agent replayed is the worked example's, wrapped so that before answering
it reaches out the way the in-process guard cannot see: libc ``connect``
through ctypes, and a subprocess (``curl``-like, in Python), both to a TCP
server this test runs on the machine's own non-loopback address.  Without
isolation both get through (which is why the option exists); with it,
neither does, and the replay still matches.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from _cli import python_process
from otel_replay.replay import isolation

ROOT = Path(__file__).resolve().parents[1]
CASE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"

AGENT = '''\
import ctypes, os, socket, struct, subprocess, sys

from examples.order_support.agent import run_agent


def native_connect() -> str:
    """libc connect(), as native code would call it: no Python socket is involved."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    address = (
        struct.pack("=H", socket.AF_INET)
        + struct.pack("!H", int(os.environ["TARGET_PORT"]))
        + socket.inet_aton(os.environ["TARGET_HOST"])
        + bytes(8)
    )
    done = libc.connect(fd, address, len(address))
    err = ctypes.get_errno()
    libc.close(fd)
    return "connected" if done == 0 else os.strerror(err)


def child_connect() -> str:
    code = (
        "import os, socket\\n"
        "try:\\n"
        "    socket.create_connection((os.environ['TARGET_HOST'], int(os.environ['TARGET_PORT'])), 3)\\n"
        "    print('connected')\\n"
        "except OSError as exc:\\n"
        "    print(exc.strerror or exc)\\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip()


def agent(question, model=None, user_id=None):
    with open(os.environ["REACHED"], "w") as f:
        f.write(native_connect() + "\\n" + child_connect())
    return run_agent(question, model=model, user_id=user_id)
'''


def _own_address() -> str | None:
    """A non-loopback IPv4 address of this machine (no packet is sent to find it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))  # TEST-NET-1: routing only
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


@pytest.fixture
def target() -> Iterator[tuple[str, int, list[int]]]:
    """A TCP server on the machine's own address; the connections it accepted, counted."""
    host = _own_address()
    if host is None:
        pytest.skip("this machine has no non-loopback IPv4 address to reach")
    server = socket.create_server(("0.0.0.0", 0))
    accepted: list[int] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            conn.close()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield host, server.getsockname()[1], accepted
    finally:
        server.close()


def _python(cwd: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Python with ``args`` in ``cwd``, which must succeed; its output captured."""
    done = python_process(*args, cwd=cwd, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def _replay(tmp_path: Path, target: tuple[str, int, list[int]], *flags: str) -> tuple[str, str]:
    (tmp_path / "reaching_agent.py").write_text(AGENT)
    shutil.copy(CASE, tmp_path / "case.otlp")
    host, port, _ = target
    reached = tmp_path / "reached.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), str(ROOT / "src")]),
        "TARGET_HOST": host,
        "TARGET_PORT": str(port),
        "REACHED": str(reached),
    }
    env.pop("OTEL_REPLAY_ISOLATE", None)
    done = _python(
        tmp_path,
        env,
        *("-m", "otel_replay.cli.main", "replay", "case.otlp"),
        *("--agent", "reaching_agent:agent", "--kwarg", "user_id=@user.id", *flags),
    )
    assert "MATCHED" in done.stdout
    return reached.read_text(), done.stderr


def test_without_isolation_native_code_and_children_get_through(
    tmp_path: Path, target: tuple[str, int, list[int]]
) -> None:
    reached, _ = _replay(tmp_path, target)
    assert reached.splitlines() == ["connected", "connected"]
    assert len(target[2]) == 2


def test_isolated_nothing_gets_through(tmp_path: Path, target: tuple[str, int, list[int]]) -> None:
    reason = isolation.unavailable()
    if reason is not None:
        pytest.skip(f"network namespaces unavailable here: {reason}")
    reached, _ = _replay(tmp_path, target, "--isolate")
    native, child = reached.splitlines()
    assert native != "connected" and child != "connected", reached
    assert target[2] == []


def test_isolation_unavailable_warns_and_keeps_the_guard(
    tmp_path: Path, target: tuple[str, int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No unshare on PATH: the replay goes on, saying the guard is the in-process one.
    bare = tmp_path / "bin"
    bare.mkdir()
    monkeypatch.setenv("PATH", str(bare))
    reached, stderr = _replay(tmp_path, target, "--isolate")
    assert "--isolate: the unshare command" in stderr and "in-process network guard" in stderr
    assert reached.splitlines()[0] == "connected"  # native code: what the warning says


PYTEST_FILE = """\
import ctypes, os, socket, struct

import pytest


def test_no_network_but_loopback():
    assert os.environ.get("OTEL_REPLAY_ISOLATED") == "1"
    with pytest.raises(OSError):
        socket.create_connection((os.environ["TARGET_HOST"], int(os.environ["TARGET_PORT"])), 3)
    server = socket.create_server(("127.0.0.1", 0))  # loopback works
    socket.create_connection(server.getsockname(), 3).close()
"""


@pytest.mark.slow
def test_pytest_replay_isolate_runs_the_tests_in_a_namespace(
    tmp_path: Path, target: tuple[str, int, list[int]]
) -> None:
    reason = isolation.unavailable()
    if reason is not None:
        pytest.skip(f"network namespaces unavailable here: {reason}")
    (tmp_path / "test_inside.py").write_text(PYTEST_FILE)
    host, port, accepted = target
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "TARGET_HOST": host,
        "TARGET_PORT": str(port),
    }
    done = _python(
        tmp_path,
        env,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--replay-isolate",
        "test_inside.py",
    )
    assert "1 passed" in done.stdout and accepted == []
