"""Size-based rotation of FileSpanExporter, named and pruned as the Collector's, read back in order."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import time_machine
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import otel_replay
from otel_replay.export.file_exporter import FileSpanExporter
from otel_replay.otlp import rotation as rot
from otel_replay.otlp.proto_writer import encode_request
from otel_replay.sources.files import expand, rotated_from
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT

WHEN = dt.datetime(2026, 5, 11, 9, 30, 12, 345678, tzinfo=dt.timezone.utc)


def spans(n: int, prefix: str = "s", size: int = 200) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("rotation")
    with tracer.start_as_current_span(f"{prefix}-root"):
        for i in range(n - 1):
            with tracer.start_as_current_span(f"{prefix}-{i}") as span:
                span.set_attribute("pad", "x" * size)
    return list(exporter.get_finished_spans())


def names(path: Path) -> list[str]:
    reader = SpanReader(path)
    out = [r.name for r in reader]
    assert reader.problems == [], reader.problems
    return out


def record_size(batch: list[ReadableSpan]) -> int:
    return 4 + len(encode_request(batch))


def files(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_file())


# --- naming ---------------------------------------------------------------------------


def test_rotated_names_are_lumberjacks_in_utc(tmp_path: Path) -> None:
    batches = [spans(3, f"b{i}") for i in range(3)]
    limit = record_size(batches[0]) * 1.5 / rot.MEGABYTE  # one record per file
    exporter = FileSpanExporter(tmp_path / "traces.binpb", max_megabytes=limit)
    with time_machine.travel(WHEN, tick=False):
        for batch in batches:
            assert exporter.export(batch) is SpanExportResult.SUCCESS
    exporter.shutdown()
    # Both rotations fell in one millisecond: the second backup is named a
    # millisecond later instead of replacing the first.
    assert files(tmp_path) == [
        "traces-2026-05-11T09-30-12.345.binpb",
        "traces-2026-05-11T09-30-12.346.binpb",
        "traces.binpb",
    ]
    assert [names(tmp_path / f) for f in files(tmp_path)] == [[s.name for s in b] for b in batches]


@pytest.fixture
def tokyo(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Local time nine hours ahead of UTC (a POSIX TZ rule: no time zone database needed)."""
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_localtime_names_use_the_local_clock(tmp_path: Path, tokyo: None) -> None:
    batch = spans(2)
    limit = record_size(batch) * 1.5 / rot.MEGABYTE
    exporter = FileSpanExporter(tmp_path / "t.jsonl", max_megabytes=limit, localtime=True)
    assert exporter.format == "json"  # no format given: the name says it
    # A timestamp, not an aware datetime: time-machine would take the datetime's zone as local.
    with time_machine.travel(WHEN.timestamp(), tick=False):
        exporter.export(batch)
        exporter.export(batch)
    exporter.shutdown()
    assert files(tmp_path) == ["t-2026-05-11T18-30-12.345.jsonl", "t.jsonl"]


@pytest.mark.parametrize(
    ("live", "when", "expected"),
    [
        ("d/traces.binpb", WHEN, "d/traces-2026-05-11T09-30-12.345.binpb"),
        ("d/traces", WHEN, "d/traces-2026-05-11T09-30-12.345"),
        ("d/a.tar.gz", WHEN, "d/a.tar-2026-05-11T09-30-12.345.gz"),
        # milliseconds are truncated, as Go formats .000
        ("x.json", WHEN.replace(microsecond=999999), "x-2026-05-11T09-30-12.999.json"),
    ],
)
def test_backup_name(live: str, when: dt.datetime, expected: str) -> None:
    assert rot.backup_name(live, when) == expected
    assert rotated_from(expected) == live


# --- pruning ---------------------------------------------------------------------------


def test_only_the_newest_backups_are_kept(tmp_path: Path) -> None:
    batch = spans(2)
    limit = record_size(batch) * 1.5 / rot.MEGABYTE
    exporter = FileSpanExporter(tmp_path / "t.otlp", max_megabytes=limit, max_backups=2)
    for minute in range(6):
        with time_machine.travel(WHEN + dt.timedelta(minutes=minute), tick=False):
            exporter.export(batch)
    exporter.shutdown()
    assert files(tmp_path) == [
        "t-2026-05-11T09-34-12.345.otlp",
        "t-2026-05-11T09-35-12.345.otlp",
        "t.otlp",
    ]


