"""What the user named -> the inputs to read, in the order to read them.

A path may be a file, a directory (every data file below it, as the
Collector's ``group_by`` writes them), a glob, ``-`` for stdin, or an http(s)
URL.  Rotated sets are read oldest first: the Collector renames
``name.json`` to ``name-2022-09-14T05-02-14.173.json`` when it rotates
(lumberjack, older releases, and our ``FileSpanExporter``) or to
``name-2022-09-14T05-02-14.173-size.json`` (timberjack, which adds why it
rotated: ``size``, ``time`` or a reason of the caller's), so the
timestamped files come before the live one, in the order of their times.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Final

from ..otlp.rotation import INDEX_SUFFIX, ROTATED, RUNS_SUFFIX

if TYPE_CHECKING:
    from pathlib import Path


def _has_magic(name: str) -> bool:
    """Whether ``name`` is a glob pattern (as ``glob.has_magic`` says)."""
    return any(c in name for c in "*?[")


#: Files in a dump directory that are never span data.
_SKIP_SUFFIXES = (
    ".tmp",
    ".lock",
    ".idx",
    INDEX_SUFFIX,
    RUNS_SUFFIX,
    ".md",
    ".txt",
    ".py",
    ".yaml",
    ".yml",
    # A project folder's own files: source, configuration, documents, images, archives.
    ".pyc",
    ".pyi",
    ".toml",
    ".cfg",
    ".ini",
    ".rst",
    ".html",
    ".css",
    ".js",
    ".ts",
    ".png",
    ".jpg",
    ".svg",
    ".pdf",
    ".whl",
    ".so",
    ".sh",
)
#: Folders a directory input never holds traces in: version control and tools' caches
#: (any hidden folder), installed packages, byte code.
_SKIP_FOLDERS = frozenset({"node_modules", "__pycache__", "site-packages"})


class Found(str):
    """A file name found by walking a folder or matching a pattern (not named itself):
    when it holds no trace data it is passed over, not reported as an error."""

    __slots__ = ()


def _folder_passed(path: str) -> str | None:
    """Why a folder walk does not look into ``path`` (a hidden folder, a virtualenv or
    conda environment, a package tree, a blob store), or None when it does."""
    name = os.path.basename(path)
    if name.startswith("."):
        return "a hidden folder, not looked into"
    if name in _SKIP_FOLDERS:
        return "installed packages or byte code, not looked into"
    if name.endswith(".blobs"):
        return "a payload blob store, read through the trace beside it"
    if os.path.isfile(os.path.join(path, "pyvenv.cfg")):
        return "a virtualenv (pyvenv.cfg), not looked into"
    if os.path.isdir(os.path.join(path, "conda-meta")):
        return "a conda environment (conda-meta), not looked into"
    return None


def _walk(top: str, passed: list[tuple[str, str]] | None = None) -> list[str]:
    """The data files below ``top``, never looking inside a skipped folder (a
    virtualenv holds thousands of files, none a trace); what it passes over by name
    goes to ``passed``, with why, when given."""

    found = []
    for directory, folders, files in os.walk(top):
        kept = []
        for folder in sorted(folders):
            why = _folder_passed(path := os.path.join(directory, folder))
            if why is None:
                kept.append(folder)
            elif passed is not None:
                passed.append((path + os.sep, why))
        folders[:] = kept
        found += _data_files([os.path.join(directory, f) for f in sorted(files)], passed)
    return found


def _data_files(names: Iterable[str], passed: list[tuple[str, str]] | None) -> list[str]:
    """The files among ``names`` a walk or a pattern reads; the others go to ``passed``."""
    from pathlib import Path

    found = []
    for name in names:
        path = Path(name)
        if not path.is_file():
            continue
        why = _file_passed(path)
        if why is None:
            found.append(name)
        elif passed is not None:
            passed.append((name, why))
    return found


def rotation_key(path: str) -> tuple[str, str, int, str, str]:
    """Sort key: same set together, rotated files by timestamp, the live file last."""
    directory, name = os.path.split(path)
    m = ROTATED.match(name)
    if m:
        return (directory, m["stem"] + (m["ext"] or ""), 0, m["ts"], name)
    return (directory, name, 1, "", name)


def same_set(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` belong to one rotated set (a live file and its backups)."""
    return rotation_key(a)[:2] == rotation_key(b)[:2]


