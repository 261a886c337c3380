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
import sys
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.replay import isolation
from tests.fixtures.cli import python_process
from tests.fixtures.data import ROOT

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


def _accepting(server: socket.socket, count: Callable[[], object]) -> None:
    """Accept (and close) every connection to ``server`` until it closes, counting each."""

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            count()
            conn.close()

    threading.Thread(target=accept, daemon=True).start()


@pytest.fixture
def target() -> Iterator[tuple[str, int, list[int]]]:
    """A TCP server on the machine's own address; the connections it accepted, counted."""
    host = _own_address()
    if host is None:
        pytest.skip("this machine has no non-loopback IPv4 address to reach")
    server = socket.create_server(("0.0.0.0", 0))
    accepted: list[int] = []
    _accepting(server, lambda: accepted.append(1))
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
    host, port, _ = target
    return _replay_agent(tmp_path, AGENT, {"TARGET_HOST": host, "TARGET_PORT": str(port)}, *flags)


def _replay_agent(
    tmp_path: Path, source: str, extra: dict[str, str], *flags: str
) -> tuple[str, str]:
    """The worked example's case replayed with the agent ``source`` (which writes what it
    reached to $REACHED); what it wrote and the replay's stderr."""
    (tmp_path / "reaching_agent.py").write_text(source)
    shutil.copy(CASE, tmp_path / "case.otlp")
    reached = tmp_path / "reached.txt"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), str(ROOT / "src")]),
        "REACHED": str(reached),
        **extra,
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


