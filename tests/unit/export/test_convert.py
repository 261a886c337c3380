"""otel-replay convert: any input the reader reads, out in the Collector's proto or JSON lines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from otel_replay.export.convert import MessageReader, convert
from otel_replay.otlp import framing
from otel_replay.otlp.sniff import iter_be32
from otel_replay.sources.reader import RecordReader
from tests.fixtures.cli import cli_run
from tests.fixtures.data import COLLECTOR, ROOT, THIRDPARTY_FORMATS
from tests.fixtures.recording import recording

CASE_FILE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
LOGS = ROOT / "tests" / "data" / "genai_logs" / "event_only"


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The real command, run in this process (what it says, writes and exits with is what
    these tests read; reading standard input in a process of its own is tested below)."""
    return cli_run(*args)


def runs_json(*paths: Path) -> list[dict[str, Any]]:
    """``show --json``'s runs, less the names of the files they were read from."""
    runs = otel_replay.load(*paths, strict=True)
    out = [r.to_json() for r in runs]
    for run in out:
        assert run.pop("sources")
    return out


def records(path: Path) -> list[Any]:
    reader = RecordReader(path)
    out = [r for r in reader]
    for r in out:
        r.source = ""
    assert reader.problems == [], reader.problems
    return out


# --- round trips ------------------------------------------------------------------------------


def test_proto_to_json_to_proto_gives_the_same_runs_and_bytes(tmp_path: Path) -> None:
    as_json, back = tmp_path / "run.jsonl", tmp_path / "back.otlp"
    done = cli("convert", CASE_FILE, "-o", as_json, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"converted 4 spans in 1 request to {as_json} (json)\n"
    assert as_json.read_bytes().startswith(b'{"resourceSpans":[{"resource":{"attributes":[')
    assert as_json.read_bytes().count(b"\n") == 1  # one request, one line
    done = cli("convert", as_json, "-o", back)
    assert done.returncode == 0, done.stderr
    original = runs_json(CASE_FILE)
    assert runs_json(as_json) == original
    assert runs_json(back) == original
    # Everything in the requests survives: the protobuf comes back byte for byte.
    assert back.read_bytes() == CASE_FILE.read_bytes()


@pytest.mark.parametrize("fmt", ["proto", "json"])
def test_zstd_both_formats(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / "run.zst"
    done = cli("convert", CASE_FILE, "-o", out, "--format", fmt, "--zstd")
    assert done.returncode == 0, done.stderr
    with open(out, "rb") as f:
        bodies = [body for _, body in iter_be32(f, str(out))]
    assert len(bodies) == 1 and bodies[0][:4] == b"\x28\xb5\x2f\xfd"
    assert runs_json(out) == runs_json(CASE_FILE)
    again = tmp_path / "again.otlp"
    assert convert([out], again).requests == 1
    assert again.read_bytes() == CASE_FILE.read_bytes()


def test_spans_and_logs_together(tmp_path: Path) -> None:
    # A model call whose content came as log events: both signals in one output.
    out = tmp_path / "both.jsonl"
    done = cli(
        "convert", LOGS / "traces.otlp.pb", LOGS / "logs.otlp.ldpb", "-o", out, "--format", "json"
    )
    assert done.returncode == 0, done.stderr
    assert " log records " in done.stdout
    lines = out.read_bytes().splitlines()
    assert lines[0].startswith(b'{"resourceSpans":') and lines[-1].startswith(b'{"resourceLogs":')
    assert runs_json(out) == runs_json(LOGS / "traces.otlp.pb", LOGS / "logs.otlp.ldpb")
    assert records(out) == records(LOGS / "traces.otlp.pb") + records(LOGS / "logs.otlp.ldpb")


def test_json_written_by_others_becomes_collector_json(tmp_path: Path) -> None:
    source = LOGS / "traces.otlp.jsonl"  # protobuf's json_format, ids made hex
    out = tmp_path / "collector.jsonl"
    summary = convert([source], out, format="json")
    assert summary.requests == len(source.read_bytes().splitlines())
    assert records(out) == records(source)
    # Converting Collector JSON again changes nothing.
    again = tmp_path / "again.jsonl"
    convert([out], again, format="json")
    assert again.read_bytes() == out.read_bytes()


def test_stdin_to_stdout() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_replay.cli.main",
            "convert",
            "-",
            "-o",
            "-",
            "--format",
            "json",
        ],
        input=CASE_FILE.read_bytes(),
        capture_output=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count(b"\n") == 1 and done.stdout.startswith(b'{"resourceSpans":')
    assert b"converted 4 spans" in done.stderr


def test_a_rotated_directory_in_order(tmp_path: Path) -> None:
    dump = tmp_path / "dump"
    dump.mkdir()
    older = THIRDPARTY_FORMATS / "otel_v2" / "latest_span_only" / "sync" / "traces.otlp.ldpb"
    shutil.copy(older, dump / "traces-2026-05-11T09-30-12.345-size.otlp")  # a backup
    shutil.copy(CASE_FILE, dump / "traces.otlp")  # the live file, read last
    out = tmp_path / "all.otlp"
    done = cli("convert", dump, "-o", out)
    assert done.returncode == 0, done.stderr
    names = [r.name for r in records(out)]
    assert names[-4:] == [r.name for r in records(CASE_FILE)]
    assert len(names) > 4


# --- payload blobs -------------------------------------------------------------------------------


@otel_replay.tool
def fetch_report(report_id: str) -> bytes:
    return bytes(range(256)) * 64 + report_id.encode()


def test_payload_blobs_come_along(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_REPLAY_MAX_INLINE_BYTES", "1024")
    source = tmp_path / "rec" / "run.otlp"
    with recording(source), otel_replay.agent_run("reports", input="r-1"):
        fetch_report("r-1")
        fetch_report("r-2")
    blobs = sorted(p.name for p in (tmp_path / "rec" / "run.otlp.blobs").iterdir())
    assert len(blobs) == 2
    out = tmp_path / "elsewhere" / "run.jsonl"
    done = cli("convert", source, "-o", out, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "2 payload blobs copied" in done.stdout
    assert sorted(p.name for p in (tmp_path / "elsewhere" / "run.jsonl.blobs").iterdir()) == blobs
    shutil.rmtree(tmp_path / "rec")  # the converted recording stands alone
    (run,) = otel_replay.load(out, strict=True)
    results = [s.tool.result_payload for s in run.tool_steps() if s.tool]
    assert [p.status for p in results if p] == ["exact", "exact"]
    assert [p.value()[-3:] for p in results if p] == [b"r-1", b"r-2"]


# --- faults ---------------------------------------------------------------------------------------


def three_records(tmp_path: Path) -> tuple[Path, list[int]]:
    """A 4-byte framed file of three requests, and the offset of each."""
    body = framing.HEADER.unpack(CASE_FILE.read_bytes()[:4])[0]
    record = CASE_FILE.read_bytes()[: 4 + body]
    path = tmp_path / "three.otlp"
    path.write_bytes(record * 3)
    return path, [0, len(record), 2 * len(record)]


def test_a_truncated_file_exits_2_naming_file_and_offset(tmp_path: Path) -> None:
    path, offsets = three_records(tmp_path)
    path.write_bytes(path.read_bytes()[:-100])  # the third record cut short
    out = tmp_path / "out.jsonl"
    done = cli("convert", path, "-o", out, "--format", "json")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"otel-replay: error: {path}: truncated record")
    assert line.endswith(f" at byte {offsets[2]}")
    assert "Traceback" not in done.stderr
    # The two good records before the fault are converted.
    assert out.read_bytes().count(b"\n") == 2
    assert records(out) == records(CASE_FILE) * 2


def test_a_bad_json_line_costs_that_line_only(tmp_path: Path) -> None:
    good = tmp_path / "good.jsonl"
    shutil.copy(CASE_FILE, tmp_path / "copy.otlp")
    convert([CASE_FILE, tmp_path / "copy.otlp"], good, format="json")
    lines = good.read_bytes().splitlines(keepends=True)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(lines[0] + b'{"resourceSpans": [oops\n' + lines[1])
    out = tmp_path / "out.otlp"
    done = cli("convert", bad, "-o", out)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"otel-replay: error: {bad}: bad JSON line")
    assert line.endswith(f" at byte {len(lines[0])}")
    assert records(out) == records(CASE_FILE) * 2


def test_metrics_are_refused_not_converted(tmp_path: Path) -> None:
    metrics = COLLECTOR / "filereceiver-metrics.json"
    out = tmp_path / "out.otlp"
    done = cli("convert", metrics, "-o", out)
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == (
        f"otel-replay: error: {metrics}: OTLP metrics data, not traces or logs"
    )  # the file as a whole: no byte meant
    assert out.read_bytes() == b""


def test_usage_errors(tmp_path: Path) -> None:
    done = cli("convert", CASE_FILE, "-o", CASE_FILE)
    assert done.returncode == 2 and "is also an input" in done.stderr
    assert CASE_FILE.read_bytes()[:1] == b"\x00"
    done = cli("convert", tmp_path / "missing.otlp", "-o", tmp_path / "out")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"otel-replay: error: {tmp_path / 'missing.otlp'}: cannot read (No such file or directory)"
    ]
    done = cli("convert", CASE_FILE, "-o", tmp_path / "x", "--format", "yaml")
    assert done.returncode == 2 and "Invalid value for '--format'" in done.stderr


