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

A dump of 4-byte framed files or JSON lines that only grew since is not
read whole again: each file the cache names is still there (by inode: a rotated file
is renamed) with the bytes it had (their SHA-256 is kept), maybe followed
by more, and new files may have come.  A run of an agent's trace depends on
that trace's spans alone; only the traces with records in the new bytes,
and the runs that others may change (client-only traces stitched into
conversations, calls recorded twice), are read and summarized again,
through the files' trace indexes (JSON lines: the new lines are read for
their trace ids, the files scanned for those traces).  A dump with log
records that name no span (joined to runs by time; in JSON lines, any log
record), or where more than :data:`MOST_REREAD` traces and an eighth of its
runs would be read again, is read whole.

A cache travels with its dump and may come from anyone: it is believed only
when sealed on this machine (see :mod:`otel_replay.seal`; without a key
nothing is cached) and when every field has the type a summary gives it.
Anything else, well-formed or not, is read as no cache: the dump is read.
The file is the seal (hex) on its first line, then the JSON document.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import seal
from .._version import __version__
from ..otlp.errors import FormatError
from ..otlp.rotation import RUNS_SUFFIX
from ..runs.load import Runs, read_runs
from ..runs.model import Run
from ..runs.quick_summary import quick_summary
from ..runs.stream import WINDOW_BYTES, map_runs
from ..runs.summary import RunSummary, summarize
from ..safe_files import open_regular, read_regular, replace_atomically
from ..sources.files import expand, is_stream
from ..sources.reader import appended_traces

SUFFIX = RUNS_SUFFIX
# 2: sealed, and the inputs are stamped with ctime and inode too.
# 3: each input file's digest and the runs no other trace changes, to read only what grew.
_FORMAT = 3
#: A grown dump is read whole (a window at a time) when more of its traces than this, and
#: than an eighth of its runs, are to be read again: they are read at once.
MOST_REREAD = 64
#: How OTLP/JSON names the log records of a request: in a file of JSON lines, these
#: bytes (quotes unescaped: not inside a text value) mean it may hold log records.
_LOG_KEYS = (b'"resourceLogs"', b'"resource_logs"')
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


@dataclasses.dataclass
class _Kept:
    """What a cache holds: the runs' lines, the inputs they were made of, the SHA-256 of
    each input's bytes (None when one could not be read), the runs that depend on their
    own trace alone, and which inputs may hold log records."""

    stamp: list[list[Any]]
    runs: list[RunSummary]
    sha256: list[str] | None
    alone: set[str]
    #: Whether each input may hold log records, as JSON lines spell them.
    logs: list[bool] | None


def _read(cache: Path, stamp: list[list[Any]]) -> _Kept | None:
    """What ``cache`` holds if it is sealed here, for inputs like these, and well-formed."""
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
            or not isinstance(doc.get("inputs"), list)
            or not all(_is_input(i) for i in doc["inputs"])
            or not isinstance(doc.get("runs"), list)
            or not _are_digests(doc.get("sha256"), len(doc["inputs"]))
            or not _are_flags(doc.get("logs"), len(doc["inputs"]))
            or not isinstance(doc.get("alone"), list)
            or not all(isinstance(a, str) for a in doc["alone"])
        ):
            return None
        runs = [RunSummary.from_json(s) for s in doc["runs"]]
        return _Kept(doc["inputs"], runs, doc["sha256"], set(doc["alone"]), doc["logs"])
    except (OSError, ValueError, RecursionError):
        return None


def _is_input(stamp: Any) -> bool:
    """Whether ``stamp`` is one input of :func:`_stamp`: a name and four integers."""
    return (
        type(stamp) is list
        and len(stamp) == 5
        and type(stamp[0]) is str
        and all(type(v) is int for v in stamp[1:])
    )


def _are_digests(value: Any, inputs: int) -> bool:
    """Whether ``value`` is None or a hex SHA-256 for each of ``inputs`` inputs."""
    return value is None or (
        type(value) is list
        and len(value) == inputs
        and all(type(v) is str and len(v) == 64 for v in value)
    )


def _are_flags(value: Any, inputs: int) -> bool:
    """Whether ``value`` is None or a boolean for each of ``inputs`` inputs."""
    return value is None or (
        type(value) is list and len(value) == inputs and all(type(v) is bool for v in value)
    )


def _write(cache: Path, kept: _Kept) -> None:
    doc = {
        "format": _FORMAT,
        "version": __version__,
        "inputs": kept.stamp,
        "sha256": kept.sha256,
        "alone": sorted(kept.alone),
        "logs": kept.logs,
        "runs": [s.to_json() for s in kept.runs],
    }
    body = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    sealed = seal.tag(_SEAL_PURPOSE, body)
    if sealed is None:
        return  # no key: a cache this machine cannot vouch for would never be read
    with contextlib.suppress(OSError):
        replace_atomically(cache, sealed.hex().encode("ascii") + b"\n" + body)


def _line(run: Run) -> tuple[RunSummary, bool]:
    """A run's ``ls`` line, and whether it depends on its own trace alone: from its span
    records when they tell it (:func:`~otel_replay.runs.quick_summary.quick_summary`: such
    a run holds an agent's step), else from its steps."""
    quick = quick_summary(run)
    if quick is not None:
        return quick, True
    return summarize(run), _alone(run)


def _alone(run: Run) -> bool:
    """Whether ``run`` depends on its own trace alone: a trace with an agent's step is
    never stitched into a conversation nor merged as a second record of one call (only
    traces of model calls, or of one tool call, are), and no such trace joins it."""
    return any(s.kind == "agent" for s in run.steps)


