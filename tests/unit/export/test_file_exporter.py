"""FileSpanExporter: whole records, safe appends from threads and processes, repair, no raising."""

from __future__ import annotations

import errno
import json
import logging
import os
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExportResult,
)
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from otel_replay import attributes as A
from otel_replay.export import file_exporter
from otel_replay.export.file_exporter import FileSpanExporter
from otel_replay.otlp.sniff import iter_records
from otel_replay.payload.blobs import BlobStore
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT

SRC = ROOT / "src"


def read(path: Path) -> list[Any]:
    reader = SpanReader(path)
    spans = list(reader)
    assert reader.problems == [], reader.problems
    return spans


def py(value: Any) -> Any:
    """What the reader makes of an SDK attribute value."""
    if isinstance(value, (tuple, list)):
        return [py(v) for v in value]
    if isinstance(value, dict):
        return {str(k): py(v) for k, v in value.items()}
    return value


def sdk_spans(n: int, prefix: str = "s", **attributes: Any) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    for i in range(n):
        with tracer.start_as_current_span(f"{prefix}-{i}", attributes=attributes or None):
            pass
    return list(exporter.get_finished_spans())


def export(path: Path, spans: list[ReadableSpan], **kwargs: Any) -> FileSpanExporter:
    exporter = FileSpanExporter(path, **kwargs)
    assert exporter.export(spans) is SpanExportResult.SUCCESS
    exporter.shutdown()
    return exporter


# --- round trip ------------------------------------------------------------------------


def test_round_trip_through_the_reader(tmp_path: Path, varied_spans: list[ReadableSpan]) -> None:
    path = tmp_path / "t.otlp"
    export(path, varied_spans[:3])
    export(path, varied_spans[3:])
    assert len(list(iter_records(path))) == 2
    got = {rec.span_id: rec for rec in read(path)}
    assert len(got) == len(varied_spans)
    for span in varied_spans:
        ctx = span.get_span_context()
        assert ctx is not None
        rec = got[f"{ctx.span_id:016x}"]
        assert rec.trace_id == f"{ctx.trace_id:032x}"
        assert rec.parent_span_id == (f"{span.parent.span_id:016x}" if span.parent else None)
        assert (rec.name, rec.kind) == (span.name, span.kind.value + 1)
        assert (rec.start_ns, rec.end_ns) == (span.start_time, span.end_time)
        assert rec.attributes == py(dict(span.attributes or {}))
        assert [(e.name, e.time_ns, e.attributes) for e in rec.events] == [
            (e.name, e.timestamp, py(dict(e.attributes or {}))) for e in span.events
        ]
        assert (rec.status_code, rec.status_message) == (
            span.status.status_code.value,
            span.status.description or "",
        )
        assert rec.resource == py(dict(span.resource.attributes))
        scope = span.instrumentation_scope
        assert scope is not None
        assert (rec.scope_name, rec.scope_version) == (scope.name, scope.version)
        assert rec.source == str(path)
    root = next(r for r in got.values() if r.name == "remote child")
    assert (
        root.attributes["b"] == b"\x00\xff\xfenon-utf8" and root.parent_span_id == f"{0xDEF:016x}"
    )


def test_secrets_redacted_and_large_payloads_moved(tmp_path: Path) -> None:
    big = os.urandom(3000)
    spans = sdk_spans(
        1,
        **{
            "http.request.header.authorization": "Bearer abcdefghijkl",
            A.BYTES + A.TOOL_CALL_RESULT: big,
            A.BYTES + A.TOOL_CALL_ARGUMENTS: b"{}",
        },
    )
    path = tmp_path / "t.otlp"
    export(path, spans, max_inline_bytes=1000)
    (rec,) = read(path)
    assert rec.attributes["http.request.header.authorization"] == A.REDACTED_VALUE
    assert b"abcdefghijkl" not in path.read_bytes()
    ref = rec.attributes[A.REF + A.TOOL_CALL_RESULT]
    assert A.BYTES + A.TOOL_CALL_RESULT not in rec.attributes
    assert BlobStore(path).get(ref) == big
    assert rec.attributes[A.BYTES + A.TOOL_CALL_ARGUMENTS] == b"{}"


