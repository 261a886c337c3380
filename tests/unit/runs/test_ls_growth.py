"""``otel-replay ls`` of a dump that grew since its last listing reads only what changed.

Each dump grows a record at a time (real runs of the example agent, recorded
with the real SDK, into a file and into a directory the file exporter rotates
and prunes; every third-party case, converted to a 4-byte framed dump and cut
into one record per trace, so a trace's spans may arrive in several records
and client-only calls of one conversation in separate appends).  After every
append the listing from the saved summaries must equal a listing of the whole
dump with no cache, field for field.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from otel_replay.commands import summary_cache
from otel_replay.export.convert import convert
from otel_replay.runs import stream
from otel_replay.runs.summary import RunSummary, summarize
from tests.fixtures.agent import (
    LOOKUP,
    WORLD,
    Scripted,
    call,
    identity,
    record_run,
    say,
    support_agent,
)
from tests.fixtures.data import THIRDPARTY, THIRDPARTY_FORMATS, found
from tests.fixtures.recording import recording
from tests.unit.runs.test_stream import per_trace

CASES = sorted(
    [p.parent for p in found(THIRDPARTY, "*/*/traces.otlp.jsonl")]
    + [p.parent for p in found(THIRDPARTY_FORMATS, "*/*/*/traces.otlp.jsonl")]
)


def listed(dump: Path) -> list[RunSummary]:
    found_, problems = summary_cache.summaries([str(dump)])
    assert problems == []
    return found_


def fresh(dump: Path) -> list[RunSummary]:
    """The listing of the whole dump, read as if never listed."""
    mapped = stream.map_runs([str(dump)], summarize)
    assert mapped.problems == []
    return sorted(mapped.values, key=lambda s: (s.start_ns, s.run_id))


class Reads:
    """The traces each listing read again (``None``: the dump was read whole)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.wanted: list[set[str] | None] = []
        real_read, real_map = summary_cache.read_runs, summary_cache.map_runs

        def read_runs(paths: Any, wanted: Any = None, *args: Any, **kwargs: Any) -> Any:
            self.wanted.append(set(wanted))
            return real_read(paths, wanted, *args, **kwargs)

        def map_runs(*args: Any, **kwargs: Any) -> Any:
            self.wanted.append(None)
            return real_map(*args, **kwargs)

        monkeypatch.setattr(summary_cache, "read_runs", read_runs)
        monkeypatch.setattr(summary_cache, "map_runs", map_runs)


def test_runs_appended_to_a_dump_are_the_only_ones_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dump = tmp_path / "runs.otlp"
    record_run(dump, LOOKUP, user="u_1")
    reads = Reads(monkeypatch)
    assert [s.user_id for s in listed(dump)] == ["u_1"]
    before = {s.run_id for s in listed(dump)}
    WORLD["fail"] = 1
    try:
        record_run(
            dump,
            [call("flaky_lookup", "c1", query="x"), say("Found it.")],
            agent="billing",
            user="u_2",
        )
    finally:
        WORLD["fail"] = 0
    grown = listed(dump)
    assert grown == fresh(dump)
    assert [s.user_id for s in grown] == ["u_1", "u_2"] and grown[1].errors == 1
    new = {s.run_id for s in grown} - before
    # Read whole once (no summaries yet), then from the cache, then the new run alone.
    assert reads.wanted == [None, new]
    record_run(dump, LOOKUP, user="u_3")
    assert listed(dump) == fresh(dump)
    assert reads.wanted[2] == {s.run_id for s in listed(dump)} - before - new