@dataclasses.dataclass
class _Scanned:
    """A file's bytes as scanned: the SHA-256 of each length asked for, and whether any of
    them spell :data:`_LOG_KEYS` (in a file of JSON text)."""

    digests: list[str]
    logs: bool


def _scan(path: str, sizes: Sequence[int]) -> _Scanned | None:
    """The first ``n`` bytes of the regular file ``path`` scanned, for each ``n`` of
    ``sizes`` (ascending); None when it cannot be read or is shorter."""
    out = _Scanned([], False)
    h = hashlib.sha256()
    done, last, json = 0, b"", None
    try:
        fd = open_regular(path)
    except OSError:
        return None
    try:
        for size in sizes:
            while done < size:
                chunk = os.read(fd, min(size - done, 1 << 20))
                if not chunk:
                    return None
                h.update(chunk)
                done += len(chunk)
                if json is None:  # JSON text (JSON lines) starts so; protobuf never does
                    json = chunk.lstrip()[:1] in (b"{", b"[")
                if json:
                    seen = last + chunk  # a key cut between two chunks is found too
                    out.logs = out.logs or any(key in seen for key in _LOG_KEYS)
                    last = chunk[-16:]
            out.digests.append(h.hexdigest())
    except OSError:
        return None
    finally:
        os.close(fd)
    return out


def _files(path: str, stamp: list[list[Any]]) -> list[str]:
    """The file each input of ``stamp`` (see :func:`_stamp`) names."""
    if Path(path).is_dir():
        return [os.path.join(path, rel) for rel, *_ in stamp]
    return [path] * len(stamp)


def _scan_all(path: str, stamp: list[list[Any]]) -> tuple[list[str] | None, list[bool] | None]:
    """The SHA-256 of each input of ``stamp``, as long as stamped, and whether each may hold
    log records; (None, None) if one cannot be read."""
    digests, logs = [], []
    for name, (_, size, *_) in zip(_files(path, stamp), stamp, strict=True):
        scanned = _scan(name, [size])
        if scanned is None:
            return None, None
        digests += scanned.digests
        logs.append(scanned.logs)
    return digests, logs


def _grown(path: str, kept: _Kept, stamp: list[list[Any]]) -> _Kept | None:
    """The summaries of ``path`` read from where each of its files ended when ``kept`` was
    made, if the dump only grew since; else None (it is read whole)."""
    if kept.sha256 is None or kept.logs is None:
        return None
    before = {
        entry[4]: (entry, digest, logs)
        for entry, digest, logs in zip(kept.stamp, kept.sha256, kept.logs, strict=True)
    }
    if len(before) != len(kept.stamp):
        return None  # one file named twice (hard links): no telling which grew
    appended: set[str] = set()
    digests: list[str] = []
    flags: list[bool] = []
    for name, entry in zip(_files(path, stamp), stamp, strict=True):
        size, inode = entry[1], entry[4]
        old_entry, old_digest, old_logs = before.pop(inode, (None, "", False))
        if old_entry == entry:  # untouched (the change time says so)
            start, digest, logs = size, old_digest, old_logs
        else:
            start = old_entry[1] if old_entry is not None else 0  # a new file: all of it
            found = _scan(name, [start, size]) if start <= size else None
            if found is None or (old_entry is not None and found.digests[0] != old_digest):
                return None  # rewritten, not appended to
            digest, logs = found.digests[1], found.logs
        digests.append(digest)
        flags.append(logs)
        # (Bytes appended since the stamp are read too: they are read again next time.)
        new = appended_traces(name, start, size, WINDOW_BYTES, logs_before=logs)
        if new is None:
            return None
        appended |= new
    if before:
        return None  # a file gone: its runs with it
    # Read again: the traces the new bytes add to, and every run others may change.
    again = [s for s in kept.runs if s.run_id not in kept.alone or appended & {*s.trace_ids}]
    wanted = appended.union(*(s.trace_ids for s in again))
    if len(wanted) > max(MOST_REREAD, len(kept.runs) // 8):
        return None
    runs = read_runs([path], wanted) if wanted else Runs([])
    if runs.problems:
        return None  # reported by reading it whole
    redone = {t for s in again for t in s.trace_ids}
    lines = [s for s in kept.runs if redone.isdisjoint(s.trace_ids)]
    alone = {s.run_id for s in lines} & kept.alone
    for run in runs:
        lines.append(summarize(run))
        if _alone(run):
            alone.add(run.run_id)
    lines.sort(key=lambda s: (s.start_ns, s.run_id))
    return _Kept(stamp, lines, digests, alone, flags)


def summaries(
    paths: Sequence[str], *, use_cache: bool = True, jobs: int | None = None
) -> tuple[list[RunSummary], list[FormatError]]:
    """The summaries of every run in ``paths`` (in start order), and the problems met.

    They come from the cache when it is current; from the cache and the
    traces read again when the dump only grew since; else the dump is read a
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
            kept = _read(cache, stamp)
            if kept is not None and kept.stamp == stamp:
                return kept.runs, []
            grown = _grown(paths[0], kept, stamp) if kept is not None else None
            if grown is not None:
                _write(cache, grown)
                return grown.runs, []
    # Runs unbuilt: most lines are computed from the spans alone.
    mapped = map_runs(paths, _line, jobs=jobs, pending=True)
    lines = sorted(mapped.values, key=lambda v: (v[0].start_ns, v[0].run_id))
    result = [summary for summary, _ in lines]
    if cache is not None and stamp is not None and not mapped.problems:
        alone = {summary.run_id for summary, by_itself in lines if by_itself}
        digests, logs = _scan_all(paths[0], stamp)
        _write(cache, _Kept(stamp, result, digests, alone, logs))
    return result, mapped.problems
