"""Read stored spans and log records of one named input, whatever its kind and format.

The name's kind (a file, stdin, a URL, a search, a database) is told once by
:func:`~otel_replay.sources.files.open_source`; the format of its bytes is
detected by :mod:`.formats`, which documents the framings, compressions and
faults it reads.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TypeVar

from ..otlp.records import SpanRecord
from . import formats
from .files import open_source
from .formats import appended_traces, trace_index
from .source import Source

__all__ = ["Reader", "RecordReader", "SpanReader", "appended_traces", "trace_index"]

T = TypeVar("T")


def _source(path: str | os.PathLike[str] | Source) -> Source:
    return path if isinstance(path, Source) else open_source(path)


class Reader(formats.Reader[T]):
    """Iterate what one input (file path, ``-`` for stdin, an http(s) URL, a search or a
    database, or its :class:`~otel_replay.sources.source.Source`) holds; see
    :class:`.formats.Reader`."""

    def __init__(
        self,
        path: str | os.PathLike[str] | Source,
        trace_ids: Iterable[str] | None = None,
        index_as_of: tuple[int, int] | None = None,
    ) -> None:
        super().__init__(_source(path), trace_ids, index_as_of)


class RecordReader(formats.RecordReader):
    """Iterate the span and log records of one input (file path, ``-`` for stdin, an
    http(s) URL, a search or a database, or its
    :class:`~otel_replay.sources.source.Source`).

    Faults land in :attr:`problems`; :attr:`format` says what was detected.
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | Source,
        trace_ids: Iterable[str] | None = None,
        index_as_of: tuple[int, int] | None = None,
        *,
        lazy: bool = False,
    ) -> None:
        """``index_as_of``: read through the index of this stamp even if the dump grew
        since; ``lazy``: see :class:`.formats.RecordReader`."""
        super().__init__(_source(path), trace_ids, index_as_of, lazy=lazy)


class SpanReader(RecordReader):
    """Iterate the spans of one input; log records in it are skipped and reported once."""

    logs = False

    def __iter__(self) -> Iterator[SpanRecord]:
        for record in super().__iter__():
            if isinstance(record, SpanRecord):
                yield record
