"""A file of another OTLP signal (metrics) in a folder of traces is passed over, not an error.

A newcomer's ``otel-replay ls .`` in a project that also keeps a Collector's
metrics dump ended in exit 2 and ``OTLP metrics data, not traces or logs at
byte 0``: a file of another signal is a file holding no trace data, which a
folder's walk passes over quietly (one "passed over" line), and the fault of a
file named itself is the file's as a whole, no byte meant.  Drawn over every
format the Collector writes a metrics dump in (an OTLP/JSON document, JSON
lines, framed protobuf, zstd, gzip) and over metric shapes.
"""

from __future__ import annotations

import gzip
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from google.protobuf import json_format
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
)

from otel_replay.otlp.framing import frame
from tests.fixtures.cli import cli_run
from tests.fixtures.data import ROOT

CASE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
FORMATS = ("json", "jsonl", "proto", "zstd", "gzip")


def metrics_request(names: list[str], values: list[float], histogram: bool) -> bytes:
    """An OTLP metrics request: a gauge (or a histogram) per name."""
    request = ExportMetricsServiceRequest()
    scope = request.resource_metrics.add().scope_metrics.add()
    scope.scope.name = "otelcol/hostmetricsreceiver"
    for name, value in zip(names, values, strict=False):
        metric = scope.metrics.add(name=name, unit="1")
        if histogram:
            point = metric.histogram.data_points.add(count=3, sum=value)
            point.bucket_counts.extend([1, 2])
            point.explicit_bounds.append(value)
        else:
            metric.gauge.data_points.add(as_double=value, time_unix_nano=1_790_000_000 * 10**9)
    return request.SerializeToString()


def metrics_file(body: bytes, fmt: str) -> bytes:
    """The request as the Collector's file exporter (or a gzip of its JSON lines) holds it."""
    request = ExportMetricsServiceRequest.FromString(body)
    line = json_format.MessageToJson(request, indent=None).encode()
    if fmt == "json":  # one document, pretty-printed over many lines
        return json_format.MessageToJson(request, indent=2).encode()
    if fmt == "jsonl":
        return frame(line, "json")
    if fmt == "gzip":
        return gzip.compress(frame(line, "json"))
    return frame(body, "proto", "zstd" if fmt == "zstd" else None)


metric_shapes = st.tuples(
    st.lists(st.from_regex(r"[a-z][a-z.]{0,20}", fullmatch=True), min_size=1, max_size=4),
    st.lists(st.floats(0.5, 1e6, allow_nan=False), min_size=4, max_size=4),
    st.booleans(),
)


@pytest.mark.parametrize("fmt", FORMATS)
@settings(
    max_examples=2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(shape=metric_shapes)
def test_a_metrics_dump_beside_traces(
    tmp_path: Path, fmt: str, shape: tuple[list[str], list[float], bool]
) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))
    shutil.copy(CASE, folder / "runs.otlp")
    metrics = folder / f"metrics.{'json' if fmt in ('json', 'jsonl') else 'otlp'}"
    metrics.write_bytes(metrics_file(metrics_request(*shape), fmt))
    if fmt == "gzip":
        metrics = metrics.rename(folder / "metrics.json.gz")

    listed = cli_run("ls", folder)
    assert listed.returncode == 0, listed.stderr
    assert "b382e3968cbdccfb" in listed.stdout
    assert "error" not in listed.stderr
    assert f"passed over 1 file(s) holding no trace data: {metrics}" in listed.stderr

    named = cli_run("ls", metrics)
    assert named.returncode == 2
    assert "metrics" in named.stderr and "at byte" not in named.stderr, named.stderr


def test_metrics_after_traces_are_said_where() -> None:
    """Past the first record, the other signal is said where it starts (that byte is
    meant: the traces before it were read)."""
    with tempfile.TemporaryDirectory() as directory:
        mixed = Path(directory) / "mixed.json"
        converted = Path(directory) / "runs.json"
        assert cli_run("convert", CASE, "-o", converted).returncode == 0
        body = metrics_request(["cpu"], [1.0], False)
        mixed.write_bytes(converted.read_bytes() + metrics_file(body, "jsonl"))
        done = cli_run("ls", mixed)
        assert done.returncode == 2
        assert f"at byte {os.path.getsize(converted)}" in done.stderr, done.stderr
        assert "b382e3968cbdccfb" in done.stdout
