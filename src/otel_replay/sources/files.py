"""What the user named -> the inputs to read, in the order to read them.

A path may be a file, a directory (every data file below it, as the
Collector's ``group_by`` writes them), a glob, ``-`` for stdin, an http(s)
URL, a Tempo or Jaeger search or a ClickHouse table: :func:`open_source`
tells which, once, and gives its :class:`~.source.Source`.

Rotated sets are read oldest first: the Collector renames ``name.json``
to ``name-2022-09-14T05-02-14.173.json`` when it rotates (lumberjack, older
releases, and our ``FileSpanExporter``) or to
``name-2022-09-14T05-02-14.173-size.json`` (timberjack, which adds why it
rotated: ``size``, ``time`` or a reason of the caller's), so the
timestamped files come before the live one, in the order of their times.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import IO, TYPE_CHECKING, ClassVar, Final

from ..otlp.rotation import INDEX_SUFFIX, ROTATED, RUNS_SUFFIX
from .source import Kind, Source

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
        source = open_source(raw)
        if isinstance(source, FolderSource):
            _walk(source.name, out)
        elif isinstance(source, GlobSource):
            _data_files(sorted(source.matches()), out)
    return out


#: A trace backend's search, standing for the traces it finds (see :mod:`.tempo`
#: and :mod:`.jaeger`).
TEMPO_SCHEMES: Final = ("tempo://", "tempos://")
JAEGER_SCHEMES: Final = ("jaeger://", "jaegers://")
SEARCH_SCHEMES: Final = (*TEMPO_SCHEMES, *JAEGER_SCHEMES)
#: A ClickHouse table of spans, read with SQL (see :mod:`.clickhouse`).
DATABASE_SCHEMES: Final = ("clickhouse://", "clickhouses://", "chdb://")


def _named_kind(name: str) -> Kind | None:
    """The kind of an input its name alone tells (stdin, a URL, a search, a database);
    None for a path on disk."""
    if name == "-":
        return "stdin"
    if name.startswith(("http://", "https://")):
        return "url"
    if name.startswith(TEMPO_SCHEMES):
        return "tempo"
    if name.startswith(JAEGER_SCHEMES):
        return "jaeger"
    if name.startswith(DATABASE_SCHEMES):
        return "clickhouse"
    return None


def open_source(name: str | os.PathLike[str]) -> Source:
    """The :class:`~.source.Source` ``name`` stands for, its kind told here once.

    Nothing is read or fetched: a path on disk is looked at only to tell a
    folder and a pattern from a file.
    """
    name = os.fspath(name)
    kind = _named_kind(name)
    # Each kind's module only for an input of its kind (http.client for URLs, say).
    if kind == "stdin":
        return StdinSource(name)
    if kind == "url":
        # lazy: imported on first use, not with the package
        from .jaeger import JaegerAnswer, answers_search

        if answers_search(name):
            return JaegerAnswer(name)
        # lazy: imported on first use, not with the package
        from .url import UrlSource

        return UrlSource(name)
    if kind == "tempo":
        # lazy: imported on first use, not with the package
        from .tempo import TempoSearch

        return TempoSearch(name)
    if kind == "jaeger":
        # lazy: imported on first use, not with the package
        from .jaeger import JaegerSearch

        return JaegerSearch(name)
    if kind == "clickhouse":
        # lazy: imported on first use, not with the package
        from .clickhouse.source import ClickHouseSource

        return ClickHouseSource(name)
    if os.path.isdir(name):
        return FolderSource(name)
    if not os.path.exists(name) and _has_magic(name):
        return GlobSource(name)
    return FileSource(name)


def is_search(name: str) -> bool:
    """Whether ``name`` is a search of a trace backend (``tempo://HOST:PORT``,
    ``jaeger://HOST:PORT?service=NAME``)."""
    return _named_kind(name) in ("tempo", "jaeger")


def is_database(name: str) -> bool:
    """Whether ``name`` is a ClickHouse table (``clickhouse://``, ``chdb://``), not a file."""
    return _named_kind(name) == "clickhouse"


def is_stream(name: str) -> bool:
    """Inputs the reader opens itself: stdin, URLs, searches and databases (no file, no
    blob store beside them)."""
    return _named_kind(name) is not None


class FileSource(Source):
    """A file, read as it is (a file of a rotated set is one of them)."""

    kind: ClassVar[Kind] = "file"
    local = True

    @property
    def found(self) -> bool:
        return isinstance(self.name, Found)

    def open(self) -> tuple[IO[bytes], int | None]:
        file = open(self.name, "rb")  # noqa: SIM115 - the reader closes it
        return file, os.fstat(file.fileno()).st_size


class StdinSource(Source):
    """``-``: what the standard input holds, read whole first (so that it can be sniffed
    and sought in)."""

    kind = "stdin"

    def open(self) -> tuple[IO[bytes], int | None]:
        data = sys.stdin.buffer.read()
        return io.BytesIO(data), len(data)


class FolderSource(FileSource):
    """A folder: every data file below it (see :func:`passed_over` for what is not),
    rotated sets oldest first.  Opened itself, it is a file that cannot be read."""

    kind = "folder"

    def parts(self) -> list[Source]:
        found = _walk(self.name)
        return [FileSource(Found(f)) for f in sorted(found, key=rotation_key)]


class GlobSource(FileSource):
    """A pattern matching no file of its own name: the data files it matches, rotated
    sets oldest first."""

    kind = "glob"

    def matches(self) -> list[str]:
        """Every path the pattern matches (``**`` matching any depth)."""
        import glob  # only for a pattern

        return glob.glob(self.name, recursive=True)

    def parts(self) -> list[Source]:
        found = _data_files(self.matches(), None)
        return [FileSource(Found(f)) for f in sorted(found, key=rotation_key)]


def expand(paths: Iterable[str | os.PathLike[str]]) -> list[str]:
    """The inputs named by ``paths``; a name that matches nothing is kept (its read fails)."""
    out = [part.name for raw in paths for part in open_source(raw).parts()]
    return list(dict.fromkeys(out))
