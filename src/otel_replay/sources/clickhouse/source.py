"""``clickhouse://``, ``chdb://``: a ClickHouse table as a :class:`~..source.Source`."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from ...otlp.errors import FormatError
from ...otlp.records import Record
from ..source import CLICKHOUSE, Source

__all__ = ["ClickHouseSource"]


class ClickHouseSource(Source):
    """A ClickHouse table of spans (and the logs table beside it): ClickHouse gives the
    records, only those of the traces asked for (see :mod:`.spans`)."""

    kind = CLICKHOUSE
    holds_bytes = False

    def read_records(
        self, trace_ids: Iterable[str] | None, problems: list[FormatError]
    ) -> Iterator[Record]:
        # The SQL readers (and their client) only for a table.
        from .spans import read_records

        return read_records(self.name, trace_ids, problems)
