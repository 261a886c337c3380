"""One trace out of a big dump: through an index beside it, rebuilt when the dump changes."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.otlp import index, proto_reader
from otel_replay.otlp.proto_reader import parse_request, trace_ids
from otel_replay.sources.reader import RecordReader, SpanReader
from tests.fixtures.data import COLLECTOR, THIRDPARTY, found


def write_dump(path: Path, traces: int, spans_per_trace: int = 3) -> list[str]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("idx")
    ids = []
    for t in range(traces):
        with tracer.start_as_current_span(f"invoke_agent run-{t}") as root:
            ids.append(f"{root.get_span_context().trace_id:032x}")
            for i in range(spans_per_trace - 1):
                with tracer.start_as_current_span(f"step {i}"):
                    pass
    spans = list(exporter.get_finished_spans())
    with open(path, "ab") as f:
        for i in range(0, len(spans), 7):  # batches that cut across traces, as exporters do
            body = encode_spans(spans[i : i + 7]).SerializeToString()
            f.write(struct.pack(">I", len(body)) + body)
    return ids


def test_one_trace_through_the_index(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 200)
    reader = SpanReader(dump, trace_ids=[ids[123]])
    spans = list(reader)
    assert reader.used_index and index.index_path(dump).exists()
    assert {s.trace_id for s in spans} == {ids[123]} and len(spans) == 3
    (run,) = otel_replay.load(dump, trace_id=ids[123][:12])  # a prefix works too
    assert run.run_id == ids[123] and run.roots[0].name == "invoke_agent run-123"


@pytest.fixture
def indexed(tmp_path: Path) -> tuple[Path, list[str]]:
    """A dump of 60 traces, its index built (sealed with this test's key)."""
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 60)
    reader = SpanReader(dump, trace_ids=[ids[0]])
    list(reader)
    assert reader.used_index  # built beside the dump
    return dump, ids


