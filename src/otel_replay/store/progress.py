"""A progress bar on long passes over big inputs, only when a person is watching."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Smaller inputs are read too fast for a bar to help.
THRESHOLD = 64 * 1024 * 1024


def track(
    frames: Iterable[tuple[int, bytes]],
    total: int | None,
    label: str,
    *,
    console: Any = None,
) -> Iterator[tuple[int, bytes]]:
    """Yield ``(offset, body)`` frames, showing how far into ``total`` bytes they are.

    The bar goes to stderr when it is a terminal (or to ``console``, a rich
    Console), and only for inputs over :data:`THRESHOLD`.
    """
    bar = _bar(total, total, label, console, bytes_done=True)
    if bar is None:
        yield from frames
        return
    with bar as (progress, task):
        for offset, body in frames:
            progress.update(task, completed=offset + 4 + len(body))
            yield offset, body


def track_items(
    items: Iterable[T], count: int, size: int | None, label: str, *, console: Any = None
) -> Iterator[T]:
    """Yield ``items``, counting them out of ``count``: parts of an input of ``size`` bytes.

    Shown under the same conditions as :func:`track`.
    """
    bar = _bar(size, count, label, console, bytes_done=False)
    if bar is None:
        yield from items
        return
    with bar as (progress, task):
        for item in items:
            yield item
            progress.advance(task)


@contextlib.contextmanager
def _shown(console: Any, label: str, total: int, bytes_done: bool) -> Iterator[tuple[Any, Any]]:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeRemainingColumn,
    )

    done = DownloadColumn() if bytes_done else MofNCompleteColumn()
    columns = (TextColumn("{task.description}"), BarColumn(), done, TimeRemainingColumn())
    with Progress(*columns, console=console or Console(stderr=True), transient=True) as bar:
        yield bar, bar.add_task(label, total=total)


def _bar(
    size: int | None, total: int | None, label: str, console: Any, *, bytes_done: bool
) -> contextlib.AbstractContextManager[tuple[Any, Any]] | None:
    if size is None or total is None or size < THRESHOLD:
        return None
    if console is None and not sys.stderr.isatty():
        return None
    return _shown(console, label, total, bytes_done)
