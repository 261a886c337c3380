"""A named input, its kind decided once: what it stands for, how it is opened, what it holds.

:func:`~otel_replay.sources.files.open_source` tells the kind of a name (stdin,
a file, a folder, a glob, a URL, a Tempo or Jaeger search, a ClickHouse
table) and gives the :class:`Source` of that kind; each kind's class lives
with the code of its kind (:mod:`.files`, :mod:`.download`, :mod:`.tempo`,
:mod:`.jaeger`, :mod:`.clickhouse.source`).  A source either holds bytes, whose
format the reader detects (:meth:`Source.open`), or gives records itself
(:meth:`Source.read_records`, a database); a folder, a pattern or a search
stands for other inputs (:meth:`Source.parts`).

What a backend computes itself from the runs it holds (ClickHouse's run
summaries and check) needs the run model, which sits above this package: the
commands that use it key it by :attr:`Source.kind`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import IO, TYPE_CHECKING, ClassVar, Literal

from ..otlp.errors import FormatError

if TYPE_CHECKING:
    from ..otlp.records import Record

__all__ = ["CLICKHOUSE", "Kind", "SearchFilter", "Source"]

#: The kinds of input a name may be.
Kind = Literal["stdin", "file", "folder", "glob", "url", "tempo", "jaeger", "clickhouse"]
#: A ClickHouse table of spans (``clickhouse://``, ``chdb://``): it computes run summaries
#: and the check's triage itself.
CLICKHOUSE: Kind = "clickhouse"


@dataclasses.dataclass(frozen=True)
class SearchFilter:
    """What a trace backend's search may be narrowed by, as the user gave it."""

    #: An ISO time or a span back from now (``2h``).
    since: str | None = None
    #: Traces with a span of an agent whose name contains this.
    agent: str | None = None
    #: Traces with a span of this tool.
    tool: str | None = None
    #: Traces with a failed span only.
    errors_only: bool = False


class Source:
    """One input a name stands for, of one :attr:`kind`.

    :meth:`records` gives the span and log records it holds (only those of
    some traces when asked), and :attr:`problems` what was wrong with it.
    """

    kind: ClassVar[Kind]
    #: A file on disk: a trace index, a summary cache and a blob store may sit beside it
    #: (stdin, URLs, searches and databases have none).
    local: ClassVar[bool] = False
    #: Whether the reader reads its bytes (see :meth:`open`); False for a source that
    #: gives records itself (see :meth:`read_records`).
    holds_bytes: ClassVar[bool] = True

    def __init__(self, name: str) -> None:
        #: The name as given (a folder's file keeps the type that says it was found).
        self.name = name
        #: What was wrong with it, as :meth:`records` read it.
        self.problems: list[FormatError] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    @property
    def found(self) -> bool:
        """Whether it was found in a folder or by a pattern, not named itself: holding no
        trace data, it is passed over rather than reported."""
        return False

    def parts(self) -> list[Source]:
        """The inputs it stands for, in the order to read them: itself, or the files of a
        folder or pattern, or the answers of a search."""
        return [self]

    def open(self) -> tuple[IO[bytes], int | None]:
        """Its bytes, as a binary file (seekable when possible) and their size when known.

        Raises :class:`FormatError` naming why it cannot be read, or ``OSError``.
        """
        raise FormatError.whole(self.name, "holds no bytes to read")

    def read_records(
        self, trace_ids: Iterable[str] | None, problems: list[FormatError]
    ) -> Iterator[Record]:
        """The records of a source that gives them itself (``holds_bytes`` False): only those
        of ``trace_ids`` (full ids or prefixes) when given; a record that cannot be read
        lands in ``problems``; the source refusing raises :class:`FormatError`."""
        raise NotImplementedError

    def finds_nothing(self, reason: str) -> bool:
        """Whether the failure ``reason`` of opening it means only that a search matched
        nothing: no records, and nothing wrong."""
        return False

    def narrowed(self, search: SearchFilter) -> Source:
        """The source with the filters of ``search`` its backend takes put in its search,
        so that it fetches less; itself when it takes none."""
        return self

    def records(
        self, wanted: Iterable[str] | None = None, *, lazy: bool = False
    ) -> Iterator[Record]:
        """The span and log records of every input it stands for, in order (only those of
        the traces ``wanted``, full ids or prefixes, when given); faults land in
        :attr:`problems`.  ``lazy``: see
        :class:`~otel_replay.sources.formats.RecordReader`."""
        # The format reader, for reading only (a file exporter names sources too).
        from .formats import RecordReader

        for part in self.parts():
            reader = RecordReader(part, wanted, lazy=lazy)
            try:
                yield from reader
            finally:
                self.problems += reader.problems
