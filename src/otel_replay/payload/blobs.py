"""Content-addressed blob store beside a trace file, for payloads too large to inline.

``run.otlp`` keeps its blobs in ``run.otlp.blobs/<sha256 hex>``; a span refers to
one as ``"sha256:<hex>"``.  Blobs are written before the span that names them
and are immutable, so a crash can leave an unreferenced blob but never a
reference without its blob.

A trace file and its blob store may come from anyone, so reading is strict:
a reference must be a sha256 digest (no path can hide in it), the store must
be a real directory, a blob a regular file directly inside it (opened without
following a symbolic link, and without blocking on a FIFO), no larger than
:data:`MAX_BLOB_BYTES`, and its bytes must hash to its name.  Anything else
is refused with :class:`BlobUnavailable`, whose message says why.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final, Protocol

from .. import limits, settings
from ..safe_files import NotARegularFile, TooLarge, read_regular, replace_atomically
from .codec import sha256

if TYPE_CHECKING:
    from pathlib import Path

#: Blobs larger than this are refused rather than read into memory.
MAX_BLOB_BYTES: Final = limits.Limit(settings.OTEL_REPLAY_MAX_BLOB_BYTES)

_DIGEST = re.compile(r"[0-9a-f]{64}")
_PREFIX = "sha256:"
# The store directory itself is opened without following a link.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class BlobUnavailable(Exception):
    """A blob that is refused or unreadable; the message says which and why, on one line."""

    def __init__(self, path: str | os.PathLike[str], reason: str, noun: str = "blob") -> None:
        super().__init__(f"{noun} {os.fspath(path)} {reason}")
        self.path = os.fspath(path)
        self.reason = reason
        self.noun = noun


def blob_dir(trace_path: str | os.PathLike[str]) -> Path:
    from pathlib import Path  # capture imports this module, and needs no pathlib

    return Path(os.fspath(trace_path) + ".blobs")


def digest_of(ref: str) -> str | None:
    """The hex digest of a ``sha256:<hex>`` reference; None for anything else."""
    if not ref.startswith(_PREFIX):
        return None
    digest = ref[len(_PREFIX) :]
    return digest if _DIGEST.fullmatch(digest) else None


class Blobs(Protocol):
    """Where writers keep exact payloads too large to inline: the store beside a file
    (:class:`BlobStore`) or a store of the user's
    (:class:`~otel_replay.payload.store.PayloadStore`)."""

    def put(self, data: bytes) -> str:
        """Keep ``data``; the ``sha256:<hex>`` reference a span names it by."""
        ...

    def kept_if_written(self) -> contextlib.AbstractContextManager[None]:
        """What this thread keeps inside is removed again if the block raises, where it can be."""
        ...


class BlobStore:
    def __init__(self, trace_path: str | os.PathLike[str]) -> None:
        self.root = blob_dir(trace_path)
        self._local = threading.local()

    def put(self, data: bytes) -> str:
        """Store ``data`` (once: the name is its digest) and return its reference."""
        digest = sha256(data)
        if not self.holds(digest):
            self.root.mkdir(parents=True, exist_ok=True)
            replace_atomically(self.root / digest, data)  # a reader never sees half a blob
            created = getattr(self._local, "created", None)
            if created is not None:
                created.append(digest)
        return _PREFIX + digest

    @contextlib.contextmanager
    def kept_if_written(self) -> Iterator[None]:
        """Blobs this thread stores inside are removed again if the block raises.

        The record referring to them was not written (a full disk, a lock not
        had in time): left, they would take the space nothing can reach.
        """
        created: list[str] = []
        self._local.created = created
        try:
            yield
        except BaseException:
            for digest in created:
                with contextlib.suppress(OSError):
                    os.unlink(self.root / digest)
            raise
        finally:
            self._local.created = None

    def holds(self, digest: str) -> bool:
        """Whether a regular file is stored under ``digest`` (a link is not a blob)."""
        try:
            return stat.S_ISREG(os.lstat(self.root / digest).st_mode)
        except OSError:
            return False

    def get(self, ref: str) -> bytes | None:
        """The bytes ``ref`` names; None when the store does not hold it.

        Raises :class:`BlobUnavailable` for a reference that is not a digest
        and for a blob that is there but refused (see the module docstring).
        """
        digest = digest_of(ref)
        if digest is None:
            raise BlobUnavailable(
                repr(ref[:80]), "is not of the form sha256:<64 hex digits>", "blob reference"
            )
        try:
            with self._open_dir() as dir_fd:
                return self._read(dir_fd, digest)
        except FileNotFoundError:
            return None

    def digests(self) -> list[str]:
        """The digests of the blobs the store holds (other names are not blobs).

        Raises :class:`BlobUnavailable` when the store is refused (see :meth:`get`).
        """
        try:
            with self._open_dir() as dir_fd:
                names = os.listdir(dir_fd)
        except FileNotFoundError:
            return []
        return sorted(name for name in names if _DIGEST.fullmatch(name))

    @contextlib.contextmanager
    def _open_dir(self) -> Iterator[int]:
        try:
            fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            raise
        except OSError as exc:
            kind = "a symbolic link" if os.path.islink(self.root) else "not a readable directory"
            raise BlobUnavailable(self.root, f"is {kind}; not read", "blob store") from exc
        try:
            yield fd
        finally:
            os.close(fd)

    def _read(self, dir_fd: int, digest: str) -> bytes:
        """The blob ``digest`` of the open store ``dir_fd``, checked as the module says."""
        path = self.root / digest
        try:
            data = read_regular(digest, MAX_BLOB_BYTES.bytes(), dir_fd=dir_fd)
        except FileNotFoundError:
            raise
        except NotARegularFile as exc:
            raise BlobUnavailable(path, "is not a regular file; not read") from exc
        except TooLarge as exc:
            held = f"holds {exc.size} bytes" if exc.size is not None else "grew"
            raise BlobUnavailable(path, f"{held}, past {MAX_BLOB_BYTES.text()}") from exc
        except OSError as exc:
            with contextlib.suppress(OSError):
                if stat.S_ISLNK(os.lstat(digest, dir_fd=dir_fd).st_mode):
                    raise BlobUnavailable(path, "is a symbolic link; not followed") from exc
            raise BlobUnavailable(path, f"cannot be read ({exc.strerror or exc})") from exc
        if sha256(data) != digest:
            raise BlobUnavailable(path, "does not hold the bytes its name is the digest of")
        return data
