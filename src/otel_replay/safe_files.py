"""Reading and writing files in places anyone may have prepared: beside a dump someone sent.

A name there may be a symbolic link (to ``/etc/passwd``, to ``/dev/zero``), a
FIFO that blocks whoever opens it, or a device.  :func:`open_regular` opens
only a regular file, never through a link, never waiting on a FIFO.
:func:`replace_atomically` writes through a fresh temporary file of its own
(created exclusively, so a link planted under a predictable name is never
written through) and renames it over the target, which replaces a link
rather than following it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class NotARegularFile(OSError):
    """The name is there but is not a regular file (a FIFO, a device, a directory)."""


def open_regular(path: str | os.PathLike[str], *, dir_fd: int | None = None) -> int:
    """A read-only descriptor of the regular file ``path`` (relative to ``dir_fd`` if given).

    Raises :class:`OSError`: ``ELOOP`` for a symbolic link, :class:`NotARegularFile`
    for anything else that is not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise NotARegularFile(errno.EINVAL, "not a regular file", os.fspath(path))
    return fd


class TooLarge(ValueError):
    """The file holds more than the reader may hold; :attr:`size` as found (None: it grew)."""

    def __init__(self, size: int | None) -> None:
        super().__init__(f"holds {size} bytes" if size is not None else "grew while read")
        self.size = size


def read_regular(path: str | os.PathLike[str], limit: int, *, dir_fd: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (see :func:`open_regular`), at most ``limit``
    of them: :class:`TooLarge` past that."""
    fd = open_regular(path, dir_fd=dir_fd)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise TooLarge(size)
        parts: list[bytes] = []
        left = limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            parts.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(parts)
    if len(data) > limit:  # it grew after fstat
        raise TooLarge(None)
    return data


def replace_atomically(target: str | os.PathLike[str], data: bytes, mode: int = 0o644) -> None:
    """Write ``data`` to ``target`` whole or not at all (a reader never sees half of it).

    Raises :class:`OSError`; the temporary file is removed then.
    """
    # lazy: only writers need them: readers (ls from its cache) start faster
    import tempfile
    from pathlib import Path

    path = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
