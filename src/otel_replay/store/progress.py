"""A progress bar on long passes over big inputs, only when a person is watching."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import Any

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
    if total is None or total < THRESHOLD or (console is None and not sys.stderr.isatty()):
        yield from frames
        return
    from rich.console import Console
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
    )
    with Progress(*columns, console=console or Console(stderr=True), transient=True) as bar:
        task = bar.add_task(label, total=total)
        for offset, body in frames:
            bar.update(task, completed=offset + 4 + len(body))
            yield offset, body