def test_message_reader_keeps_everything(tmp_path: Path) -> None:
    # Fields the record readers leave out survive a conversion.
    doc = {
        "resourceSpans": [
            {
                "resource": {"attributes": [], "droppedAttributesCount": 2},
                "scopeSpans": [
                    {
                        "scope": {
                            "name": "s",
                            "attributes": [{"key": "a", "value": {"intValue": 1}}],
                        },
                        "spans": [
                            {
                                "traceId": "0102030405060708090A0B0C0D0E0F10",
                                "spanId": "1112131415161718",
                                "traceState": "ot=th:0",
                                "flags": 769,
                                "name": "x",
                                "kind": "SPAN_KIND_CLIENT",
                                "droppedEventsCount": 3,
                                "links": [
                                    {"traceId": "", "spanId": "", "traceState": "a=b", "flags": 1}
                                ],
                                "status": {"code": "STATUS_CODE_ERROR", "message": "m"},
                            }
                        ],
                        "schemaUrl": "https://s",
                    }
                ],
                "schemaUrl": "https://r",
            }
        ]
    }
    source = tmp_path / "in.json"
    source.write_text(json.dumps(doc))
    (request,) = list(MessageReader(source))
    out = tmp_path / "out.jsonl"
    convert([source], out, format="json")
    assert out.read_bytes() == (
        b'{"resourceSpans":[{"resource":{"droppedAttributesCount":2},"scopeSpans":[{"scope":'
        b'{"name":"s","attributes":[{"key":"a","value":{"intValue":"1"}}]},"spans":[{"traceId":'
        b'"0102030405060708090a0b0c0d0e0f10","spanId":"1112131415161718","traceState":"ot=th:0",'
        b'"flags":769,"name":"x","kind":3,"droppedEventsCount":3,"links":[{"traceState":"a=b",'
        b'"flags":1}],"status":{"message":"m","code":2}}],"schemaUrl":"https://s"}],'
        b'"schemaUrl":"https://r"}]}\n'
    )
    assert request.resource_spans[0].scope_spans[0].spans[0].flags == 769