def rotated_from(path: str | os.PathLike[str]) -> str | None:
    """The live file a rotated file was renamed from (same directory), or None."""
    directory, name = os.path.split(os.fspath(path))
    m = ROTATED.match(name)
    if m is None:
        return None
    return os.path.join(directory, m["stem"] + (m["ext"] or ""))


def _file_passed(path: Path) -> str | None:
    """Why a folder walk or a pattern does not read ``path`` by its name, or None."""
    if path.name.endswith((INDEX_SUFFIX, RUNS_SUFFIX)):
        return "what otel-replay saved beside a dump (an index, run summaries), not read"
    if path.name.startswith("."):
        return "a hidden file, not read"
    suffix = next((x for x in _SKIP_SUFFIXES if path.name.endswith(x)), None)
    if suffix is not None:
        return f"a {suffix} file, never trace data: not read"
    if any(part.endswith(".blobs") for part in path.parts):
        return "in a payload blob store, read through the trace beside it"
    return None


def passed_over(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, str]]:
    """What the folders and patterns among ``paths`` hold that :func:`expand` does not
    give to be read, each with why: files by their names, and folders not looked into
    (not what they hold: a virtualenv holds thousands of files).  A file named itself,
    a stream or a URL is never passed over."""
    out: list[tuple[str, str]] = []
    for raw in paths:
        name = os.fspath(raw)
        if is_stream(name) or is_search(name):
            continue
        if os.path.isdir(name):
            _walk(name, out)
        elif not os.path.exists(name) and _has_magic(name):
            import glob

            _data_files(sorted(glob.glob(name, recursive=True)), out)
    return out


#: A trace backend's search, standing for the traces it finds (see :mod:`.tempo_search`
#: and :mod:`.jaeger_search`).
TEMPO_SCHEMES: Final = ("tempo://", "tempos://")
JAEGER_SCHEMES: Final = ("jaeger://", "jaegers://")
SEARCH_SCHEMES: Final = (*TEMPO_SCHEMES, *JAEGER_SCHEMES)


def is_search(name: str) -> bool:
    """Whether ``name`` is a search of a trace backend (``tempo://HOST:PORT``,
    ``jaeger://HOST:PORT?service=NAME``)."""
    return name.startswith(SEARCH_SCHEMES)


#: A ClickHouse table of spans, read with SQL (see :mod:`.clickhouse`).
DATABASE_SCHEMES: Final = ("clickhouse://", "clickhouses://", "chdb://")


def is_database(name: str) -> bool:
    """Whether ``name`` is a ClickHouse table (``clickhouse://``, ``chdb://``), not a file."""
    return name.startswith(DATABASE_SCHEMES)


def is_stream(name: str) -> bool:
    """Inputs the reader opens itself: stdin, URLs, searches and databases (no file, no
    blob store beside them)."""
    return name == "-" or name.startswith(
        ("http://", "https://", *SEARCH_SCHEMES, *DATABASE_SCHEMES)
    )


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The inputs named by ``paths``; a name that matches nothing is kept (its read fails)."""
    from pathlib import Path  # the file exporter imports this module for a suffix

    out: list[str] = []
    for raw in paths:
        name = os.fspath(raw)
        if name.startswith(JAEGER_SCHEMES):
            from .jaeger import search_url  # one answer holds what it finds

            try:
                out.append(search_url(name))
            except ValueError:
                out.append(name)  # reading it says why
            continue
        if is_search(name):
            from .tempo import trace_urls  # a search: the traces it finds

            out.extend(trace_urls(name))
            continue
        if is_stream(name):
            out.append(name)
            continue
        p = Path(name)
        if p.is_dir():
            found = _walk(name)
        elif not p.exists() and _has_magic(name):
            import glob  # only for a pattern

            found = _data_files(glob.glob(name, recursive=True), None)
        else:
            out.append(name)
            continue
        out.extend(Found(f) for f in sorted(found, key=rotation_key))
    return list(dict.fromkeys(out))
