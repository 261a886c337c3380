"""Size-based rotation of a trace file, named and pruned as the Collector's file exporter does.

The Collector rotates with lumberjack (now its fork timberjack): when a write
would take the file past ``max_megabytes``, the file is renamed
``<name>-<time><ext>``, the time as ``2006-01-02T15-04-05.000`` in UTC (or
local time with ``localtime``), and a new file is started under the live
name.  Then backups beyond the ``max_backups`` newest, and those older than
``max_days`` (by the time in their name), are deleted.  Backups named by
timberjack (``<name>-<time>-<reason><ext>``) count as backups too.

The rotation itself (deciding, renaming, following another process's
rotation) lives in :class:`~otel_replay.export.file_exporter.FileSpanExporter`,
under its file lock; this module names and prunes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import logging
import os
import re
from typing import Final

__all__ = [
    "INDEX_SUFFIX",
    "ROTATED",
    "RUNS_SUFFIX",
    "Rotation",
    "backup_name",
    "backups",
    "prune",
]

#: A rotated name: the live name with the rotation time before its extension and,
#: from timberjack, the reason (lowercase ``[a-z0-9_-]``, at most 32) after the time.
ROTATED = re.compile(
    r"^(?P<stem>.+)-(?P<ts>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d{3})"
    r"(?:-(?P<reason>[a-z0-9_-]{1,32}?))?(?P<ext>\.[^.]*)?$"
)
#: The trace-id index beside a dump (see :mod:`.index`), and the run summaries (``ls``).
INDEX_SUFFIX: Final = ".otel-replay-index"
RUNS_SUFFIX: Final = ".otel-replay-runs"

logger = logging.getLogger("otel_replay")

#: lumberjack's backup time layout, ``2006-01-02T15-04-05.000`` in Go's notation.
_LAYOUT = "%Y-%m-%dT%H-%M-%S"
MEGABYTE = 1024 * 1024


@dataclasses.dataclass(frozen=True)
class Rotation:
    """The Collector's ``rotation:`` settings (its defaults: 100 MB, 100 backups, no age limit)."""

    max_megabytes: float = 100
    max_backups: int = 100  #: 0 keeps every backup
    max_days: float = 0  #: 0 keeps backups whatever their age
    localtime: bool = False

    @property
    def max_bytes(self) -> int:
        return max(1, int(self.max_megabytes * MEGABYTE))

    def now(self) -> dt.datetime:
        if self.localtime:
            return dt.datetime.now().astimezone()
        return dt.datetime.now(dt.timezone.utc)


def format_time(when: dt.datetime) -> str:
    """``2006-01-02T15-04-05.000``: milliseconds truncated, as Go formats them."""
    return when.strftime(_LAYOUT) + f".{when.microsecond // 1000:03d}"


def backup_name(path: str, when: dt.datetime) -> str:
    """``dir/name-<time>.ext`` for ``dir/name.ext`` (lumberjack's ``backupName``)."""
    directory, filename = os.path.split(path)
    stem, ext = os.path.splitext(filename)  # ".traces" has no extension here
    return os.path.join(directory, f"{stem}-{format_time(when)}{ext}")


def free_backup_name(path: str, when: dt.datetime) -> str:
    """:func:`backup_name`, a millisecond later while that name is taken.

    Two rotations in one millisecond (two processes, a small size limit)
    must not rename the second file over the first.
    """
    for _ in range(1000):
        name = backup_name(path, when)
        if not os.path.lexists(name):
            return name
        when += dt.timedelta(milliseconds=1)
    raise FileExistsError(f"no free backup name for {path}")


def backups(path: str) -> list[tuple[str, str]]:
    """``(time, path)`` of the backups of the live file ``path``, oldest first."""
    directory, filename = os.path.split(path)
    out = []
    try:
        names = os.listdir(directory or ".")
    except OSError:
        return []
    for name in names:
        m = ROTATED.match(name)
        if m and m["stem"] + (m["ext"] or "") == filename:
            out.append((m["ts"], os.path.join(directory, name)))
    out.sort()
    return out


def _parse(ts: str, localtime: bool) -> dt.datetime | None:
    try:
        when = dt.datetime.strptime(ts[:-4], _LAYOUT).replace(microsecond=int(ts[-3:]) * 1000)
    except ValueError:
        return None
    return when.astimezone() if localtime else when.replace(tzinfo=dt.timezone.utc)


def prune(path: str, rotation: Rotation, now: dt.datetime | None = None) -> list[str]:
    """Delete the backups of ``path`` the settings do not keep; the deleted paths.

    Several processes may prune at once: a backup already gone is no error.
    The blob store stays: it is shared by the live file and every backup.
    """
    found = backups(path)
    doomed: set[str] = set()
    if rotation.max_backups > 0 and len(found) > rotation.max_backups:
        doomed.update(p for _, p in found[: len(found) - rotation.max_backups])
    if rotation.max_days > 0:
        cutoff = (now or rotation.now()) - dt.timedelta(days=rotation.max_days)
        for ts, p in found:
            when = _parse(ts, rotation.localtime)
            if when is not None and when < cutoff:
                doomed.add(p)
    deleted = []
    for p in sorted(doomed):
        try:
            os.unlink(p)
        except FileNotFoundError:
            continue
        except OSError as exc:
            logger.warning("otel-replay: cannot delete old backup %s (%s)", p, exc)
            continue
        deleted.append(p)
        with contextlib.suppress(OSError):
            os.unlink(p + INDEX_SUFFIX)
    return deleted
