"""AutoGen AgentChat's built-in tracing (with the OpenAI client instrumented) read as one run.

The cases are of the conformance corpus: AutoGen's own spans, exported over
OTLP while its ``AssistantAgent`` ran against the fake model server.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span

import otel_replay
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases" / "autogen"


def _copy(mode: str, tmp_path: Path) -> Path:
    target = tmp_path / "traces.binpb"
    shutil.copyfile(CASES / mode / "traces.binpb", target)
    return target


def _spans(path: Path) -> list[Span]:
    """The spans of a Collector proto dump (4-byte big-endian length, then a request)."""
    data, at, out = path.read_bytes(), 0, []
    while at < len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        request = ExportTraceServiceRequest.FromString(data[at + 4 : at + 4 + size])
        at += 4 + size
        out += [s for r in request.resource_spans for ss in r.scope_spans for s in ss.spans]
    return out


def test_a_trace_that_only_announces_the_agent_is_no_run(tmp_path: Path) -> None:
    # AssistantAgent.__init__ traces create_agent in a trace of its own, before the run.
    path = _copy("async", tmp_path)
    spans = _spans(path)
    announced = [s for s in spans if s.name == "create_agent support"]
    assert len(announced) == 1 and not announced[0].parent_span_id
    assert len({s.trace_id for s in spans}) == 2
    (run,) = otel_replay.load(path)
    assert [s.name for s in run.roots] == ["invoke_agent support"]
    assert len(run.model_steps()) == 3
    for mode, runs in (("two_runs", 2), ("two_runs_concurrent", 2)):
        assert len(otel_replay.load(_copy(mode, tmp_path))) == runs


def test_tool_spans_without_content_take_the_calls_and_the_exception_is_the_error(
    tmp_path: Path,
) -> None:
    (run,) = otel_replay.load(_copy("async", tmp_path))
    tools = {s.tool.tool_name: s.tool for s in run.tool_steps() if s.tool is not None}
    assert tools["lookup_order"].arguments == {"order_id": "ORD-5521"}
    assert tools["lookup_order"].result_payload is not None
    assert tools["lookup_order"].result_payload.status == "unverified"
    error = tools["track_shipment"].error
    assert error is not None and error.type == "RuntimeError"
    assert "Colis-Express" in error.message
    assert run.kit.verdict == "full"