def test_old_backups_go_by_the_time_in_their_name(tmp_path: Path) -> None:
    live = tmp_path / "t.otlp"
    keep = [
        "t-2026-05-10T09-30-12.345.otlp",  # a day old
        "t-2026-05-09T10-00-00.000-size.otlp",  # timberjack's name, under three days
        "other-2026-01-01T00-00-00.000.otlp",  # another set
        "t-2026-01-01T00-00-00.000.jsonl",  # another extension: another set
    ]
    old = ["t-2026-05-01T00-00-00.000.otlp", "t-2026-05-08T09-00-00.000-time.otlp"]
    for name in keep + old:
        (tmp_path / name).write_bytes(b"")
    (tmp_path / (old[0] + ".otel-replay-index")).write_bytes(b"")
    (tmp_path / "t.otlp.blobs").mkdir()
    (tmp_path / "t.otlp.blobs" / "ab").write_bytes(b"blob")
    batch = spans(2)
    exporter = FileSpanExporter(
        live, max_megabytes=record_size(batch) * 1.5 / rot.MEGABYTE, max_days=3, max_backups=0
    )
    with time_machine.travel(WHEN, tick=False):
        exporter.export(batch)
        exporter.export(batch)  # rotates, then prunes
    exporter.shutdown()
    assert files(tmp_path) == sorted([*keep, "t-2026-05-11T09-30-12.345.otlp", "t.otlp"])
    assert (tmp_path / "t.otlp.blobs" / "ab").read_bytes() == b"blob"


def test_prune_alone(tmp_path: Path) -> None:
    for day in range(1, 8):
        (tmp_path / f"t-2026-05-0{day}T00-00-00.000.otlp").write_bytes(b"")
    deleted = rot.prune(str(tmp_path / "t.otlp"), rot.Rotation(max_backups=3), WHEN)
    assert [Path(p).name for p in deleted] == [
        f"t-2026-05-0{d}T00-00-00.000.otlp" for d in (1, 2, 3, 4)
    ]
    assert rot.prune(str(tmp_path / "t.otlp"), rot.Rotation(max_backups=0), WHEN) == []


# --- reading a rotated set ------------------------------------------------------------------


def test_a_rotated_set_reads_back_in_export_order(tmp_path: Path) -> None:
    batches = [spans(4, f"b{i}") for i in range(7)]
    limit = record_size(batches[0]) * 2.5 / rot.MEGABYTE  # two records per file
    exporter = FileSpanExporter(tmp_path / "run.otlp", max_megabytes=limit, max_backups=0)
    for i, batch in enumerate(batches):
        with time_machine.travel(WHEN + dt.timedelta(seconds=i), tick=False):
            exporter.export(batch)
    exporter.shutdown()
    found = expand([tmp_path])
    assert [Path(f).name for f in found] == [
        "run-2026-05-11T09-30-14.345.otlp",
        "run-2026-05-11T09-30-16.345.otlp",
        "run-2026-05-11T09-30-18.345.otlp",
        "run.otlp",
    ]
    assert all(os.path.getsize(f) <= limit * rot.MEGABYTE for f in found)
    read = [n for f in found for n in names(Path(f))]
    assert read == [s.name for b in batches for s in b]


def test_blobs_of_a_rotated_file_resolve_from_the_live_name(tmp_path: Path) -> None:
    # Tool results larger than max_inline: their bytes go to the blob store of the
    # live name, and a backup read alone still loads them byte-exact.
    path = tmp_path / "run.otlp"
    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    exporter = FileSpanExporter(path, max_inline_bytes=64, max_megabytes=0.02)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    payload = bytes(range(256)) * 40

    @otel_replay.tool
    def fetch(i: int) -> bytes:
        return payload[i:] + bytes([i])

    previous = otel_replay.use_tracer_provider(provider)
    try:
        with otel_replay.agent_run("rotating"):
            for i in range(30):
                fetch(i)
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
    backups = [f for f in expand([tmp_path]) if rotated_from(f)]
    assert len(backups) >= 2
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".blobs")] == ["run.otlp.blobs"]

    def results(runs: otel_replay.Runs) -> list[bytes]:
        out = []
        for run in runs:
            for step in run.tool_steps():
                assert step.tool is not None and step.tool.result_payload is not None
                assert step.tool.result_payload.status == "exact"  # the digest verified
                out.append(step.tool.result_payload.value())
        return out

    alone = results(otel_replay.load(backups[-1], strict=True))
    assert alone and all(r == payload[r[-1] :] + r[-1:] for r in alone)
    everything = results(otel_replay.load(tmp_path, strict=True))
    assert sorted(r[-1] for r in everything) == list(range(30))


# --- several processes ------------------------------------------------------------------------

