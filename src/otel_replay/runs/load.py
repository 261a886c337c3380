"""``otel_replay.load(*paths)``: stored spans and log records -> runs."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator, Mapping

from ..otlp.errors import FormatError
from ..otlp.records import LogRecord, Record, SpanRecord
from ..payload.attributes import BlobReader
from ..payload.blobs import BlobStore, BlobUnavailable
from ..payload.references import RefUnavailable, stored_blob
from ..sources.files import expand, is_stream, rotated_from, same_set
from ..sources.reader import RecordReader
from .build import assemble, build_traces
from .log_events import unjoined
from .model import Run, no_cycle_collection


class LoadWarning(UserWarning):
    """Some input could not be read; what was read before the fault is kept."""


class Runs(list[Run]):
    """The runs read, plus :attr:`problems`: one :class:`FormatError` per unreadable input.

    :attr:`unjoined_logs` holds the log records read that belong to no step:
    no span id, or a span that was not among the inputs.
    """

    problems: list[FormatError]
    unjoined_logs: list[LogRecord]

    def __init__(
        self,
        runs: list[Run] | None = None,
        problems: list[FormatError] | None = None,
        unjoined_logs: list[LogRecord] | None = None,
    ) -> None:
        super().__init__(runs or [])
        self.problems = list(problems or [])
        self.unjoined_logs = list(unjoined_logs or [])


def _inputs(path: str) -> tuple[list[str], FormatError | None]:
    """The files ``path`` names (see :func:`~otel_replay.sources.files.expand`)."""
    if is_stream(path):
        return expand([path]), None  # itself, or the traces a search names
    try:
        found = expand([path])
    except OSError as exc:
        return [], FormatError.whole(path, f"cannot list ({exc.strerror or exc})")
    if not found and os.path.isdir(path):
        return [], None  # an empty directory: no runs, nothing wrong
    if not any(os.path.exists(f) for f in found):
        return [], FormatError.whole(path, "no such file")
    return found, None


def _blob_reader(name: str) -> BlobReader:
    """The blobs beside ``name``; for a rotated file, also those beside its live name
    (a writer that rotates keeps one blob store under the live name, shared by every
    backup); then those of the payload stores the user allows (see
    :func:`~otel_replay.payload.references.stored_blob`).  A URL or a database has only
    the latter."""
    readers: list[BlobReader] = []
    if not is_stream(name):
        readers.append(BlobStore(name).get)
        live = rotated_from(name)
        if live is not None:
            readers.append(BlobStore(live).get)
    readers.append(_stored_blob)

    def get(ref: str) -> bytes | None:
        refused: BlobUnavailable | None = None
        for reader in readers:
            try:
                data = reader(ref)
            except BlobUnavailable as exc:
                refused = refused or exc
                continue
            if data is not None:
                return data
        if refused is not None:
            raise refused  # say why the one beside the file was not read
        return None

    return get


def _stored_blob(ref: str) -> bytes | None:
    try:
        return stored_blob(ref)
    except RefUnavailable as exc:
        raise BlobUnavailable(ref, str(exc), "payload") from None


def load(
    *paths: str | os.PathLike[str],
    strict: bool = False,
    trace_id: str | Iterable[str] | None = None,
) -> Runs:
    """Read trace files (or directories of them, or globs) and build their runs.

    A trace spread over several files becomes one run; payloads kept in a blob
    store resolve beside the file that names them.  Log dumps may be given
    too (or files mixing both signals): GenAI content sent as log events
    fills the model steps of the spans they name (see
    :mod:`~otel_replay.runs.log_events`).  Unreadable input is reported in
    :attr:`Runs.problems` and once as a :class:`LoadWarning` (file and byte
    offset); everything before the fault is kept.  With
    ``strict`` the first problem is raised instead, after reading.

    ``trace_id`` (an id, a prefix, or several) keeps only those traces; a
    4-byte framed dump is then read through a trace index kept beside it
    (built on first use, rebuilt when the dump changes).
    """
    wanted = [trace_id] if isinstance(trace_id, str) else trace_id
    # Runs are often loaded to pick one: the others' spans need not be decoded.
    runs = read_runs([os.fspath(p) for p in paths], wanted, lazy=True)
    if strict and runs.problems:
        raise runs.problems[0]
    for problem in runs.problems:
        warnings.warn(str(problem), LoadWarning, stacklevel=2)
    return runs


def read_runs(
    paths: Iterable[str],
    wanted: Iterable[str] | None = None,
    as_of: Mapping[str, tuple[int, int]] | None = None,
    *,
    lazy: bool = False,
    pending: bool = False,
) -> Runs:
    """:func:`load` without the warnings: problems only in :attr:`Runs.problems`.

    ``as_of`` maps file names to the stamp of the trace index to read them
    through, even if they have grown since (see :func:`~otel_replay.otlp.index.load`).
    ``lazy``: for runs that may not all be used, an agent's run has its steps built
    when first asked for (see :class:`~.model.PendingRun`) and its spans decoded then
    (see :class:`~otel_replay.sources.reader.RecordReader`).  ``pending``: spans
    decoded now, but an agent's run is a :class:`~.model.PendingRun` of them, built
    alone when its steps are asked for (a reader that needs less than the steps of
    most runs).
    """
    with no_cycle_collection():
        traces = read_traces(paths, wanted, as_of, lazy=lazy, pending=pending)
        return Runs(assemble(traces), traces.problems, traces.unjoined_logs)


def read_traces(
    paths: Iterable[str],
    wanted: Iterable[str] | None = None,
    as_of: Mapping[str, tuple[int, int]] | None = None,
    *,
    lazy: bool = False,
    pending: bool = False,
) -> Runs:
    """:func:`read_runs` stopped halfway: one run per trace (see :func:`.build.build_traces`)."""
    problems: list[FormatError] = []
    blob_readers: dict[str, BlobReader] = {}
    seen: set[str] = set()
    logs: list[LogRecord] = []
    inputs: list[list[str]] = []

    def spans() -> Iterator[SpanRecord]:
        for path in paths:
            files, problem = _inputs(path)
            if problem is not None:
                problems.append(problem)
            inputs.append(files)
            for name in files:
                if not is_stream(name):
                    real = os.path.realpath(name)
                    if real in seen:
                        continue  # named twice (a file and its directory): read once
                    seen.add(real)
                blob_readers[name] = _blob_reader(name)
                reader = RecordReader(name, wanted, (as_of or {}).get(name), lazy=lazy)
                for record in reader:
                    if isinstance(record, LogRecord):
                        logs.append(record)
                    else:
                        yield record
                problems.extend(reader.problems)

    # build_traces consumes the generator before it resolves any blob or joins
    # any log record, so every reader is registered and every log read by then.
    traces = build_traces(spans(), blob_readers, logs, pending=lazy or pending, batched=lazy)
    _blame(traces, problems, inputs)
    return Runs(traces, problems, unjoined(traces, logs))


def traces_of(name: str, records: Iterable[Record], problems: list[FormatError]) -> Runs:
    """:func:`read_traces` of the input ``name`` whose records were read already (a
    database's, read for many windows at once), ``problems`` the faults met reading them."""
    logs: list[LogRecord] = []

    def spans() -> Iterator[SpanRecord]:
        for record in records:
            if isinstance(record, LogRecord):
                logs.append(record)
            else:
                yield record

    traces = build_traces(spans(), {name: _blob_reader(name)}, logs)
    _blame(traces, problems, [[name]])
    return Runs(traces, problems, unjoined(traces, logs))


def _blame(traces: list[Run], problems: list[FormatError], inputs: list[list[str]]) -> None:
    """Give each trace the read faults that may have cost it records (:attr:`Run.read_faults`).

    Which traces a cut or corrupt record held is unknown, so the blame is
    wide.  A fault in a file goes to every trace with spans in that file,
    and, in a rotated set, in the member written after it (a trace cut at
    the end of one member goes on in the next).  A file that gave no span at
    all may have held any trace of its set: the fault goes to all of them.
    Faults of an input that names no file (a missing path) cost no trace.
    """
    by_source: dict[str, list[Run]] = {}
    for trace in traces:
        for source in trace.sources:
            by_source.setdefault(source, []).append(trace)
    for problem in problems:
        for files in inputs:
            if problem.path not in files:
                continue
            members = [f for f in files if same_set(f, problem.path)]
            if problem.path in by_source:
                at = members.index(problem.path)
                blamed = members[at : at + 2]
            else:
                blamed = members
            for name in blamed:
                for trace in by_source.get(name, ()):
                    if not any(f is problem for f in trace.read_faults):
                        trace.read_faults.append(problem)