def test_a_run_listed_before_its_agent_span_ended_is_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent's span is exported when the run ends, after its model and tool calls:
    a listing in between sees calls with no agent, which the end turns into a run."""
    dump = tmp_path / "runs.otlp"
    record_run(dump, LOOKUP, user="u_1")
    seen: list[list[RunSummary]] = []
    reads = Reads(monkeypatch)

    with recording(dump) as provider, identity("u_2", "s_2"):

        class Listing(Scripted):
            def respond(self, messages: Any, **kwargs: Any) -> dict[str, Any]:
                provider.force_flush()
                seen.append(listed(dump))  # mid-run: its calls so far are in the dump
                return super().respond(messages, **kwargs)

        support_agent("Where is my order?", Listing(LOOKUP))
    # The second listing saw the first model and tool calls with no agent yet.
    assert [len(found_) for found_ in seen] == [1, 2] and seen[1][1].agent != "support"
    assert reads.wanted[0] is None and all(w is not None for w in reads.wanted[1:])
    grown = listed(dump)
    assert grown == fresh(dump)
    assert [s.user_id for s in grown] == ["u_1", "u_2"] and grown[1].agent == "support"


def test_a_dump_appended_to_while_it_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes written after the listing took the dump's size are read, and read again by
    the next listing, which takes them for new."""
    dump = tmp_path / "runs.otlp"
    record_run(dump, LOOKUP, user="u_1")
    listed(dump)
    record_run(dump, LOOKUP, user="u_2")
    taken = summary_cache._stamp(str(dump))
    record_run(dump, LOOKUP, user="u_3")  # while the listing reads
    reads = Reads(monkeypatch)
    with monkeypatch.context() as m:
        m.setattr(summary_cache, "_stamp", lambda path: taken)
        assert [s.user_id for s in listed(dump)] == ["u_1", "u_2", "u_3"]
    assert listed(dump) == fresh(dump)
    # Both runs read as new; then u_3's again, from where the first listing took the end.
    assert [len(w or ()) for w in reads.wanted] == [2, 1]


def test_a_rotating_directory_lists_as_read_whole_at_every_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exporter's rotation renames the live file and starts another; pruning deletes
    the oldest backups (their runs go: that is read whole)."""
    import datetime as dt

    import time_machine

    from otel_replay.export.file_exporter import FileSpanExporter
    from otel_replay.otlp.proto_writer import encode_request
    from otel_replay.otlp.rotation import MEGABYTE
    from tests.fixtures.recording import in_memory

    recorded = []
    for i in range(8):
        with in_memory() as memory, identity(f"u_{i}", f"s_{i}"):
            support_agent("Where is my order?", Scripted(LOOKUP))
        recorded.append(list(memory.get_finished_spans()))
    limit = 2.5 * (4 + len(encode_request(recorded[0]))) / MEGABYTE  # about two runs a file
    directory = tmp_path / "traces"
    directory.mkdir()
    exporter = FileSpanExporter(directory / "t.otlp", max_megabytes=limit, max_backups=1)
    reads = Reads(monkeypatch)
    when = dt.datetime(2026, 5, 11, 9, 30, tzinfo=dt.timezone.utc)
    for i, spans in enumerate(recorded):
        with time_machine.travel(when + dt.timedelta(seconds=i), tick=False):
            exporter.export(spans[:3])  # a run's spans in two requests: two files, maybe
            exporter.export(spans[3:])
        assert listed(directory) == fresh(directory), f"after run {i}"
    exporter.shutdown()
    (backup,) = directory.glob("t-*.otlp")  # the others were pruned
    assert reads.wanted[0] is None and None in reads.wanted[1:]  # pruned: read whole
    assert sum(w is not None for w in reads.wanted) >= 3  # grown: read in part
    backup.unlink()  # by hand, no file made since: its runs go too
    assert listed(directory) == fresh(directory)
    assert reads.wanted[-1] is None


def _appended(dump: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """One run appended, more traces than may be read again at once."""
    monkeypatch.setattr(summary_cache, "MOST_REREAD", 0)
    record_run(dump, LOOKUP, user="u_2")
    return ["u_1", "u_2"]


def _rewritten(dump: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The same file (inode), other bytes, longer."""
    other = dump.with_name("other.otlp")
    record_run(other, LOOKUP, user="u_2")
    record_run(other, LOOKUP, user="u_3")
    with open(dump, "r+b") as f:
        f.write(other.read_bytes())
    return ["u_2", "u_3"]


