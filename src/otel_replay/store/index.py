"""A trace-id index beside a big dump, so one trace loads without reading the rest.

One pass over a 4-byte framed file records, for each trace id, the records
(offset, length) holding its spans.  The index lives beside the dump
(``<dump>.otel-replay-index``) with the dump's size and modification time;
a dump that changed since is indexed again.  Other formats are not indexed:
they are scanned, keeping only the wanted traces.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from .errors import FormatError

SUFFIX = ".otel-replay-index"
VERSION = 1


def index_path(dump: str | os.PathLike[str]) -> Path:
    return Path(os.fspath(dump) + SUFFIX)


class TraceIndex:
    """trace id -> records of one dump."""

    def __init__(self, size: int, mtime_ns: int, traces: dict[str, list[list[int]]]) -> None:
        self.size = size
        self.mtime_ns = mtime_ns
        self.traces = traces

    def records(self, trace_ids: set[str]) -> list[tuple[int, int]]:
        """(offset, length) of every record holding one of ``trace_ids``, in file order."""
        found = {tuple(r) for t in trace_ids for r in self.traces.get(t, ())}
        return sorted((int(o), int(n)) for o, n in found)

    def matching(self, prefix: str) -> list[str]:
        prefix = prefix.lower()
        return sorted(t for t in self.traces if t.startswith(prefix))


def build(dump: str | os.PathLike[str], frames: Iterator[tuple[int, bytes]]) -> TraceIndex:
    """Index the records ``frames`` yields (offset, body) for ``dump``."""
    stat = os.stat(dump)
    traces: dict[str, list[list[int]]] = {}
    for offset, body in frames:
        request = ExportTraceServiceRequest.FromString(body)
        seen: set[bytes] = set()
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    seen.add(span.trace_id)
        for tid in seen:
            traces.setdefault(tid.hex(), []).append([offset + 4, len(body)])
    return TraceIndex(stat.st_size, stat.st_mtime_ns, traces)


def save(dump: str | os.PathLike[str], index: TraceIndex) -> None:
    """Write the index beside the dump (atomically); a read-only place is no error."""
    target = index_path(dump)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    doc = {
        "version": VERSION,
        "size": index.size,
        "mtime_ns": index.mtime_ns,
        "traces": index.traces,
    }
    try:
        tmp.write_text(json.dumps(doc, separators=(",", ":")))
        os.replace(tmp, target)
    except OSError:
        tmp.unlink(missing_ok=True)


def load(dump: str | os.PathLike[str]) -> TraceIndex | None:
    """The saved index, or None when missing, unreadable or older than the dump."""
    try:
        stat = os.stat(dump)
        doc = json.loads(index_path(dump).read_text())
    except (OSError, ValueError):
        return None
    if (
        not isinstance(doc, dict)
        or doc.get("version") != VERSION
        or doc.get("size") != stat.st_size
        or doc.get("mtime_ns") != stat.st_mtime_ns
        or not isinstance(doc.get("traces"), dict)
    ):
        return None
    return TraceIndex(stat.st_size, stat.st_mtime_ns, doc["traces"])


def read_records(
    dump: str | os.PathLike[str], records: list[tuple[int, int]]
) -> Iterator[tuple[int, bytes]]:
    """(offset of the record, body) for the given (body offset, length) pairs."""
    name = os.fspath(dump)
    with open(name, "rb") as f:
        for offset, length in records:
            f.seek(offset)
            body = f.read(length)
            if len(body) < length:
                raise FormatError(name, offset - 4, "the dump changed under its index")
            yield offset - 4, body
