"""Run summaries kept beside a dump, so listing a big dump again reads no span.

The first ``otel-replay ls`` of a dump reads it (every run built, checked
and summarized, a window of the dump at a time) and writes the summaries
beside it: a file ``F``
gets ``F.otel-replay-runs``, a directory ``D`` gets ``D/.otel-replay-runs``.
The cache names every input file with its size, modification and change
times and inode, and the otel-replay version that wrote it; when any of
these changes the dump is read again.  Input with problems (a torn tail, a
bad line) is never cached: the problems are reported on every read.  A place
we cannot write to is no error; the listing is just not cached.

A cache travels with its dump and may come from anyone: it is believed only
when sealed on this machine (see :mod:`otel_replay.seal`; without a key
nothing is cached) and when every field has the type a summary gives it.
Anything else, well-formed or not, is read as no cache: the dump is read.
The file is the seal (hex) on its first line, then the JSON document.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__, seal
from ..runs.stream import map_runs
from ..safe_files import read_regular, replace_atomically
from ..store.errors import FormatError
from ..store.sources import RUNS_SUFFIX, expand, is_stream
from .summary import RunSummary, summarize

SUFFIX = RUNS_SUFFIX
# 2: sealed, and the inputs are stamped with ctime and inode too.
_FORMAT = 2
_SEAL_PURPOSE = b"otel-replay ls summaries"
#: A run's summary takes a few hundred bytes and its spans at least as many: a
#: cache this much larger than its inputs was not written for them.
_MAX_BYTES_PER_INPUT_BYTE = 16


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
    """(name, size, mtime_ns, ctime_ns, inode) of every input file ``path`` names, in read order.

    The change time cannot be set back: a dump rewritten since, whatever its
    size and modification time, is another dump.
    """
    base = Path(path)
    out: list[list[Any]] = []
    for name in expand([path]):
        st = os.stat(name)
        rel = os.path.relpath(name, base) if base.is_dir() else os.path.basename(name)
        out.append([rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    return out


def _read(cache: Path, stamp: list[list[Any]]) -> list[RunSummary] | None:
    """The summaries in ``cache`` if it is sealed here, for these inputs, and well-formed."""
    try:
        # No link, FIFO or device, nor more than the inputs could make summaries of.
        limit = _MAX_BYTES_PER_INPUT_BYTE * sum(size for _, size, *_ in stamp) + (1 << 20)
        head, _, body = read_regular(cache, limit).partition(b"\n")
        if not seal.verify(_SEAL_PURPOSE, body, bytes.fromhex(head.decode("ascii"))):
            return None
        doc = json.loads(body)
        if (
            not isinstance(doc, dict)
            or doc.get("format") != _FORMAT
            or doc.get("version") != __version__
            or doc.get("inputs") != stamp
            or not isinstance(doc.get("runs"), list)
        ):
            return None
        return [RunSummary.from_json(s) for s in doc["runs"]]
    except (OSError, ValueError, RecursionError):
        return None


def _write(cache: Path, stamp: list[list[Any]], summaries: Sequence[RunSummary]) -> None:
    doc = {
        "format": _FORMAT,
        "version": __version__,
        "inputs": stamp,
        "runs": [s.to_json() for s in summaries],
    }
    body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    sealed = seal.tag(_SEAL_PURPOSE, body)
    if sealed is None:
        return  # no key: a cache this machine cannot vouch for would never be read
    with contextlib.suppress(OSError):
        replace_atomically(cache, sealed.hex().encode("ascii") + b"\n" + body)


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