def test_settings_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_REPLAY_FILE", str(tmp_path / "env.otlp"))
    monkeypatch.setenv("OTEL_REPLAY_MAX_INLINE_BYTES", "100")
    monkeypatch.setenv("OTEL_REPLAY_FSYNC", "true")
    exporter = FileSpanExporter()
    assert (exporter.path, exporter.max_inline, exporter.fsync) == (
        str(tmp_path / "env.otlp"),
        100,
        True,
    )
    assert exporter.export(sdk_spans(2)) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert len(read(tmp_path / "env.otlp")) == 2
    for name in ("OTEL_REPLAY_FILE", "OTEL_REPLAY_MAX_INLINE_BYTES", "OTEL_REPLAY_FSYNC"):
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    default = FileSpanExporter()
    assert (default.path, default.max_inline, default.fsync) == (
        "otel-replay.otlp",
        256 * 1024,
        False,
    )


@pytest.mark.parametrize("processor", [SimpleSpanProcessor, BatchSpanProcessor])
def test_under_the_sdk_processors(tmp_path: Path, processor: Any) -> None:
    path = tmp_path / "sdk.otlp"
    provider = TracerProvider()
    provider.add_span_processor(processor(FileSpanExporter(path)))
    tracer = provider.get_tracer("t")
    for i in range(300):
        with tracer.start_as_current_span(f"s-{i}"):
            pass
    provider.shutdown()
    assert sorted(int(s.name.split("-")[1]) for s in read(path)) == list(range(300))


# --- concurrent appends ----------------------------------------------------------------


def test_exporters_in_threads_append_whole_records(tmp_path: Path) -> None:
    path = tmp_path / "shared.otlp"
    spans = {t: sdk_spans(3, f"t{t}") for t in range(4)}
    shared = FileSpanExporter(path)  # one exporter used by several threads...
    own = [FileSpanExporter(path) for _ in range(2)]  # ...and others on the same file

    def write(t: int) -> None:
        exporter = shared if t < 2 else own[t - 2]
        for _ in range(100):
            assert exporter.export(spans[t]) is SpanExportResult.SUCCESS

    threads = [threading.Thread(target=write, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    counts = Counter(s.name for s in read(path))
    assert counts == {f"t{t}-{i}": 100 for t in range(4) for i in range(3)}


WRITER = textwrap.dedent(
    """
    import sys
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from otel_replay.export.file_exporter import FileSpanExporter

    path, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    exporter = FileSpanExporter(path)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # one record per span
    tracer = provider.get_tracer("w")
    print("ready", flush=True)
    sys.stdin.readline()  # start together
    for i in range(n):
        with tracer.start_as_current_span(f"{tag}-{i}") as span:
            span.set_attribute("payload", "p" * (i % 7 * 3000))
    provider.shutdown()
    sys.exit(1 if exporter.dropped else 0)
    """
)


def test_processes_append_to_one_file(tmp_path: Path) -> None:
    path = tmp_path / "shared.otlp"
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), f"p{k}", "400"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        for k in range(3)
    ]
    for p in procs:
        assert p.stdout is not None and p.stdout.readline().strip() == "ready"
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    for p in procs:
        assert p.wait(60) == 0
    counts = Counter(s.name.split("-")[0] for s in read(path))
    assert counts == {"p0": 400, "p1": 400, "p2": 400}


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_appends_with_its_own_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "fork.otlp"
    exporter = FileSpanExporter(path)
    assert exporter.export(sdk_spans(1, "before")) is SpanExportResult.SUCCESS
    child_spans, parent_spans = sdk_spans(1, "child"), sdk_spans(1, "parent")
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        ok = all(exporter.export(child_spans) is SpanExportResult.SUCCESS for _ in range(200))
        os._exit(0 if ok else 1)
    for _ in range(200):
        assert exporter.export(parent_spans) is SpanExportResult.SUCCESS
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    exporter.shutdown()
    assert Counter(s.name for s in read(path)) == {"before-0": 1, "child-0": 200, "parent-0": 200}


# --- repair ----------------------------------------------------------------------------


def record_bytes(spans: list[ReadableSpan], tmp_path: Path) -> bytes:
    scratch = tmp_path / "scratch.otlp"
    export(scratch, spans)
    data = scratch.read_bytes()
    scratch.unlink()
    return data


