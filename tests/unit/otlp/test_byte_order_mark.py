"""A JSON file that starts with a UTF-8 byte order mark is read as the same file without it.

Windows tools and some editors (PowerShell's ``Out-File``, Notepad) put
``EF BB BF`` before UTF-8 text.  Before, the three bytes hid the JSON from the
format sniffer: the whole file was "not an OTLP trace or log file", every run
in it lost.  The class: the real example recording as OTLP/JSON, as JSON lines,
a document or an indented document, with white space after the mark or not,
plain, gzip- or zstd-compressed, read by the span reader, ``load()`` and the CLI.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.otlp.json_writer import request_to_json
from otel_replay.otlp.sniff import iter_records
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT

BOM = b"\xef\xbb\xbf"
EXAMPLE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
(REQUEST,) = [
    json.loads(request_to_json(ExportTraceServiceRequest.FromString(body)))
    for _, body in iter_records(EXAMPLE)
]


def _text(layout: str, copies: int) -> bytes:
    docs = []
    for n in range(copies):
        doc = json.loads(json.dumps(REQUEST))
        for rs in doc["resourceSpans"]:
            for ss in rs["scopeSpans"]:
                for span in ss["spans"]:
                    span["traceId"] = f"{n + 1:02x}" * 16
        docs.append(doc)
    if layout == "lines":
        return b"".join(json.dumps(d).encode() + b"\n" for d in docs)
    return json.dumps(docs[0], indent=2 if layout == "indented" else None).encode()


def _spans(path: Path) -> tuple[list[tuple[str, str]], list[object]]:
    reader = SpanReader(path)
    return sorted((r.trace_id, r.span_id) for r in reader), reader.problems


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    layout=st.sampled_from(["lines", "document", "indented"]),
    copies=st.integers(1, 3),
    space=st.sampled_from(["", " ", "\n", "\r\n\t "]),
    wrap=st.sampled_from(["", "gzip", "zstd"]),
)
def test_a_byte_order_mark_changes_nothing_read(
    tmp_path_factory: pytest.TempPathFactory, layout: str, copies: int, space: str, wrap: str
) -> None:
    copies = copies if layout == "lines" else 1
    text = _text(layout, copies)
    root = tmp_path_factory.mktemp("bom")
    paths = []
    for name, data in (
        ("plain", space.encode() + text),
        ("marked", BOM + space.encode() + text),
    ):
        if wrap == "gzip":
            data = gzip.compress(data)
        elif wrap == "zstd":
            data = zstandard.ZstdCompressor().compress(data)
        path = root / f"{name}.{'jsonl' if layout == 'lines' else 'json'}"
        path.write_bytes(data)
        paths.append(path)
    plain, marked = paths
    expected, problems = _spans(plain)
    assert expected and not problems
    assert _spans(marked) == (expected, [])
    runs = otel_replay.load(marked)
    assert sorted(r.run_id for r in runs) == sorted(r.run_id for r in otel_replay.load(plain))
    listed = CliRunner().invoke(cli, ["ls", "--no-cache", str(marked)])
    assert listed.exit_code == 0, listed.output
    for n in range(copies):
        assert f"{n + 1:02x}" * 8 in listed.stdout