WRITER = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from otel_replay.export.file_exporter import FileSpanExporter

    path, tag, n, limit, fmt = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
    exporter = FileSpanExporter(path, max_megabytes=limit, max_backups=0, format=fmt)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("multi")
    for i in range(n):
        with tracer.start_as_current_span(f"{tag}-{i}") as span:
            span.set_attribute("pad", "y" * 300)
    provider.shutdown()
    assert exporter.dropped == 0, exporter.dropped
    """
)


@pytest.mark.parametrize("fmt", ["proto", "json"])
def test_processes_rotating_one_file_lose_and_repeat_nothing(tmp_path: Path, fmt: str) -> None:
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    out = tmp_path / "dump"
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    limit = 0.01  # ~10 KB: many rotations while four writers append
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(out / "t.log"), f"p{k}", "150", str(limit), fmt],
            env=env,
        )
        for k in range(4)
    ]
    assert [p.wait(120) for p in procs] == [0, 0, 0, 0]
    found = expand([out])
    assert len(found) > 5
    assert all(os.path.getsize(f) <= limit * rot.MEGABYTE for f in found)
    read = [n for f in found for n in names(Path(f))]
    assert sorted(read) == sorted(f"p{k}-{i}" for k in range(4) for i in range(150))
    for k in range(4):  # each writer's spans in the order it wrote them
        mine = [n for n in read if n.startswith(f"p{k}-")]
        assert mine == [f"p{k}-{i}" for i in range(150)]


# --- the reader's side: rotated names of every Collector release ----------------------------


def test_rotated_names_sort_by_time_whatever_the_writer(tmp_path: Path) -> None:
    ordered = [
        "traces-2026-05-11T09-00-00.000.binpb",  # lumberjack (and ours)
        "traces-2026-05-11T09-30-00.000-size.binpb",  # timberjack
        "traces-2026-05-11T09-30-00.000-time.binpb",  # same millisecond: by name
        "traces-2026-05-11T10-00-00.000-time.binpb",
        "traces-2026-05-11T11-00-00.000-reload-now-v2.binpb",  # a caller's reason
        "traces.binpb",
    ]
    other = ["logs-2026-05-11T08-00-00.000-size.binpb", "logs.binpb"]
    for name in ordered + other:
        (tmp_path / name).write_bytes(b"")
    found = [Path(f).name for f in expand([tmp_path])]
    assert found == other + ordered


def test_time_after_the_extension(tmp_path: Path) -> None:
    # timberjack's AppendTimeAfterExt: the live name keeps its extension
    for name in (
        "foo.log-2026-05-11T10-00-00.000-time",
        "foo.log-2026-05-11T09-00-00.000-size",
        "foo.log",
    ):
        (tmp_path / name).write_bytes(b"")
    assert [Path(f).name for f in expand([tmp_path])] == [
        "foo.log-2026-05-11T09-00-00.000-size",
        "foo.log-2026-05-11T10-00-00.000-time",
        "foo.log",
    ]


# --- settings -------------------------------------------------------------------------------


def test_rotation_settings_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_MB", "0.5")
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_MAX_BACKUPS", "7")
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_MAX_DAYS", "3")
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_LOCALTIME", "true")
    exporter = FileSpanExporter(tmp_path / "t.otlp")
    assert exporter.rotation == rot.Rotation(0.5, 7, 3.0, True)
    assert exporter.rotation.max_bytes == 512 * 1024
    # arguments win over the environment
    assert FileSpanExporter(tmp_path / "t.otlp", max_backups=1).rotation == rot.Rotation(
        0.5, 1, 3.0, True
    )
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_MB", "0")
    assert FileSpanExporter(tmp_path / "t.otlp").rotation is None
    monkeypatch.delenv("OTEL_REPLAY_ROTATE_MB")
    assert FileSpanExporter(tmp_path / "t.otlp").rotation is None


def test_nonsense_settings_are_logged_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_MB", "lots")
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_MAX_BACKUPS", "many")
    exporter = FileSpanExporter(tmp_path / "t.otlp")
    assert exporter.rotation is None
    assert "OTEL_REPLAY_ROTATE_MB='lots' is not a number" in caplog.text
    monkeypatch.setenv("OTEL_REPLAY_ROTATE_MB", "1")
    exporter = FileSpanExporter(tmp_path / "t.otlp", max_days=-1)
    assert exporter.rotation == rot.Rotation(1.0, 100, 0.0, False)
    assert "OTEL_REPLAY_ROTATE_MAX_BACKUPS='many' is not an integer" in caplog.text
    assert exporter.export(spans(2)) is SpanExportResult.SUCCESS


def test_a_record_larger_than_the_limit_gets_a_file_of_its_own(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    small, big = spans(2, "small"), spans(2, "big", size=50_000)
    limit = record_size(small) * 3 / rot.MEGABYTE
    exporter = FileSpanExporter(tmp_path / "t.otlp", max_megabytes=limit)
    for batch in (small, big, small):
        assert exporter.export(batch) is SpanExportResult.SUCCESS
    exporter.shutdown()
    found = expand([tmp_path])
    assert [names(Path(f)) for f in found] == [
        [s.name for s in small],
        [s.name for s in big],
        [s.name for s in small],
    ]
    assert "larger than the rotation size" in caplog.text
    assert exporter.dropped == 0