@pytest.mark.parametrize("keep", [2, 4, 30, -1])
def test_torn_tail_is_cut_on_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, keep: int
) -> None:
    path = tmp_path / "t.otlp"
    export(path, sdk_spans(2, "good"))
    good = path.stat().st_size
    torn = record_bytes(sdk_spans(2, "torn"), tmp_path)
    with open(path, "ab") as f:  # a writer killed after writing part of its record
        f.write(torn[:keep])
    with caplog.at_level(logging.WARNING, "otel_replay"):
        export(path, sdk_spans(2, "after"))
    assert f"{path} ends in a torn record at byte {good}" in caplog.text
    assert sorted(s.name for s in read(path)) == ["after-0", "after-1", "good-0", "good-1"]


def test_torn_tail_left_by_another_writer_while_open(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "t.otlp"
    exporter = FileSpanExporter(path)
    assert exporter.export(sdk_spans(1, "a")) is SpanExportResult.SUCCESS
    whole = record_bytes(sdk_spans(1, "other"), tmp_path)
    torn = record_bytes(sdk_spans(1, "torn"), tmp_path)
    with open(path, "ab") as f:  # another process: one whole record, then killed mid-record
        f.write(whole + torn[:-5])
    with caplog.at_level(logging.WARNING, "otel_replay"):
        assert exporter.export(sdk_spans(1, "b")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert "torn record" in caplog.text
    assert sorted(s.name for s in read(path)) == ["a-0", "b-0", "other-0"]


def test_does_not_append_to_a_file_that_is_not_a_trace_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "notes.otlp"
    path.write_text('{"not": "a trace file"}\n')
    exporter = FileSpanExporter(path)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        assert exporter.export(sdk_spans(2)) is SpanExportResult.FAILURE
    assert path.read_text() == '{"not": "a trace file"}\n'
    assert exporter.dropped == 2 and "does not look like" in caplog.text


# --- failures never raise --------------------------------------------------------------


def test_path_is_a_directory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "is-a-directory"
    path.mkdir()
    exporter = FileSpanExporter(path)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        assert exporter.export(sdk_spans(3)) is SpanExportResult.FAILURE
        assert exporter.export(sdk_spans(2)) is SpanExportResult.FAILURE
        exporter.shutdown()
    assert exporter.dropped == 5
    assert caplog.text.count("cannot write spans") == 1  # one warning, then counting
    assert "5 spans could not be written" in caplog.text  # and the total at shutdown


def test_disk_full_mid_record_leaves_no_partial_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "full.otlp"
    exporter = FileSpanExporter(path)
    assert exporter.export(sdk_spans(2, "ok")) is SpanExportResult.SUCCESS
    real_write = os.write
    calls = []

    def full_disk(fd: int, data: Any) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data)[:100])  # a short write...
        raise OSError(errno.ENOSPC, "No space left on device")  # ...then the disk is full

    monkeypatch.setattr(file_exporter.os, "write", full_disk)
    with caplog.at_level(logging.WARNING, "otel_replay"):
        assert exporter.export(sdk_spans(3, "lost", big="x" * 5000)) is SpanExportResult.FAILURE
    monkeypatch.setattr(file_exporter.os, "write", real_write)
    assert len(calls) == 2 and exporter.dropped == 3
    assert "No space left on device" in caplog.text
    assert exporter.export(sdk_spans(1, "later")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert sorted(s.name for s in read(path)) == ["later-0", "ok-0", "ok-1"]


def test_short_writes_are_completed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_write = os.write
    monkeypatch.setattr(file_exporter.os, "write", lambda fd, data: real_write(fd, data[:777]))
    path = tmp_path / "short.otlp"
    export(path, sdk_spans(5, "s", big="y" * 4000))
    assert len(read(path)) == 5


def test_one_unencodable_span_does_not_cost_the_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = sdk_spans(2, "good")
    broken = ReadableSpan(name="broken", context=None)  # no span context: cannot be encoded
    exporter = FileSpanExporter(tmp_path / "t.otlp")
    with caplog.at_level(logging.WARNING, "otel_replay"):
        assert exporter.export([good[0], broken, good[1]]) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert exporter.dropped == 1 and "1 spans could not be encoded" in caplog.text
    assert sorted(s.name for s in read(tmp_path / "t.otlp")) == ["good-0", "good-1"]


def test_export_after_shutdown_is_counted(tmp_path: Path) -> None:
    exporter = FileSpanExporter(tmp_path / "t.otlp")
    assert exporter.force_flush() is True
    exporter.shutdown()
    assert exporter.export(sdk_spans(2)) is SpanExportResult.FAILURE
    assert exporter.dropped == 2


def test_each_export_is_one_parseable_record(tmp_path: Path) -> None:
    path = tmp_path / "t.otlp"
    exporter = FileSpanExporter(path)
    for n in (1, 5, 2):
        exporter.export(sdk_spans(n))
    exporter.shutdown()
    records = list(iter_records(path))
    assert [
        len(ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans)
        for _, body in records
    ] == [1, 5, 2]
    assert records[0][0] == 0 and records[1][0] == 4 + len(records[0][1])


#: Records until a small tmpfs is full, then lists what is left on it (run in the child).
_FILL_A_DISK = textwrap.dedent(
    """
    import json, os, sys
    import otel_replay
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    root = sys.argv[1]
    os.makedirs(root, exist_ok=True)
    os.system(f"mount -t tmpfs -o size=256k tmpfs {root}")
    exporter = otel_replay.FileSpanExporter(os.path.join(root, "run.otlp"))
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    otel_replay.use_tracer_provider(provider)

    @otel_replay.tool
    def fetch(note: str, size: int) -> str:
        return os.urandom(size).hex()  # a blob each

    with otel_replay.agent_run("filling"):
        # Blobs of shrinking size with a 3.5 kB record each: some blob fits in
        # what is left and its record then does not.
        for size in [30_000] * 3 + [8_000, 4_000, 3_000, 2_500] * 8:
            fetch("n" * 3_500, size)
    provider.shutdown()
    files = sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
    )
    record = open(os.path.join(root, "run.otlp"), "rb").read()
    blobs = [f for f in files if ".blobs/" in f]
    print(json.dumps({
        "mounted": os.path.ismount(root),
        "dropped": exporter.dropped,
        "files": files,
        "unreferenced": [b for b in blobs if b.rsplit("/", 1)[1].encode() not in record],
    }))
    """
)


def test_a_full_disk_leaves_no_temporary_or_unreachable_blob(tmp_path: Path) -> None:
    # A real full filesystem: a 256 kB tmpfs, mounted in a user and mount namespace.
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        pytest.skip(f"no user namespaces here to mount a small filesystem: {probe.stderr!r}")
    env = {**os.environ, "OTEL_REPLAY_MAX_INLINE_BYTES": "4096", "PYTHONPATH": str(SRC)}
    out = subprocess.run(
        ["unshare", "-rm", sys.executable, "-c", _FILL_A_DISK, str(tmp_path / "disk")],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=120,
    )
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["mounted"] and result["dropped"] > 0, (result, out.stderr)
    assert "No space left on device" in out.stderr
    assert not [f for f in result["files"] if f.endswith(".tmp")], result["files"]
    assert result["unreferenced"] == [], result


_HOLD_THE_LOCK = textwrap.dedent(
    """
    import fcntl, sys, time
    with open(sys.argv[1], "ab") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        print("locked", flush=True)
        time.sleep(60)
    """
)


def test_another_process_holding_the_file_costs_the_app_a_short_wait(tmp_path: Path) -> None:
    path = tmp_path / "run.otlp"
    exporter = FileSpanExporter(path, lock_timeout=0.2)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))  # exports on the app's thread
    tracer = provider.get_tracer("app")
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_THE_LOCK, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        with tracer.start_as_current_span("while-locked"):
            pass
        waited = time.monotonic() - started
    finally:
        holder.kill()
        holder.wait()
    assert exporter.dropped == 1
    assert waited < 5, waited  # the bound is 0.2 s; the machine may be slow, never 60 s
    with tracer.start_as_current_span("after"):
        pass
    provider.shutdown()
    assert [s.name for s in read(path)] == ["after"]