def _held(
    dump: Path, prefixes: set[str]
) -> tuple[set[str], list[tuple[int, int]], dict[int, set[bytes]]]:
    """What the index should find for ``prefixes``, read from the dump's records themselves."""
    found: set[str] = set()
    records: list[tuple[int, int]] = []
    claims: dict[int, set[bytes]] = {}
    data = dump.read_bytes()
    at = 0
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        held = {
            tid
            for tid in trace_ids(parse_request(data[at + 4 : at + 4 + length], str(dump), at))
            if any(tid.hex().startswith(p.lower()) for p in prefixes)
        }
        if held:
            found |= {tid.hex() for tid in held}
            records.append((at + 4, length))
            claims[at + 4] = held
        at += 4 + length
    return found, records, claims


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    picks=st.lists(st.integers(0, 59), max_size=60) | st.just(list(range(60))),
    absent=st.lists(st.binary(min_size=16, max_size=16), max_size=3),
    cut=st.sampled_from([32, 32, 12, 1]),
    upper=st.booleans(),
    search_cost=st.sampled_from([0, 10**6]),
)
def test_a_lookup_finds_the_records_that_hold_each_trace(
    indexed: tuple[Path, list[str]],
    picks: list[int],
    absent: list[bytes],
    cut: int,
    upper: bool,
    search_cost: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whole ids (many: one pass over the entries; few: a search for each), prefixes, ids
    in capitals and ids the dump lacks: the records found are those that hold them."""
    dump, ids = indexed
    prefixes = {ids[i][:cut] for i in picks} | {a.hex() for a in absent}
    prefixes = {p.upper() for p in prefixes} if upper else prefixes
    idx = index.load(dump)
    assert idx is not None
    monkeypatch.setattr(index, "_SEARCH_COST", search_cost)
    assert idx.find(prefixes) == _held(dump, prefixes)


def test_a_lookup_parses_each_record_once(
    indexed: tuple[Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each record read through the index is parsed once: it is checked to hold the traces
    the index says by what it decodes to (it was parsed to check, then again to read)."""
    dump, ids = indexed
    parsed: list[int] = []

    def counting(body: bytes, source: str, offset: int) -> Any:
        parsed.append(offset)
        return parse_request(body, source, offset)

    monkeypatch.setattr(proto_reader, "parse_request", counting)
    monkeypatch.setattr(index, "parse_request", counting)
    reader = SpanReader(dump, trace_ids=ids[::7])
    assert {s.trace_id for s in reader} == set(ids[::7]) and reader.used_index
    assert parsed and len(parsed) == len(set(parsed))


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    picks=st.lists(st.integers(0, 59), max_size=60),
    cut=st.sampled_from([32, 12, 1]),
    held=st.sampled_from([index.LOOKUP_HELD_BYTES, 0]),
)
def test_traces_read_through_the_index_are_those_a_scan_reads(
    indexed: tuple[Path, list[str]],
    picks: list[int],
    cut: int,
    held: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ids and prefixes, records held from check to reading or read again: what the index
    gives is what a scan of the whole dump gives of those traces, in the same order."""
    dump, ids = indexed
    prefixes = {ids[i][:cut] for i in picks}
    monkeypatch.setattr(index, "LOOKUP_HELD_BYTES", held)
    reader = RecordReader(dump, trace_ids=prefixes)
    through = list(reader)
    scanned = [r for r in RecordReader(dump) if any(r.trace_id.startswith(p) for p in prefixes)]
    assert through == scanned and not reader.problems
    assert reader.used_index or not prefixes


def test_index_reads_only_what_it_needs(tmp_path: Path, monkeypatch: object) -> None:
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 300)
    list(SpanReader(dump, trace_ids=[ids[0]]))  # builds the index
    reads: list[int] = []
    real = index.read_records

    def counting(dump_path: str, records: list[tuple[int, int]]):  # type: ignore[no-untyped-def]
        reads.extend(n for _, n in records)
        return real(dump_path, records)

    index.read_records = counting  # type: ignore[assignment]
    try:
        assert len(list(SpanReader(dump, trace_ids=[ids[150]]))) == 3
    finally:
        index.read_records = real  # type: ignore[assignment]
    assert 0 < sum(reads) < dump.stat().st_size / 20


def test_many_traces_through_the_index_are_read_again_not_held(
    tmp_path: Path, monkeypatch: object
) -> None:
    """Traces scattered over the whole dump: every record is checked, then read again,
    rather than every body held until all are checked."""
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 300)
    wanted = ids[::3]
    held = {s.span_id: s for s in SpanReader(dump, trace_ids=wanted)}
    assert {s.trace_id for s in held.values()} == set(wanted)
    reads: list[int] = []
    real = index.read_records

    def counting(dump_path: str, records: list[tuple[int, int]]):  # type: ignore[no-untyped-def]
        reads.append(len(records))
        return real(dump_path, records)

    monkeypatch.setattr(index, "LOOKUP_HELD_BYTES", 1000)  # type: ignore[attr-defined]
    monkeypatch.setattr(index, "read_records", counting)  # type: ignore[attr-defined]
    reader = SpanReader(dump, trace_ids=wanted)
    again = {s.span_id: s for s in reader}
    assert reader.used_index and len(reads) == 2 and reads[0] == reads[1] > 1
    assert again == held


def test_index_is_rebuilt_when_the_dump_changes(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    write_dump(dump, 20)
    first = write_dump(tmp_path / "other.otlp", 1)  # ids unknown to the dump
    assert list(SpanReader(dump, trace_ids=first)) == []
    stat = dump.stat()
    more = write_dump(dump, 5)  # appended: size and mtime change
    assert dump.stat().st_size != stat.st_size
    assert len(list(SpanReader(dump, trace_ids=[more[-1]]))) == 3
    loaded = index.load(dump)
    assert loaded is not None and more[-1] in loaded.trace_ids()


def test_an_index_taken_earlier_still_reads_the_dump_it_indexed(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 20)
    list(SpanReader(dump, trace_ids=[ids[0]]))  # builds and saves the index
    first = index.load(dump)
    assert first is not None
    stamp = first.stamp
    assert stamp == (dump.stat().st_size, dump.stat().st_mtime_ns)
    write_dump(dump, 5)  # appended
    assert index.load(dump) is None  # stale for a reader wanting the dump as it is
    kept = index.load(dump, as_of=stamp)
    assert kept is not None and kept.stamp == stamp
    reader = SpanReader(dump, trace_ids=[ids[3]], index_as_of=stamp)
    assert len(list(reader)) == 3 and reader.used_index
    assert index.load(dump, as_of=stamp) is not None  # the reader did not index it again
    dump.write_bytes(dump.read_bytes()[: stamp[0] // 2])  # shrunk: another dump
    assert index.load(dump, as_of=stamp) is None


def test_torn_dump_is_scanned_and_reported(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 10)
    with open(dump, "ab") as f:
        f.write(b"\x00\x00\x10\x00torn")
    reader = SpanReader(dump, trace_ids=[ids[4]])
    assert len(list(reader)) == 3 and not reader.used_index
    assert "truncated record" in str(reader.problems[0])


def test_json_dumps_are_filtered_by_scanning(tmp_path: Path) -> None:
    spans_file = COLLECTOR / "proto-examples-trace.json"
    assert len(list(SpanReader(spans_file, trace_ids=["5b8efff7"]))) == 1
    assert list(SpanReader(spans_file, trace_ids=["00000000"])) == []


def test_cli_show_trace(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 50)
    result = CliRunner().invoke(cli, ["show", "--json", "--trace", ids[7][:10], str(dump)])
    assert result.exit_code == 0, result.output
    assert '"run_id": "' + ids[7] in result.output.replace('"run_id":"', '"run_id": "')
    missing = CliRunner().invoke(cli, ["show", "--trace", "ffffffffff", str(dump)])
    assert missing.exit_code == 2 and "no trace" in missing.output
    assert os.path.exists(index.index_path(dump))


def test_a_directory_with_an_index_reads_the_dump_only(tmp_path: Path) -> None:
    dump = tmp_path / "dump.otlp"
    ids = write_dump(dump, 5)
    list(SpanReader(dump, trace_ids=[ids[0]]))
    assert index.index_path(dump).exists()
    runs = otel_replay.load(tmp_path)
    assert len(runs) == 5 and runs.problems == []


def test_progress_bar_on_big_inputs_only() -> None:
    import io

    from rich.console import Console

    from otel_replay.sources import progress

    frames = [(i * 1000, b"x" * 996) for i in range(100)]
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    assert list(progress.track(iter(frames), 100_000, "small", console=console)) == frames
    assert out.getvalue() == ""  # under the threshold: no bar
    big = progress.THRESHOLD * 2
    assert list(progress.track(iter(frames), big, "indexing dump.otlp", console=console)) == frames
    assert "indexing dump.otlp" in out.getvalue()


def test_progress_bar_over_the_windows_of_a_big_input() -> None:
    import io

    from rich.console import Console

    from otel_replay.sources import progress

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=100)
    items = list(range(7))
    assert list(progress.track_items(iter(items), 7, 1000, "small", console=console)) == items
    assert out.getvalue() == ""
    big = progress.THRESHOLD * 2
    got = list(progress.track_items(iter(items), 7, big, "reading d.otlp", console=console))
    assert got == items
    assert "reading d.otlp" in out.getvalue() and "7/7" in out.getvalue()


JSON_LINES = found(THIRDPARTY, "*/*/traces.otlp.jsonl") + found(THIRDPARTY, "*/*/logs.otlp.jsonl")


def test_json_lines_read_by_trace_id_give_what_a_whole_read_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lines that hold only other traces' spans are passed over unparsed."""
    from otel_replay.sources import formats

    parsed = []
    real = formats.parse_json
    monkeypatch.setattr(formats, "parse_json", lambda *a: parsed.append(1) or real(*a))
    skipped = 0
    for path in JSON_LINES:
        whole = list(RecordReader(path))
        lines = sum(1 for line in path.read_bytes().splitlines() if line.strip())
        for tid in sorted({r.trace_id for r in whole}):
            parsed.clear()
            assert list(RecordReader(path, [tid])) == [r for r in whole if r.trace_id == tid]
            skipped += lines - len(parsed)
            # By a prefix of the id: every line parsed.
            by_prefix = [r for r in whole if r.trace_id.startswith(tid[:8])]
            assert list(RecordReader(path, [tid[:8]])) == by_prefix
    assert skipped > 0


@pytest.mark.parametrize(
    "spelled",
    [
        (b'"traceId":"', b'"trace\\u0049d":"'),  # a key spelled with an escape
        (b'"traceId":"', b'"traceId" : "'),  # spaces around the colon
    ],
    ids=["escaped_key", "spaced"],
)
def test_a_json_line_that_may_hold_the_trace_is_parsed(
    spelled: tuple[bytes, bytes], tmp_path: Path
) -> None:
    source = THIRDPARTY / "openllmetry_openai" / "chat_sync" / "traces.otlp.jsonl"
    first = next(line for line in source.read_bytes().splitlines() if line.strip())
    tid = next(iter(RecordReader(source))).trace_id
    (tmp_path / "t.jsonl").write_bytes(first.replace(*spelled) + b"\n")
    assert any(r.trace_id == tid for r in RecordReader(tmp_path / "t.jsonl", [tid]))


def test_a_json_line_with_base64_ids_is_parsed(tmp_path: Path) -> None:
    """Protobuf's own JSON mapping writes ids in base64 (the reader takes both)."""
    import base64
    import re

    source = THIRDPARTY / "openllmetry_openai" / "chat_sync" / "traces.otlp.jsonl"
    first = next(line for line in source.read_bytes().splitlines() if line.strip())
    tid = next(iter(RecordReader(source))).trace_id

    def b64(m: re.Match[bytes]) -> bytes:
        return m[1] + base64.b64encode(bytes.fromhex(m[2].decode())) + b'"'

    line = re.sub(rb'("(?:traceId|spanId|parentSpanId)":")([0-9a-f]+)"', b64, first)
    assert line != first
    (tmp_path / "t.jsonl").write_bytes(line + b"\n")
    assert any(r.trace_id == tid for r in RecordReader(tmp_path / "t.jsonl", [tid]))
