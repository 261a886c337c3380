"""The strong network guard: a replay run again in a network namespace with only loopback.

The in-process guard (:mod:`otel_replay.replay.network`) sees what Python's
socket module is asked; a subprocess, native code or ``ctypes`` calling libc
``connect`` goes around it.  Linux can take the network away instead:
``unshare --net`` (with ``--map-root-user``, so that no privilege is needed
where unprivileged user namespaces are allowed) gives a child a network
stack of its own holding only a loopback interface, which the child brings
up.  Nothing the agent or its children do can then leave the machine, or
reach the host's own services on its loopback; abstract Unix sockets belong
to a network namespace too, so the host's are out of reach as well.

Pathname Unix sockets are files, reached through the file system whatever the
network namespace (``/run/docker.sock``, nscd, systemd-resolved, a database's
socket in ``/run`` or ``/tmp``).  So the child gets a mount namespace too, in
which the host's sockets are hidden before the replay starts
(:func:`hiding_plan`): every socket bound on the host when the replay starts
(``/proc/net/unix``) is covered, under each of its names (hard links
included, and the paths bind mounts of its directories show it under), and
so is every socket bound later under ``/run``, which is replaced by an empty
directory.  A path the replay needs (its working
directory, interpreter, ``sys.path``, arguments) inside a replaced directory is
put back into it.  Those mounts are the child's alone.

What stays in reach: a socket bound, after the replay started, inside a
directory the replay needs or outside the runtime directories (only those are
replaced whole), and a host socket reached another way than by its path
(a descriptor passed to the child).

``otel-replay replay --isolate`` and the pytest plugin's ``--replay-isolate``
run themselves again that way; where namespaces are not available they say
why, once, and go on with the in-process guard.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import socket
import stat
import struct
import subprocess
import sys
from collections.abc import Iterable, Sequence
from typing import Final

from .. import settings
from ..settings import OTEL_REPLAY_ISOLATED

_UNSHARE: Final = ("--net", "--map-root-user", "--mount")
#: Directories for runtime and temporary files: one that holds a host's socket is
#: replaced by an empty one (a socket bound there later is hidden too).  A socket
#: anywhere else is covered by itself, the rest of its directory left as it is.
RUNTIME_DIRS: Final = ("/run", "/var/run", "/tmp", "/var/tmp", "/dev/shm")
#: Replaced by an empty directory whatever it holds now (where services bind sockets).
ALWAYS_HIDDEN: Final = ("/run",)
#: Where the network namespace lists the Unix sockets bound in it.
UNIX_TABLE: Final = "/proc/self/net/unix"
_SIOCGIFFLAGS: Final = 0x8913
_SIOCSIFFLAGS: Final = 0x8914
_IFF_UP: Final = 0x1
#: struct ifreq: the interface name, then (in a 24-byte union) its flags.
_IFREQ: Final = "16sH22x"


def isolated() -> bool:
    """True in a child this module started in a network namespace."""
    return settings.current().isolated


def unavailable() -> str | None:
    """Why a network namespace cannot be had here, or None when it can."""
    if not sys.platform.startswith("linux"):
        return f"network namespaces are Linux's ({sys.platform} has none)"
    unshare = shutil.which("unshare")
    if unshare is None:
        return "the unshare command (util-linux) is not installed"
    if shutil.which("mount") is None:
        return "the mount command (util-linux) is not installed"
    try:
        # The namespaces, and a mount in them as the hiding does (a kernel may allow
        # the one and not the other): the replay must not start half isolated.
        probe = subprocess.run(
            [unshare, *_UNSHARE, "sh", "-c", hiding_script(["/"], [])],  # over "/": always there
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unshare could not run: {exc}"
    if probe.returncode != 0:
        why = probe.stderr.strip() or probe.returncode
        return f"unshare, or a mount in its namespaces, was refused: {why}"
    return None


def run_isolated(argv: Sequence[str]) -> int:
    """Run ``argv`` (a Python program's arguments after the interpreter) in a namespace.

    The child is marked (:data:`OTEL_REPLAY_ISOLATED`), starts with the host's
    Unix sockets hidden (:func:`hiding_plan`), brings loopback up before
    anything else (:func:`loopback_up`), and inherits this process's working
    directory, environment and standard streams; its exit code is returned.
    """
    unshare = shutil.which("unshare") or "unshare"
    env = {**os.environ, OTEL_REPLAY_ISOLATED: "1"}
    needed = needed_paths(argv)
    dirs, files = hiding_plan(socket_names(host_unix_sockets()), needed)
    script = hiding_script(dirs, files, kept_paths(dirs, needed))
    return subprocess.call(
        [unshare, *_UNSHARE, "sh", "-c", script, "otel-replay", sys.executable, *argv], env=env
    )


def host_unix_sockets(table: str = UNIX_TABLE) -> list[str]:
    """The paths of the pathname Unix sockets bound in this network namespace.

    Read from the kernel's table (the socket files themselves may be anywhere);
    abstract sockets (``@name``) are left out: a new network namespace has its own.
    """
    try:
        with open(table, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()[1:]
    except OSError:
        return []
    paths: set[str] = set()
    for line in lines:
        fields = line.split(maxsplit=7)  # Num RefCount Protocol Flags Type St Inode Path
        if len(fields) == 8 and fields[7].startswith("/"):
            paths.add(fields[7])
    return sorted(paths)


def socket_names(sockets: Iterable[str]) -> list[str]:
    """Every name of each socket file: the paths listed and their hard links.

    A hard link to a socket is the socket under another name, which the kernel's
    table does not list: it is looked for beside the socket, then across the socket's
    file system (not crossing into another mount), until each of its links is found.
    """
    names: set[str] = set()
    mounts = _mounts()
    for path in sockets:
        names.add(path)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        linked = {path}
        if stat.S_ISSOCK(st.st_mode) and st.st_nlink > 1:
            linked.update(_links(path, st))
        names.update(linked)
        # A bind mount shows a directory again elsewhere: its sockets are there too.
        for name in linked:
            names.update(mount_aliases(name, st.st_dev, mounts))
    return sorted(names)


#: A mount: its device, the directory of its file system it shows, and where.
Mount = tuple[int, str, str]


def _mounts(table: str = "/proc/self/mountinfo") -> list[Mount]:
    """The mounts of this process's namespace (none where the table cannot be read)."""
    try:
        with open(table, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    return parse_mountinfo(lines)


def parse_mountinfo(lines: Iterable[str]) -> list[Mount]:
    """``/proc/PID/mountinfo`` lines as mounts (a line that does not parse is passed over)."""
    mounts = []
    for line in lines:
        fields = line.split(" ")
        try:
            major, minor = (int(x) for x in fields[2].split(":"))
            root, point = _unescaped(fields[3]), _unescaped(fields[4])
        except (IndexError, ValueError):
            continue
        mounts.append((os.makedev(major, minor), root, point))
    return mounts


def _unescaped(field: str) -> str:
    """A mountinfo path: space, tab, newline and backslash are written as octal escapes."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)


def mount_aliases(path: str, device: int, mounts: Iterable[Mount]) -> set[str]:
    """The other paths of ``path`` (on ``device``): the same file seen through every mount
    of its file system whose directory holds it (bind mounts, a file system mounted
    twice)."""
    mounts = [m for m in mounts if m[0] == device]
    path = os.path.normpath(os.path.abspath(path))
    own = [m for m in mounts if _under(path, m[2])]
    if not own:
        return set()
    _, root, point = max(own, key=lambda m: len(m[2]))
    inside = os.path.normpath(os.path.join(root, os.path.relpath(path, point)))
    return {
        os.path.normpath(os.path.join(other_point, os.path.relpath(inside, other_root)))
        for _, other_root, other_point in mounts
        if _under(inside, other_root)
    } - {path}


def _under(path: str, top: str) -> bool:
    return top == "/" or path == top or path.startswith(top.rstrip("/") + "/")


def _links(path: str, st: os.stat_result) -> set[str]:
    found: set[str] = set()
    for top in (os.path.dirname(path), _mount_point(path, st.st_dev)):
        for root, subdirs, files in os.walk(top):
            subdirs[:] = [d for d in subdirs if _device(os.path.join(root, d)) == st.st_dev]
            for name in files:
                other = os.path.join(root, name)
                try:
                    there = os.lstat(other)
                except OSError:
                    continue
                if (there.st_dev, there.st_ino) == (st.st_dev, st.st_ino):
                    found.add(other)
            if len(found) >= st.st_nlink:
                return found
    return found


def _device(path: str) -> int | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return st.st_dev if stat.S_ISDIR(st.st_mode) else None


def _mount_point(path: str, device: int) -> str:
    top = os.path.dirname(os.path.abspath(path))
    while top != "/" and _device(os.path.dirname(top)) == device:
        top = os.path.dirname(top)
    return top


def needed_paths(argv: Sequence[str]) -> list[str]:
    """Paths the re-run replay reads or writes, which hiding must leave in place.

    Its working directory, the interpreter and its ``sys.path`` (the agent's
    code), the paths its arguments name (the recording, ``-o FILE``'s
    directory) and the paths otel-replay's own variables name
    (``OTEL_REPLAY_FILE``, ``OTEL_REPLAY_PAYLOAD_STORE``...).  Other environment
    variables are not looked at: one that names a service's socket directory
    (``PGHOST=/run/postgresql``) names what is to be hidden.
    """
    candidates = [os.getcwd(), sys.prefix, sys.base_prefix, sys.exec_prefix]
    candidates.append(os.path.dirname(os.path.realpath(sys.executable)))
    candidates += [p for p in sys.path if p]
    for arg in argv:
        for part in (arg, *arg.split("=", 1)[1:]):
            path = os.path.abspath(part)
            candidates.append(path if os.path.exists(path) else os.path.dirname(path))
    for _, value in settings.own_variables():
        candidates += [p for p in value.split(os.pathsep) if os.path.isabs(p)]
    # A socket named in the environment (SSH_AUTH_SOCK) is the host's, not the replay's.
    return sorted({os.path.realpath(p) for p in candidates if _file_or_directory(p)})


def _file_or_directory(path: str) -> bool:
    try:
        return not stat.S_ISSOCK(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def hiding_plan(
    sockets: Iterable[str], needed: Iterable[str], always: Iterable[str] = ALWAYS_HIDDEN
) -> tuple[list[str], list[str]]:
    """How the child hides ``sockets``: (directories to replace by an empty tmpfs, socket
    files to cover with ``/dev/null``).

    A socket's directory is replaced when it lies under :data:`RUNTIME_DIRS` and
    not within a ``needed`` path; every other socket is covered by itself.
    Directories of ``always`` are replaced on the same terms.  A needed path
    inside a replaced directory is put back in it (:func:`kept_paths`), and a
    socket in such a path is covered by itself.  Directories come shortest
    first, so that one inside another already replaced is left out (nothing of
    the host is left there to hide).
    """
    needed = [os.path.realpath(p) for p in needed]
    runtime = {os.path.realpath(d) for d in RUNTIME_DIRS}

    def replaceable(directory: str) -> bool:
        # Not a needed path, nor inside one (a project's own directory), "/" aside:
        # everything is inside it.  One holding a needed path is: that path is put back.
        return any(_within(directory, r) for r in runtime) and not any(
            n != "/" and _within(directory, n) for n in needed
        )

    dirs: set[str] = {os.path.realpath(d) for d in always if replaceable(os.path.realpath(d))}
    files: list[str] = []
    for path in sockets:
        directory = os.path.realpath(os.path.dirname(path))
        if replaceable(directory):
            dirs.add(directory)
        else:
            files.append(os.path.join(directory, os.path.basename(path)))
    ordered: list[str] = []
    for directory in sorted(dirs, key=lambda d: (d.count("/"), d)):
        if not any(_within(directory, top) for top in ordered):
            ordered.append(directory)
    kept = kept_paths(ordered, needed)
    covered = [
        f
        for f in sorted(set(files))
        if not any(_within(f, d) for d in ordered) or any(_within(f, k) for k in kept)
    ]
    return ordered, covered


def kept_paths(dirs: Iterable[str], needed: Iterable[str]) -> list[str]:
    """The ``needed`` paths inside ``dirs`` (replaced), which the child puts back: the
    outermost of them, each as it is on the host (sockets in them covered one by one)."""
    dirs = list(dirs)
    inside = sorted(
        {os.path.realpath(n) for n in needed if any(_within(os.path.realpath(n), d) for d in dirs)}
    )
    kept: list[str] = []
    for path in inside:
        if not any(_within(path, k) for k in kept) and path not in dirs:
            kept.append(path)
    return kept


def hiding_script(dirs: Sequence[str], files: Sequence[str], kept: Sequence[str] = ()) -> str:
    """The ``sh`` program the child starts with: the mounts of :func:`hiding_plan`, then
    ``exec "$@"``.  A path gone since it was listed is passed over; a mount that fails
    stops the replay (``set -e``): it must not run with a host socket in reach.

    A ``kept`` path inside a replaced directory is bound back from the directory as it
    was, reached through a descriptor opened on it before the mount covered it.
    """
    lines = ["set -e"]
    for d in dirs:
        q = shlex.quote(d)
        inside = [k for k in kept if _within(k, d) and k != d]
        body = [f"mount -t tmpfs otel-replay-hidden {q}"]
        if inside:
            body = [f"exec 3<{q}", *body]
            for k in inside:
                rel = shlex.quote(os.path.relpath(k, d))
                target = shlex.quote(k)
                source = f'"/proc/$$/fd/3/"{rel}'
                parent = shlex.quote(os.path.dirname(k))
                body.append(
                    f"if [ -d {source} ]; then mkdir -p {target}; "
                    f"else mkdir -p {parent}; : > {target}; fi"
                )
                body.append(f"mount --no-canonicalize --bind {source} {target}")
            body.append("exec 3<&-")
        lines.append(f"if [ -d {q} ]; then {'; '.join(body)}; fi")
    for f in files:
        q = shlex.quote(f)
        lines.append(f"if [ -S {q} ]; then mount --bind /dev/null {q}; fi")
    lines.append('exec "$@"')
    return "\n".join(lines)


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