def test_a_refused_mount_warns_and_keeps_the_guard(
    tmp_path: Path, target: tuple[str, int, list[int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Namespaces allowed, mounting in them not: the replay does not run half isolated.
    if isolation.unavailable() is not None:
        pytest.skip("namespaces unavailable here")
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("unshare", "sh"):
        (bare / tool).symlink_to(shutil.which(tool) or tool)
    (bare / "mount").write_text('#!/bin/sh\necho "mount: permission denied" >&2\nexit 32\n')
    (bare / "mount").chmod(0o755)
    monkeypatch.setenv("PATH", str(bare))
    reached, stderr = _replay(tmp_path, target, "--isolate")
    assert "mount: permission denied" in stderr and "in-process network guard" in stderr
    assert reached.splitlines()[0] == "connected"


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


UNIX_AGENT = """\
import os, socket

from examples.order_support.agent import run_agent


def agent(question, model=None, user_id=None):
    reached = []
    for name in os.environ["SOCKETS"].split("|"):
        address = "\\0" + name[1:] if name.startswith("@") else name
        with socket.socket(socket.AF_UNIX) as s:
            try:
                s.connect(address)
                reached.append("connected")
            except OSError as exc:
                reached.append(exc.strerror or str(exc))
    with open(os.environ["REACHED"], "w") as f:
        f.write("\\n".join(reached))
    return run_agent(question, model=model, user_id=user_id)
"""


def _unix_server(address: str, accepted: list[str]) -> socket.socket:
    server = socket.socket(socket.AF_UNIX)
    server.bind("\0" + address[1:] if address.startswith("@") else address)
    server.listen()
    _accepting(server, lambda: accepted.append(address))
    return server


def _socket_places(tmp_path: Path) -> Iterator[str]:
    """Where host services bind Unix sockets, as this machine lets the test bind one."""
    yield str(tmp_path / "beside-the-case.sock")  # the replay's own directory, in /tmp
    (tmp_path / "run").mkdir()
    yield str(tmp_path / "run" / "inside-the-project.sock")
    for runtime in ("/run", "/dev/shm", "/var/tmp", "/tmp"):
        try:
            yield os.path.join(tempfile.mkdtemp(dir=runtime, prefix="otel-replay-"), "s.sock")
        except OSError:
            continue  # not writable here
    yield f"@otel-replay-test-{os.getpid()}-{uuid.uuid4().hex}"  # abstract


@pytest.fixture
def unix_servers(tmp_path: Path) -> Iterator[tuple[list[str], list[str]]]:
    """Unix socket servers of the host, bound before the replay starts; what they accepted."""
    accepted: list[str] = []
    addresses = list(_socket_places(tmp_path))
    servers = [_unix_server(a, accepted) for a in addresses]
    try:
        yield addresses, accepted
    finally:
        for server in servers:
            server.close()
        for a in addresses:
            if not a.startswith("@") and not a.startswith(str(tmp_path)):
                shutil.rmtree(os.path.dirname(a), ignore_errors=True)


def test_without_isolation_unix_sockets_of_the_host_are_reached(
    tmp_path: Path, unix_servers: tuple[list[str], list[str]]
) -> None:
    addresses, accepted = unix_servers
    reached, _ = _replay_agent(tmp_path, UNIX_AGENT, {"SOCKETS": "|".join(addresses)})
    assert reached.splitlines() == ["connected"] * len(addresses)
    assert sorted(accepted) == sorted(addresses)


def test_isolated_no_unix_socket_of_the_host_is_reached(
    tmp_path: Path, unix_servers: tuple[list[str], list[str]]
) -> None:
    reason = isolation.unavailable()
    if reason is not None:
        pytest.skip(f"namespaces unavailable here: {reason}")
    addresses, accepted = unix_servers
    env = {"SOCKETS": "|".join(addresses)}
    reached, _ = _replay_agent(tmp_path, UNIX_AGENT, env, "--isolate")  # still MATCHED
    outcomes = dict(zip(addresses, reached.splitlines(), strict=True))
    assert "connected" not in outcomes.values(), outcomes
    assert accepted == []


def test_the_hosts_socket_table_is_read(tmp_path: Path) -> None:
    path = str(tmp_path / "listed.sock")
    with socket.socket(socket.AF_UNIX) as bound:
        bound.bind(path)
        bound.listen()
        assert path in isolation.host_unix_sockets()


_part = st.text(alphabet="abc.-_ ", min_size=1, max_size=4).filter(lambda p: p not in (".", ".."))
_dirs = st.lists(_part, min_size=0, max_size=3).map(lambda parts: "/".join(parts))
_tops = st.sampled_from(["/run", "/tmp", "/var/tmp", "/dev/shm", "/home/u", "/srv", "/dev", "/"])


@st.composite
def _paths(draw: st.DrawFn) -> str:
    top, below = draw(_tops), draw(_dirs)
    return os.path.join(top, below) if below else top


@given(
    sockets=st.lists(_paths().map(lambda d: os.path.join(d, "s.sock")), max_size=8),
    needed=st.lists(_paths(), max_size=4),
)
@settings(max_examples=300, deadline=None)
def test_every_socket_is_hidden_and_no_needed_path_is(
    sockets: list[str], needed: list[str]
) -> None:
    dirs, files = isolation.hiding_plan(sockets, needed, always=("/run",))
    kept = isolation.kept_paths(dirs, needed)

    def within(path: str, top: str) -> bool:
        return path == top or path.startswith(top.rstrip("/") + "/")

    for sock in sockets:  # each socket: under a replaced directory (not put back), or covered
        hidden = any(within(sock, d) for d in dirs) and not any(within(sock, k) for k in kept)
        assert hidden or sock in files, (sock, dirs, kept, files)
    for d in dirs:
        # Only runtime and temporary directories are replaced; none that lies inside a
        # needed path (other than "/"), and a needed path inside one is put back.
        assert any(within(d, r) for r in ("/run", "/tmp", "/var/tmp", "/dev/shm")), d
        assert not any(within(d, n) for n in needed if n != "/"), (d, needed)
        for n in needed:
            assert not within(n, d) or any(within(n, k) for k in kept), (d, n, kept)
        assert not any(within(d, other) for other in dirs if other != d)  # none twice
    for k in kept:
        assert any(within(k, d) and k != d for d in dirs), (k, dirs)
    # Where services bind sockets later too: hidden unless the replay itself lives
    # there, whatever needed path lies inside it.
    if not any(n != "/" and within("/run", n) for n in needed):
        assert "/run" in dirs, (needed, dirs)


_VARIABLE = st.from_regex(r"[A-Z][A-Z0-9_]{0,12}", fullmatch=True).filter(
    lambda k: not k.startswith("OTEL_REPLAY_")
)


@given(
    variables=st.dictionaries(_VARIABLE, st.lists(st.sampled_from("abcd"), min_size=1), max_size=4)
)
@settings(max_examples=50, deadline=None)
def test_a_variable_naming_a_directory_does_not_keep_it_from_being_hidden(
    variables: dict[str, list[str]],
) -> None:
    """The class: environment variables (``PGHOST=/run/postgresql``, any name but
    otel-replay's own) naming directories, one or several (``a:b``)."""
    with tempfile.TemporaryDirectory(dir="/tmp") as top:
        for name in "abcd":
            os.mkdir(os.path.join(top, name))
        values = {
            k: os.pathsep.join(os.path.join(top, v) for v in vs) for k, vs in variables.items()
        }
        saved = {k: os.environ.get(k) for k in values}
        os.environ.update(values)
        try:
            needed = isolation.needed_paths(["-m", "otel_replay.cli.main", "replay"])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        named = {os.path.realpath(os.path.join(top, v)) for vs in variables.values() for v in vs}
        assert not named & set(needed), named & set(needed)


@given(
    places=st.lists(
        st.lists(st.sampled_from(["x", "y", "z z"]), max_size=3), min_size=1, max_size=5
    )
)
@settings(max_examples=40, deadline=None)
def test_every_hard_link_to_a_socket_is_found(places: list[list[str]]) -> None:
    """The class: a socket with hard links at any depth beside it or elsewhere on its
    file system; each name is one to hide."""
    with tempfile.TemporaryDirectory(dir="/tmp") as top, socket.socket(socket.AF_UNIX) as s:
        path = os.path.join(top, "bound.sock")
        s.bind(path)
        links = set()
        for i, parts in enumerate(places):
            directory = os.path.join(top, *parts)
            os.makedirs(directory, exist_ok=True)
            link = os.path.join(directory, f"link-{i}.sock")
            os.link(path, link)
            links.add(link)
        assert set(isolation.socket_names([path])) == {path, *links}


def test_isolated_hard_links_and_the_directory_around_the_replay_are_hidden(
    tmp_path: Path,
) -> None:
    """A host socket beside the replay's directory (its directory is replaced, the
    replay's put back) and hard links to it, in the replay's directory and elsewhere."""
    reason = isolation.unavailable()
    if reason is not None:
        pytest.skip(f"namespaces unavailable here: {reason}")
    work = tmp_path / "replay"
    (work / "sub").mkdir(parents=True)
    (tmp_path / "other").mkdir()
    accepted: list[str] = []
    bound = str(tmp_path / "around.sock")
    server = _unix_server(bound, accepted)
    names = [bound, str(work / "link.sock"), str(work / "sub" / "deep.sock")]
    names.append(str(tmp_path / "other" / "elsewhere.sock"))
    for name in names[1:]:
        os.link(bound, name)
    try:
        reached, _ = _replay_agent(work, UNIX_AGENT, {"SOCKETS": "|".join(names)}, "--isolate")
    finally:
        server.close()
    outcomes = dict(zip(names, reached.splitlines(), strict=True))
    assert "connected" not in outcomes.values(), outcomes
    assert accepted == []


def test_the_hiding_script_quotes_every_path() -> None:
    script = isolation.hiding_script(["/run"], ["/tmp/a b;touch X.sock", "/tmp/$(id).sock"])
    assert "'/tmp/a b;touch X.sock'" in script and "'/tmp/$(id).sock'" in script
    assert script.splitlines()[0] == "set -e" and script.splitlines()[-1] == 'exec "$@"'


BIND_MOUNTED = """\
import os, socket, subprocess, sys
from otel_replay.replay import isolation
top = sys.argv[1]
for d in ("host/d/e", "alt", "alt2", "fs"):
    os.makedirs(os.path.join(top, d), exist_ok=True)
subprocess.run(["mount", "-t", "tmpfs", "t", os.path.join(top, "fs")], check=True)
os.makedirs(os.path.join(top, "fs", "run", "x"))
places = {}
for where in ("host/d/e", "fs/run/x"):
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(top, where, "s.sock"))
    places[where] = s
mount = lambda a, b: subprocess.run(["mount", "--bind", os.path.join(top, a), os.path.join(top, b)], check=True)
mount("host/d", "alt")          # the socket's directory's parent, shown again
mount("fs/run", "alt2")         # a directory of another file system, shown again
names = set(isolation.socket_names([os.path.join(top, w, "s.sock") for w in places]))
print("\\n".join(sorted(os.path.relpath(n, top) for n in names)))
"""


UNSHARE_MOUNT = ("unshare", "--map-root-user", "--mount", "--propagation", "private")


def test_every_name_a_bind_mount_gives_a_socket_is_found(tmp_path: Path) -> None:
    """A host socket whose directory is shown again by a bind mount has a name there too,
    which the kernel's socket table does not list: it is found from the mount table."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        pytest.fail("unshare and mount (util-linux) are needed")
    script = tmp_path / "bind.py"
    script.write_text(BIND_MOUNTED)
    top = tmp_path / "top"
    top.mkdir()
    done = subprocess.run(
        [*UNSHARE_MOUNT, sys.executable, str(script), str(top)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    if done.returncode != 0 and "unshare failed" in done.stderr:
        pytest.skip(f"namespaces unavailable here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "alt/e/s.sock",
        "alt2/x/s.sock",
        "fs/run/x/s.sock",
        "host/d/e/s.sock",
    ]


@given(st.lists(st.sampled_from(["a", "b c", "d\\e", "f\tg", "h\nj"]), min_size=1, max_size=4))
@settings(max_examples=50, deadline=None)
def test_mount_table_paths_are_read_back_as_written(parts: list[str]) -> None:
    """The kernel writes a space, tab, newline and backslash of a mount's path as an octal
    escape: read back, each is the path again."""
    path = "/" + "/".join(parts)
    escaped = "".join(f"\\{ord(c):03o}" if c in " \t\n\\" else c for c in path)
    ((device, root, point),) = isolation.parse_mountinfo(
        [f"36 35 8:3 {escaped} {escaped}/m rw,relatime shared:1 - ext4 /dev/sda3 rw"]
    )
    assert (device, root, point) == (os.makedev(8, 3), path, path + "/m")
