"""Seals on what otel-replay keeps beside a dump and believes later: indexes, ``ls`` summaries.

Such a file travels with the dump, so it may come from anyone, and a
well-formed one could still list runs the dump does not hold or hide spans
it does.  Each is sealed with an HMAC-SHA256 under a random key that never
leaves this machine: ``$XDG_CACHE_HOME/otel-replay/key`` (else
``~/.cache/otel-replay/key``), created on first use, readable by its owner
only.  A file sealed elsewhere, or altered since, does not verify and is
rebuilt from the dump instead of believed.  When the key cannot be kept
(no home, a read-only one, a key file others may read or write) nothing is
sealed: such files are neither written nor trusted, and every read goes to
the dump.

Checking a seal hashes the file once: well under a millisecond per megabyte.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import os
from pathlib import Path
from typing import Final

from . import settings
from .safe_files import open_regular

#: Bytes of a seal (an HMAC-SHA256).
SIZE: Final = 32
_KEY_BYTES: Final = 32

#: Keys read (or found missing) in this process, by key file.
_keys: dict[str, bytes | None] = {}


def key_dir() -> Path | None:
    """``$XDG_CACHE_HOME/otel-replay``, else ``~/.cache/otel-replay``; None without a home."""
    base = settings.current().xdg_cache_home or ""
    if not os.path.isabs(base):  # the XDG spec: a relative value is to be ignored
        try:
            base = os.path.join(Path.home(), ".cache")
        except RuntimeError:  # no home directory to be found
            return None
    return Path(base) / "otel-replay"


def _key() -> bytes | None:
    directory = key_dir()
    if directory is None:
        return None
    path = str(directory / "key")
    if path not in _keys:
        _keys[path] = _read_key(path)
        if _keys[path] is None:
            _keys[path] = _create_key(directory, path)
    return _keys[path]


def _read_key(path: str) -> bytes | None:
    """The key at ``path`` if it is ours alone: a regular file of ours, mode 0600 or stricter."""
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & 0o077 or st.st_size != _KEY_BYTES:
            return None
        data = os.read(fd, _KEY_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == _KEY_BYTES else None


def _create_key(directory: Path, path: str) -> bytes | None:
    """A new key at ``path`` (unless another process made one first); None if it cannot be kept."""
    # lazy: only making a new key needs them
    import secrets
    import tempfile

    if os.path.lexists(path):
        return None  # there, but not a key we may trust: do not replace it
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".key.", dir=directory)  # mode 0600
    except OSError:
        return None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(_KEY_BYTES))
        # A link appears whole or not at all, and never over another process's key.
        with contextlib.suppress(FileExistsError):
            os.link(tmp, path)
    except OSError:
        return None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    return _read_key(path)


def tag(purpose: bytes, data: bytes | memoryview) -> bytes | None:
    """The seal of ``data`` for ``purpose`` (what the file is); None when there is no key."""
    key = _key()
    if key is None:
        return None
    return _mac(key, purpose, data)


def _mac(key: bytes, purpose: bytes, data: bytes | memoryview) -> bytes:
    mac = hmac.new(key, purpose + b"\0", hashlib.sha256)
    mac.update(data)
    return mac.digest()


def verify(purpose: bytes, data: bytes | memoryview, seal: bytes | memoryview) -> bool:
    """Whether ``seal`` is this machine's seal of ``data`` for ``purpose``."""
    key = _key()
    return key is not None and hmac.compare_digest(_mac(key, purpose, data), bytes(seal))
