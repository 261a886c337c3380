"""Run summaries kept beside a dump, so listing a big dump again reads no span.

The first ``otel-replay ls`` of a dump reads it (every run built, checked
and summarized, a window of the dump at a time) and writes the summaries
beside it: a file ``F``
gets ``F.otel-replay-runs``, a directory ``D`` gets ``D/.otel-replay-runs``.
The cache names every input file with its size and modification time and
the otel-replay version that wrote it; when any of these changes the dump is
read again.  Input with problems (a torn tail, a bad line) is never cached:
the problems are reported on every read.  A place we cannot write to is no
error; the listing is just not cached.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..runs.stream import map_runs
from ..store.errors import FormatError
from ..store.sources import expand, is_stream
from .summary import RunSummary, summarize

SUFFIX = ".otel-replay-runs"
_FORMAT = 1


def cache_path(path: str) -> Path | None:
    """Where the summaries of ``path`` are kept; None for streams, URLs, globs, missing paths."""
    if is_stream(path):
        return None
    p = Path(path)
    if p.is_dir():
        return p / SUFFIX
    if p.is_file():
        return Path(path + SUFFIX)
    return None


def _stamp(path: str) -> list[list[Any]]:
    """(name, size, mtime_ns) of every input file ``path`` names, in read order."""
    base = Path(path)
    out: list[list[Any]] = []
    for name in expand([path]):
        st = os.stat(name)
        rel = os.path.relpath(name, base) if base.is_dir() else os.path.basename(name)
        out.append([rel, st.st_size, st.st_mtime_ns])
    return out


def _read(cache: Path, stamp: list[list[Any]]) -> list[RunSummary] | None:
    try:
        with open(cache, encoding="utf-8") as f:
            doc = json.load(f)
        if (
            doc.get("format") != _FORMAT
            or doc.get("version") != __version__
            or doc.get("inputs") != stamp
        ):
            return None
        return [RunSummary.from_json(s) for s in doc["runs"]]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _write(cache: Path, stamp: list[list[Any]], summaries: Sequence[RunSummary]) -> None:
    doc = {
        "format": _FORMAT,
        "version": __version__,
        "inputs": stamp,
        "runs": [s.to_json() for s in summaries],
    }
    tmp = cache.with_name(f".{cache.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, cache)
    except OSError:
        tmp.unlink(missing_ok=True)


def summaries(
    paths: Sequence[str], *, use_cache: bool = True, jobs: int | None = None
) -> tuple[list[RunSummary], list[FormatError]]:
    """The summaries of every run in ``paths`` (in start order), and the problems met.

    They come from the cache when it is current; else the dump is read a
    window at a time, by ``jobs`` worker processes (default:
    :func:`~otel_replay.runs.stream.default_jobs`; see
    :func:`~otel_replay.runs.stream.map_runs`), and the cache written when
    nothing was wrong.  Only a single file or directory is cached.
    """
    cache = cache_path(paths[0]) if use_cache and len(paths) == 1 else None
    stamp: list[list[Any]] | None = None
    if cache is not None:
        try:
            stamp = _stamp(paths[0])
        except OSError:
            cache = None
        if cache is not None and stamp is not None:
            found = _read(cache, stamp)
            if found is not None:
                return found, []
    mapped = map_runs(paths, summarize, jobs=jobs)
    result = sorted(mapped.values, key=lambda s: (s.start_ns, s.run_id))
    if cache is not None and stamp is not None and not mapped.problems:
        _write(cache, stamp, result)
    return result, mapped.problems
