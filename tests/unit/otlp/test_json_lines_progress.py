"""A long read of a JSON-lines dump shows how far it is, in bytes, as a framed dump does.

A newcomer's ``check`` of an 80 MB dump ran in silence: the bar a terminal shows
for a 4-byte framed (protobuf) dump was not shown for the Collector's other format,
one OTLP/JSON request per line.  Drawn over real traces of third-party
instrumentations (JSON lines as their packages wrote them) and over the same spans
converted to each framing: the bar is asked for with the file's size, and what it is
told rises to that size.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.sources import progress
from tests.fixtures.data import TESTS

THIRDPARTY = TESTS / "data" / "thirdparty"
#: Real traces of third-party instrumentations, as JSON lines.
TRACES = sorted(THIRDPARTY.glob("*/*/traces.otlp.jsonl"))


class _Bar:
    """What a pass told its bar: the label and total asked for, then each count."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, int | None, bool]] = []
        self.counts: list[int] = []

    def __call__(
        self, size: int | None, total: int | None, label: str, console: Any, *, bytes_done: bool
    ) -> contextlib.AbstractContextManager[tuple[Any, Any]]:
        self.asked.append((label, total, bytes_done))
        return self._shown()

    @contextlib.contextmanager
    def _shown(self) -> Iterator[tuple[Any, Any]]:
        bar = self

        class Progress:
            def update(self, task: Any, completed: int) -> None:
                bar.counts.append(completed)

        yield Progress(), 0


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_reading_json_lines_tells_the_bar_the_bytes_read_of_the_file(
    trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The same spans in both of the Collector's formats, read the same way.
    framed = tmp_path / "dump.otlp"
    lines = tmp_path / "dump.jsonl"
    for out in (framed, lines):
        done = CliRunner().invoke(cli, ["convert", str(trace), "-o", str(out)])
        assert done.exit_code == 0, done.output
    for path in (trace, lines, framed):
        bar = _Bar()
        monkeypatch.setattr(progress, "_bar", bar)
        otel_replay.load(path)
        size = path.stat().st_size
        assert bar.asked == [(f"reading {path}", size, True)], path.name
        assert bar.counts == sorted(bar.counts) and bar.counts[-1] == size, path.name


def test_the_bar_of_a_big_json_lines_read_shows_bytes_on_a_terminal(tmp_path: Path) -> None:
    import io

    from rich.console import Console

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    items = [(n * 1000, n) for n in range(1, 11)]
    assert list(progress.track_bytes(iter(items), 10_000, "small", console=console)) == items
    assert out.getvalue() == ""  # under the threshold: no bar
    big = progress.THRESHOLD * 2
    got = list(progress.track_bytes(iter(items), big, "reading runs.jsonl", console=console))
    assert got == items
    assert "reading runs.jsonl" in out.getvalue() and "134.2 MB" in out.getvalue()