@pytest.mark.parametrize(
    "change", [_appended, _rewritten], ids=["too_many_to_read_again", "rewritten"]
)
def test_a_dump_changed_so_is_read_whole(
    change: Callable[[Path, pytest.MonkeyPatch], list[str]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    dump = tmp_path / "runs.otlp"
    record_run(dump, LOOKUP, user="u_1")
    listed(dump)
    users = change(dump, monkeypatch)
    reads = Reads(monkeypatch)
    assert [s.user_id for s in listed(dump)] == users
    assert reads.wanted == [None]


def _written_as(fmt: str, framed: Path) -> bytes:
    """A 4-byte framed file's requests as the exporter writes them in ``fmt``."""
    out = framed.with_suffix(f".{fmt}")
    convert([framed], out, format=fmt)
    return out.read_bytes()


@pytest.mark.parametrize("fmt", ["proto", "json"])
@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_case_grown_a_trace_at_a_time_lists_as_read_whole(
    case: Path, fmt: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_REPLAY_FORMAT", fmt)  # how the example agent's runs are written
    reads = Reads(monkeypatch)
    spans = tmp_path / "spans.otlp"
    convert([case / "traces.otlp.jsonl"], spans)
    records = []
    for i, record in enumerate(per_trace(spans)):
        (tmp_path / f"{i}.otlp").write_bytes(record)
        records.append(_written_as(fmt, tmp_path / f"{i}.otlp"))
    dump = tmp_path / "dump"
    record_run(dump, LOOKUP)  # an agent's run first: kept from the cache throughout
    listed(dump)
    for record in records:
        with open(dump, "ab") as f:
            f.write(record)
        assert listed(dump) == fresh(dump), f"after {dump.stat().st_size} bytes"
    record_run(dump, LOOKUP)
    assert listed(dump) == fresh(dump)
    # Read whole once; after that, each growth read only traces again, never all of them.
    assert reads.wanted[0] is None and len(reads.wanted) == len(records) + 2
    assert all(w is not None and len(w) < len(records) + 2 for w in reads.wanted[1:])
    # Every span sent again (an exporter retrying): the same runs.
    with open(dump, "ab") as f:
        f.write(_written_as(fmt, spans))
    assert listed(dump) == fresh(dump)
    logs = case / "logs.otlp.jsonl"
    if logs.exists():  # log records, after the spans they belong to
        convert([logs], tmp_path / "logs.otlp")
        with open(dump, "ab") as f:
            f.write(_written_as(fmt, tmp_path / "logs.otlp"))
        assert listed(dump) == fresh(dump)
        record_run(dump, LOOKUP)  # JSON lines that hold log records: read whole
        assert listed(dump) == fresh(dump)


@pytest.mark.parametrize("cut", ["new_line_cut_short", "old_line_left_open"])
def test_a_line_cut_is_read_whole_and_reported(
    cut: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer caught in the middle of a line, or one that left its last line open and
    wrote the next on it: the dump is read whole, the bad line reported, and nothing
    saved (the next listing reads it again)."""
    monkeypatch.setenv("OTEL_REPLAY_FORMAT", "json")
    dump, other = tmp_path / "runs.jsonl", tmp_path / "other.jsonl"
    record_run(dump, LOOKUP, user="u_0")
    record_run(dump, LOOKUP, user="u_1")
    record_run(other, LOOKUP, user="u_2")
    if cut == "old_line_left_open":
        dump.write_bytes(dump.read_bytes().rstrip(b"\n"))
    assert [s.user_id for s in listed(dump)] == ["u_0", "u_1"]
    with open(dump, "ab") as f:
        f.write(other.read_bytes()[:100] if cut == "new_line_cut_short" else other.read_bytes())
    reads = Reads(monkeypatch)
    found_, problems = summary_cache.summaries([str(dump)])
    assert problems and reads.wanted == [None]
    whole, reported = summary_cache.summaries([str(dump)], use_cache=False)
    assert found_ == whole and [str(p) for p in problems] == [str(p) for p in reported]
    if cut == "new_line_cut_short":
        assert [s.user_id for s in found_] == ["u_0", "u_1"]
