"""``otel_replay.load(*paths)``: stored spans -> runs."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path

from ..blobs import BlobStore
from ..payload_attributes import BlobReader
from ..store.errors import FormatError
from ..store.reader import SpanReader
from ..store.records import SpanRecord
from .build import build_runs
from .model import Run


class LoadWarning(UserWarning):
    """Some input could not be read; what was read before the fault is kept."""


class Runs(list[Run]):
    """The runs read, plus :attr:`problems`: one :class:`FormatError` per unreadable input."""

    problems: list[FormatError]

    def __init__(self, runs: list[Run], problems: list[FormatError]) -> None:
        super().__init__(runs)
        self.problems = problems


def _files(path: str | os.PathLike[str]) -> list[str]:
    p = Path(path)
    if p.is_dir():
        return sorted(str(f) for f in p.iterdir() if f.is_file() and not f.name.startswith("."))
    return [os.fspath(path)]


def load(*paths: str | os.PathLike[str], strict: bool = False) -> Runs:
    """Read trace files (or directories of them) and build their runs.

    A trace spread over several files becomes one run.  Unreadable input is
    reported in ``Runs.problems`` and as a :class:`LoadWarning` (file and byte
    offset); everything before the fault is kept.  ``strict`` raises the first
    problem instead.
    """
    problems: list[FormatError] = []
    blob_readers: dict[str, BlobReader] = {}

    def spans() -> Iterator[SpanRecord]:
        for path in paths:
            if not os.path.exists(path):
                problems.append(FormatError(os.fspath(path), 0, "no such file or directory"))
                continue
            for name in _files(path):
                reader = SpanReader(name)
                blob_readers[name] = BlobStore(name).get
                yield from reader
                problems.extend(reader.problems)

    runs = build_runs(spans(), lambda span: blob_readers.get(span.source))
    if strict and problems:
        raise problems[0]
    for problem in problems:
        warnings.warn(str(problem), LoadWarning, stacklevel=2)
    return Runs(runs, problems)
