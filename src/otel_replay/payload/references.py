"""Message content stored by reference (``gen_ai.input.messages_ref`` and the like): read back.

``opentelemetry-util-genai``'s ``upload`` completion hook writes a model
call's messages, system instructions and tool definitions to an fsspec store
(``file://``, ``s3://``, ``gs://``...) and puts only their URL on the span:
``gen_ai.input.messages_ref``, ``gen_ai.output.messages_ref``,
``gen_ai.system_instructions_ref``, ``gen_ai.tool.definitions_ref``.  The
files hold the JSON the attribute would have held (``json``: one array;
``jsonl``: one item per line with its ``index``).

A trace may come from anyone, and a URL in it could name any file or bucket
the reader can reach: a reference is read only under a store the user
allows, from :data:`OTEL_REPLAY_CONTENT_REFS` or :func:`use_content_refs`
(the CLI's ``--refs``), each ``BASE`` or ``BASE=WHERE`` (the store moved:
``file:///srv/genai=./uploads`` reads ``file:///srv/genai/x.json`` from
``./uploads/x.json``).  Any other reference, or one that cannot be read, is
a payload ``missing`` whose reason names it; nothing is read past the record
size limit.  Local files are read directly, as the blob store beside a trace
is: below the store's root no symbolic link is followed and only a regular
file is read, never waiting on a FIFO; so are they through an fsspec cache
(``simplecache::file://...``), and another fsspec filesystem over local files
(``dir::``) is refused.  Other stores need ``fsspec`` (and its
filesystem's package), an optional dependency; the part of a reference below
its store is only ever a path on that store's filesystem.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import os
import posixpath
import stat
import urllib.parse
from collections.abc import Iterable, Iterator
from typing import Final, TypeAlias

from .. import limits, settings
from ..extras import install_hint
from ..safe_files import NotARegularFile, TooLarge, read_regular
from ..settings import OTEL_REPLAY_CONTENT_REFS
from .blobs import digest_of
from .codec import sha256

__all__ = [
    "OTEL_REPLAY_CONTENT_REFS",
    "Allowed",
    "RefUnavailable",
    "allowed",
    "allowing",
    "as_json",
    "read",
    "stored_blob",
    "use_content_refs",
]

#: Bytes of referenced content kept for other spans naming the same file.
_KEPT_BYTES: Final = 64 * limits.MiB

#: The stores allowed, as :func:`allowed` gives them: ``(BASE, WHERE)`` each.
Allowed: TypeAlias = "tuple[tuple[str, str], ...]"

_rules: list[tuple[str, str]] = []
#: Stores fixed for this context by :func:`allowing` (None: the rules in force).
_fixed: contextvars.ContextVar[Allowed | None] = contextvars.ContextVar(
    "otel_replay_content_refs", default=None
)
_kept: dict[str, bytes] = {}
_CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
#: A directory below a store's root: opened without following a link.
_DIRECTORY: Final = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_NOFOLLOW", 0) | _CLOEXEC
_kept_bytes = 0


class RefUnavailable(Exception):
    """A reference that is not read: not allowed, absent, too large or unreadable (why)."""


def use_content_refs(rules: Iterable[str] | None) -> None:
    """Allow reading references under these stores (beside :data:`OTEL_REPLAY_CONTENT_REFS`'s).

    Each rule is ``BASE`` or ``BASE=WHERE``; ``None`` forgets the ones given here.
    """
    global _kept_bytes
    _rules.clear()
    _rules.extend(_rule(r) for r in rules or () if r.strip())
    _kept.clear()
    _kept_bytes = 0


def allowed() -> Allowed:
    """The stores references may be read under now: :func:`allowing` reads them later
    as now, whatever is allowed then."""
    return tuple(_all_rules())


@contextlib.contextmanager
def allowing(stores: Allowed) -> Iterator[None]:
    """In this context (this thread), read references under ``stores`` (from
    :func:`allowed`) alone."""
    token = _fixed.set(stores)
    try:
        yield
    finally:
        _fixed.reset(token)


def read(ref: str) -> bytes:
    """The bytes ``ref`` names, under an allowed store; raises :class:`RefUnavailable`."""
    found = _allowed(ref)
    if found is None:
        raise RefUnavailable(
            f"{ref} is not read: no store it is under is allowed "
            f"(allow one with --refs BASE or {OTEL_REPLAY_CONTENT_REFS})"
        )
    where, rest = found
    target = where + rest
    kept = _kept.get(target)
    if kept is not None:
        return kept
    global _kept_bytes
    data = _read(ref, where, rest)
    if _kept_bytes + len(data) > _KEPT_BYTES:
        _kept.clear()
        _kept_bytes = 0
    _kept[target] = data
    _kept_bytes += len(data)
    return data


def stored_blob(ref: str) -> bytes | None:
    """The payload ``sha256:<hex>`` names, from the first allowed store holding ``<hex>``
    (otel-replay's payload stores, see :mod:`otel_replay.payload.store`); None
    when no allowed store holds it.  Raises :class:`RefUnavailable` for a blob that is
    there but whose bytes do not hash to its name."""
    digest = digest_of(ref)
    if digest is None:
        return None
    for base, _ in _all_rules():
        try:
            data = read(f"{base}/{digest}")
        except RefUnavailable:
            continue  # not in this store
        if sha256(data) != digest:
            raise RefUnavailable(f"{base}/{digest} does not hash to its name")
        return data
    return None


def as_json(data: bytes) -> bytes:
    """A stored file's content as the JSON its attribute would hold: a ``json`` file as it
    is, a ``jsonl`` one (an item per line, each with its ``index``) as one array."""
    try:
        json.loads(data)
    except ValueError:
        pass
    else:
        return data
    items = []
    for n, line in enumerate(data.splitlines()):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise RefUnavailable(f"line {n + 1} is not JSON ({exc})") from None
        items.append(item)
    if all(isinstance(i, dict) and isinstance(i.get("index"), int) for i in items):
        items.sort(key=lambda i: i["index"])
        items = [{k: v for k, v in i.items() if k != "index"} for i in items]
    return json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode()


def _rule(text: str) -> tuple[str, str]:
    base, _, where = text.strip().partition("=")
    base = _normal(base.strip())
    return base, _normal(where.strip()) if where.strip() else base


def _all_rules() -> list[tuple[str, str]]:
    fixed = _fixed.get()
    if fixed is not None:
        return list(fixed)
    return [*(_rule(r) for r in settings.current().content_refs), *_rules]


def _normal(url: str) -> str:
    """``url`` with its path normalized (no ``..``, no doubled or trailing ``/``); a plain
    path becomes a ``file://`` URL."""
    if "://" not in url:
        url = "file://" + os.path.abspath(os.path.expanduser(url))
    parts = urllib.parse.urlsplit(url)
    path = posixpath.normpath(urllib.parse.unquote(parts.path)) if parts.path else ""
    if path.startswith("//"):
        path = "/" + path.lstrip("/")
    path = "" if path == "." else path.rstrip("/")
    return urllib.parse.urlunsplit((parts.scheme.lower(), parts.netloc, path, "", ""))


def _allowed(ref: str) -> tuple[str, str] | None:
    """Where to read ``ref`` from, when a rule allows it: the store's ``WHERE`` and the
    path below it (``""`` or ``/a/b``, normalized); None when no rule does."""
    if "://" not in ref or "?" in ref or "#" in ref:
        return None
    url = _normal(ref)
    for base, where in _all_rules():
        if url == base or url.startswith(base + "/"):
            return where, url[len(base) :]
    return None


def _read(ref: str, where: str, rest: str) -> bytes:
    """The file ``rest`` names below the store ``where``, read as the module says.

    ``rest`` is only ever a path inside that store, never part of a URL parsed again
    (a ``#``, ``?`` or fsspec's ``::`` in it is a character of a name).
    """
    most = limits.MAX_RECORD_BYTES.bytes()
    try:
        if where.startswith("file://"):
            data = _read_local(ref, urllib.parse.urlsplit(where).path or "/", rest, most)
        else:
            data = _read_fsspec(ref, where, rest, most)
    except RefUnavailable:
        raise
    except FileNotFoundError:
        raise RefUnavailable(f"{ref} is not there") from None
    except Exception as exc:  # a store's own errors: any of them is this reference's fault
        raise RefUnavailable(f"{ref} cannot be read ({type(exc).__name__}: {exc})") from None
    if len(data) > most:
        raise RefUnavailable(f"{ref} is larger than {limits.MAX_RECORD_BYTES.text()}")
    return data


def _read_local(ref: str, root: str, rest: str, most: int) -> bytes:
    """The regular file ``rest`` below the directory ``root``, confined to it as the blob
    store is: the store itself is the user's to name (a link to it is followed), but below
    it no symbolic link is followed (one could lead anywhere: a credential file), and only
    a regular file is read, opened without blocking (a FIFO would wait forever) and no
    larger than ``most`` bytes."""
    names = [n for n in rest.split("/") if n]
    if any(n in (".", "..") for n in names):  # _normal leaves none; never walked up
        raise RefUnavailable(f"{ref} is not read: it leaves its store")
    if not names:  # the reference names the allowed file itself
        return _regular(ref, root, most, None)
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
    try:
        for name in names[:-1]:
            try:
                inner = os.open(name, _DIRECTORY, dir_fd=fd)
            except OSError as exc:
                _refuse_link(ref, name, fd, exc)
                raise
            os.close(fd)
            fd = inner
        return _regular(ref, names[-1], most, fd)
    finally:
        os.close(fd)


def _regular(ref: str, name: str, most: int, dir_fd: int | None) -> bytes:
    try:
        return read_regular(name, most, dir_fd=dir_fd)
    except NotARegularFile:
        raise RefUnavailable(f"{ref} is not a regular file; not read") from None
    except TooLarge:
        raise RefUnavailable(f"{ref} is larger than {limits.MAX_RECORD_BYTES.text()}") from None
    except OSError as exc:
        _refuse_link(ref, name, dir_fd, exc)
        raise


def _refuse_link(ref: str, name: str, dir_fd: int | None, exc: OSError) -> None:
    """Raise :class:`RefUnavailable` when ``name`` failed to open for being a symbolic link."""
    if isinstance(exc, FileNotFoundError):
        return
    try:
        link = stat.S_ISLNK(os.lstat(name, dir_fd=dir_fd).st_mode)
    except OSError:
        return
    if link:
        raise RefUnavailable(
            f"{ref} is not read: {name} is a symbolic link inside its store; not followed"
        ) from None


def _read_fsspec(ref: str, where: str, rest: str, most: int) -> bytes:
    try:
        # optional: the refs extra (fsspec)
        import fsspec
    except ImportError:
        raise RefUnavailable(
            f"{where}{rest} needs fsspec to be read: {install_hint('refs')}"
        ) from None
    # The store as the user named it (chained URLs and all); the rest is a path on it.
    fs, root = fsspec.core.url_to_fs(where)
    if _local(fs):  # local files however spelled: read as such
        return _read_local(ref, root or "/", rest, most)
    if _wraps_local(fs):
        # optional: the refs extra (fsspec)
        from fsspec.implementations.cached import CachingFileSystem

        if isinstance(fs, CachingFileSystem):
            # A cache of local files (simplecache::, filecache::, blockcache::) would
            # read them through fsspec's own local filesystem, which follows links and
            # waits on a FIFO: its path is a local path, read as the store's files are.
            return _read_local(ref, root or "/", rest, most)
        raise RefUnavailable(
            f"{ref} is not read: its store reaches local files through "
            f"{'::'.join(_protocols(fs))}, which may follow links out of it "
            "(name the directory itself as file://...)"
        )
    with fs.open(root.rstrip("/") + rest if rest else root, "rb") as f:
        data: bytes = f.read(most + 1)
    return data


def _local(fs: object) -> bool:
    return bool({"file", "local"} & set(_protocols(fs)))


def _wraps_local(fs: object) -> bool:
    """Whether ``fs`` reads local files through another filesystem (a chained
    filesystem's ``fs``, at any depth)."""
    inner = getattr(fs, "fs", None)
    for _ in range(16):  # a chain, not a cycle
        if inner is None or _local(inner):
            return inner is not None
        inner = getattr(inner, "fs", None)
    return False


def _protocols(fs: object) -> tuple[str, ...]:
    protocol = getattr(fs, "protocol", ())
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)
