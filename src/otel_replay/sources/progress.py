"""Progress of long commands and of long passes over big inputs, only when a person is watching.

:func:`working` shows that a command is at work (what it does, for how long
so far) once it has run :data:`DELAY` seconds; :func:`track` and
:func:`track_items` show how far a pass over a big input is, as a bar (inside
the line of :func:`working` when one shows).  All of it goes to stderr, and
only when stderr is a terminal: piped or redirected output never holds it.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

T = TypeVar("T")

#: Smaller inputs are read too fast for a bar to help.
THRESHOLD = 64 * 1024 * 1024
#: Seconds a command runs before :func:`working` shows: a quick one stays silent.
DELAY = 0.5

#: The display :func:`working` opened, which bars join (a terminal shows one at a time).
_active: Any = None


@contextlib.contextmanager
def working(label: str, *, console: Any = None) -> Iterator[None]:
    """Say ``label`` and the time taken so far on stderr while the block runs, once it
    has run :data:`DELAY` seconds, when stderr is a terminal (or on ``console``, a rich
    Console).  The line is gone when the block ends; bars of :func:`track` and
    :func:`track_items` in the block show under it."""
    global _active
    if _active is not None or (console is None and not sys.stderr.isatty()):
        yield
        return
    bar = _progress(console, bytes_done=False, spinner=True)
    bar.add_task(label, total=None)
    lock = threading.Lock()
    shown = False

    def show() -> None:
        nonlocal shown
        with lock:
            if not shown:
                shown = True
                bar.start()

    timer = threading.Timer(DELAY, show)
    timer.daemon = True
    _active = bar
    try:
        if DELAY <= 0:
            show()
        else:
            timer.start()
        yield
    finally:
        timer.cancel()
        with lock:
            if shown:
                bar.stop()
            shown = True  # a timer firing late starts nothing
        _active = None


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
    ends = ((offset + 4 + len(body), (offset, body)) for offset, body in frames)
    for _, frame in track_bytes(ends, total, label, console=console):
        yield frame


def track_bytes(
    items: Iterable[tuple[int, T]], total: int | None, label: str, *, console: Any = None
) -> Iterator[tuple[int, T]]:
    """Yield ``(done, item)`` pairs, showing ``done`` (the bytes read once ``item`` was)
    out of ``total``: the pass over an input not framed by length (JSON lines).

    Shown under the same conditions as :func:`track`.
    """
    bar = _bar(total, total, label, console, bytes_done=True)
    if bar is None:
        yield from items
        return
    with bar as (progress, task):
        for done, item in items:
            progress.update(task, completed=done)
            yield done, item


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


def _progress(console: Any, *, bytes_done: bool, spinner: bool = False) -> Any:
    """A rich Progress on stderr (or ``console``) that leaves nothing behind, not
    taking over stdout: what a command prints there stays its own."""
    # lazy: only a terminal draws it
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        MofNCompleteColumn,
        Progress,
        ProgressColumn,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )
    from rich.text import Text

    done = DownloadColumn() if bytes_done else MofNCompleteColumn()
    columns: tuple[Any, ...] = (TextColumn("{task.description}", markup=False), BarColumn(), done)
    if spinner:

        class Done(ProgressColumn):
            """How far a bar that joined the line is, in its unit; nothing for the line."""

            def render(self, task: Any) -> Any:
                unit = task.fields.get("unit")
                column = DownloadColumn() if unit == "bytes" else MofNCompleteColumn()
                return column.render(task) if unit else Text("")

        columns = (SpinnerColumn(), *columns[:2], Done(), TimeElapsedColumn())
    else:
        columns += (TimeRemainingColumn(),)
    return Progress(
        *columns,
        console=console or Console(stderr=True),
        transient=True,
        redirect_stdout=False,
        redirect_stderr=False,
    )


@contextlib.contextmanager
def _shown(console: Any, label: str, total: int, bytes_done: bool) -> Iterator[tuple[Any, Any]]:
    with _progress(console, bytes_done=bytes_done) as bar:
        yield bar, bar.add_task(label, total=total)


@contextlib.contextmanager
def _joined(label: str, total: int, bytes_done: bool) -> Iterator[tuple[Any, Any]]:
    """A bar in the display :func:`working` opened, removed when its pass ends."""
    bar = _active
    task = bar.add_task(label, total=total, unit="bytes" if bytes_done else "items")
    try:
        yield bar, task
    finally:
        bar.remove_task(task)


def _bar(
    size: int | None, total: int | None, label: str, console: Any, *, bytes_done: bool
) -> contextlib.AbstractContextManager[tuple[Any, Any]] | None:
    if total is None:
        return None
    if _active is not None and console is None:
        return _joined(label, total, bytes_done)  # a command at work shows how far its pass is
    if size is None or size < THRESHOLD:
        return None
    if console is None and not sys.stderr.isatty():
        return None
    return _shown(console, label, total, bytes_done)
