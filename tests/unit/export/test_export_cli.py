"""``otel-replay export``: stored spans re-sent to real OTLP servers on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import socket
import string
import urllib.parse
from collections.abc import Iterator
from concurrent import futures
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import grpc
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from otel_replay.cli.main import cli
from otel_replay.export.resend import otlp_exporter, read_stored, resend
from otel_replay.otlp import framing
from otel_replay.otlp.proto_reader import records_from_proto
from otel_replay.otlp.records import SpanRecord
from otel_replay.sources.reader import SpanReader
from tests.fixtures.data import ROOT
from tests.fixtures.http import serving

EXAMPLE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"


def _spans(body: bytes) -> list[SpanRecord]:
    return [r for r in records_from_proto(body, "received", 0) if isinstance(r, SpanRecord)]


class _Collector:
    """What an OTLP server received: one parsed request per call, plus the headers."""

    def __init__(self) -> None:
        self.requests: list[bytes] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []
        self.status = 200

    def spans(self) -> list[SpanRecord]:
        return [s for body in self.requests for s in _spans(body)]


@pytest.fixture
def http_collector() -> Iterator[tuple[_Collector, str]]:
    got = _Collector()

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        body = request.rfile.read(int(request.headers["Content-Length"]))
        got.paths.append(request.path)
        got.headers.append({k.lower(): v for k, v in request.headers.items()})
        if got.status != 200:
            return got.status, "text/plain", b"refused"
        got.requests.append(body)
        reply = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
        return 200, "application/x-protobuf", reply

    with serving(answer) as base:
        yield got, base


@pytest.fixture
def grpc_collector() -> Iterator[tuple[_Collector, str]]:
    got = _Collector()

    class Service(trace_service_pb2_grpc.TraceServiceServicer):
        def Export(self, request: Any, context: Any) -> Any:
            got.requests.append(request.SerializeToString())
            got.headers.append(dict(context.invocation_metadata()))
            return trace_service_pb2.ExportTraceServiceResponse()

    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield got, f"127.0.0.1:{port}"
    finally:
        server.stop(None)


@pytest.fixture
def varied_file(tmp_path: Path, varied_spans: list[Any]) -> Path:
    """Every attribute type (bytes, kvlist...), events, links, 2 resources x 2 scopes."""
    path = tmp_path / "varied.otlp"
    body = encode_spans(varied_spans).SerializeToString()
    path.write_bytes(framing.HEADER.pack(len(body)) + body)
    return path


def _key(r: SpanRecord) -> tuple[Any, ...]:
    # Everything a span carries except where it was read from.
    return (
        r.trace_id,
        r.span_id,
        r.parent_span_id,
        r.name,
        r.kind,
        r.start_ns,
        r.end_ns,
        repr(r.attributes),
        repr(r.events),
        r.status_code,
        r.status_message,
        repr(r.resource),
        r.scope_name,
        r.scope_version,
        repr(r.links),
    )


def same_spans(received: list[SpanRecord], stored: list[SpanRecord]) -> bool:
    return sorted(map(_key, received)) == sorted(map(_key, stored))


def invoke(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args], env=env)


def test_http_export_sends_every_span_as_stored(
    http_collector: tuple[_Collector, str], varied_file: Path
) -> None:
    got, base = http_collector
    result = invoke("export", varied_file, "--endpoint", f"{base}/v1/traces")

    assert result.exit_code == 0, result.output
    stored = list(SpanReader(varied_file))
    assert len(stored) == 16
    assert got.paths == ["/v1/traces"]
    assert got.headers[0]["content-type"] == "application/x-protobuf"
    assert same_spans(got.spans(), stored)
    # The hard cases survived, not only the counts.
    root = next(s for s in got.spans() if s.attributes.get("b"))
    assert root.attributes["b"] == b"\x00\xff\xfenon-utf8"
    assert root.attributes["kv"] == {"a": 1, "b": [1, "x", None], "n": {"z": b"\xfe", "e": {}}}
    assert [e.name for e in root.events] == ["bare", "ev"]
    assert any(s.links for s in got.spans())
    assert result.output.strip() == f"sent 16 spans in 1 batch to {base}/v1/traces"


def test_a_dump_directory_with_a_logs_file_sends_its_spans_cleanly(
    http_collector: tuple[_Collector, str], tmp_path: Path
) -> None:
    # What the Collector configuration leaves: traces and logs side by side.
    source = ROOT / "tests" / "data" / "genai_logs" / "event_only"
    for name in ("traces.otlp.pb", "logs.otlp.pb"):
        (tmp_path / name).write_bytes((source / name).read_bytes())
    got, base = http_collector
    result = invoke("export", tmp_path, "--endpoint", f"{base}/v1/traces")

    assert result.exit_code == 0, result.output
    assert same_spans(got.spans(), list(SpanReader(source / "traces.otlp.pb")))
    assert "error" not in result.output


def test_grpc_export_sends_every_span_as_stored(
    grpc_collector: tuple[_Collector, str], varied_file: Path
) -> None:
    got, address = grpc_collector
    result = invoke(
        "export", varied_file, "--protocol", "grpc", "--endpoint", address, "--insecure",
        "--header", "x-tenant=t1",
    )  # fmt: skip

    assert result.exit_code == 0, result.output
    assert same_spans(got.spans(), list(SpanReader(varied_file)))
    assert got.headers[0]["x-tenant"] == "t1"
    assert "sent 16 spans in 1 batch" in result.output


def test_batches_are_bounded(http_collector: tuple[_Collector, str], varied_file: Path) -> None:
    got, base = http_collector
    exporter, url = otlp_exporter(f"{base}/v1/traces")

    summary = resend(read_stored([varied_file]), exporter, endpoint=url, batch_size=5)

    assert (summary.spans, summary.batches) == (16, 4)
    assert [len(_spans(b)) for b in got.requests] == [5, 5, 5, 1]
    assert same_spans(got.spans(), list(SpanReader(varied_file)))


def test_settings_come_from_the_standard_environment(
    http_collector: tuple[_Collector, str], varied_file: Path
) -> None:
    got, base = http_collector
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": base,  # the generic one: /v1/traces is appended
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20k,x-a=1",
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
    }
    result = invoke("export", varied_file, "--header", "x-b=2", env=env)

    assert result.exit_code == 0, result.output
    assert got.paths == ["/v1/traces"]
    sent = got.headers[0]
    assert (sent["authorization"], sent["x-a"], sent["x-b"]) == ("Bearer k", "1", "2")
    assert f"to {base}/v1/traces" in result.output


def test_grpc_from_the_environment_keeps_its_headers_next_to_given_ones(
    grpc_collector: tuple[_Collector, str], varied_file: Path
) -> None:
    got, address = grpc_collector
    env = {
        "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": f"http://{address}",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "x-a=1",
    }
    result = invoke("export", varied_file, "--header", "x-b=2", env=env)

    assert result.exit_code == 0, result.output
    assert (got.headers[0]["x-a"], got.headers[0]["x-b"]) == ("1", "2")


def test_trace_and_run_select_what_is_sent(
    http_collector: tuple[_Collector, str], varied_file: Path, tmp_path: Path
) -> None:
    got, base = http_collector
    example_file = tmp_path / EXAMPLE.name  # --trace builds an index beside its input
    example_file.write_bytes(EXAMPLE.read_bytes())
    example = list(SpanReader(example_file))
    trace = example[0].trace_id

    result = invoke("export", varied_file, example_file, "--trace", trace[:8], "--endpoint", base)
    assert result.exit_code == 0, result.output
    assert same_spans(got.spans(), example)

    got.requests.clear()
    shown = invoke("show", example_file, "--json")
    run_id = json.loads(shown.output)["runs"][0]["run_id"]
    result = invoke("export", varied_file, example_file, "--run", run_id, "--endpoint", base)
    assert result.exit_code == 0, result.output
    assert same_spans(got.spans(), example)

    result = invoke("export", varied_file, "--trace", "ffff", "--endpoint", base)
    assert result.exit_code == 2
    assert "no trace 'ffff'" in result.output


def _closed_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_an_endpoint_that_refuses_is_one_line_and_exit_1(varied_file: Path, protocol: str) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    result = invoke(
        "export", varied_file, "--endpoint", endpoint, "--protocol", protocol, "--timeout", "1"
    )

    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("otel-replay: error: ")
    assert endpoint.removeprefix("http://") in lines[0]
    assert "connection refused" in lines[0].lower()
    assert "Traceback" not in result.output


def test_an_http_error_status_is_exit_1_with_the_status(
    http_collector: tuple[_Collector, str], varied_file: Path
) -> None:
    got, base = http_collector
    got.status = 400

    result = invoke("export", varied_file, "--endpoint", f"{base}/v1/traces")

    assert result.exit_code == 1
    assert result.output.count("\n") == 1
    assert f"{base}/v1/traces" in result.output and "400" in result.output


def test_bad_input_sends_the_good_spans_then_exit_2(
    http_collector: tuple[_Collector, str], tmp_path: Path
) -> None:
    got, base = http_collector
    damaged = tmp_path / "damaged.otlp"
    good = EXAMPLE.read_bytes()
    damaged.write_bytes(good + b"\x00\x00\x10\x00torn")

    result = invoke("export", damaged, "--endpoint", base)

    assert result.exit_code == 2
    assert same_spans(got.spans(), list(SpanReader(EXAMPLE)))
    assert f"{damaged}: truncated record" in result.output
    assert f"at byte {len(good)}" in result.output
    assert "Traceback" not in result.output


def test_bad_usage_is_exit_2(varied_file: Path, tmp_path: Path) -> None:
    assert invoke("export", varied_file, "--header", "novalue").exit_code == 2
    assert invoke("export", varied_file, "--protocol", "http/json").exit_code == 2
    result = invoke("export", varied_file, env={"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"})
    assert result.exit_code == 2 and "http/json" in result.output
    missing = invoke("export", tmp_path / "nope.otlp", "--endpoint", "http://127.0.0.1:1")
    assert missing.exit_code == 2 and "nope.otlp" in missing.output


_PASSWORD = st.text(
    string.ascii_letters + string.digits + "-._~!$&'()*+,;=%", min_size=8, max_size=24
)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    password=_PASSWORD.filter(lambda p: len(set(p)) >= 5 and "%" not in p),
    key=st.text(string.ascii_letters + string.digits, min_size=16, max_size=32),
    protocol=st.sampled_from(["http/protobuf", "grpc"]),
    scheme=st.sampled_from(["http", "grpc"]),
    reachable=st.booleans(),
)
def test_credentials_in_the_endpoint_are_never_printed(
    varied_file: Path,
    http_collector: tuple[_Collector, str],
    password: str,
    key: str,
    protocol: str,
    scheme: str,
    reachable: bool,
) -> None:
    """A password in the endpoint's URL and an api key in its query, on every line export
    prints (sent, refused, failed), whatever the protocol: hidden, as in every other
    message naming a URL."""
    _, base = http_collector
    port = base.rsplit(":", 1)[1] if reachable and protocol == "http/protobuf" else _closed_port()
    quoted = urllib.parse.quote(password, safe="")
    endpoint = f"{scheme}://me:{quoted}@127.0.0.1:{port}/v1/traces?api_key={key}"
    if protocol == "grpc":
        endpoint = f"{scheme}://me:{quoted}@127.0.0.1:{port}"
    result = invoke(
        "export", varied_file, "--endpoint", endpoint, "--protocol", protocol, "--timeout", "1"
    )
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1), result.output
    for secret in {password, quoted}:
        assert secret not in result.output, (secret, result.output)
    if protocol == "http/protobuf":
        assert key not in result.output, result.output
    assert "me:[REDACTED]@127.0.0.1" in result.output, result.output
