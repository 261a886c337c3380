"""Spans that only prepare a model call are no model steps, whatever became of the call.

Built from a real trace of the conformance corpus (LlamaIndex's ``FunctionAgent`` traced
by OpenInference, recorded against the scripted model server): each model call there
follows an OpenInference ``LLM`` span, ``_prepare_chat_with_tools``, that sends nothing.
The drawn traces make one of its calls fail (a stream cut partway records neither its
output nor, with content hidden, its request) or keep only its request.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Status

import otel_replay
from tests.fixtures.data import TESTS

TRACE = TESTS / "conformance" / "cases" / "llamaindex_openinference" / "async" / "traces.binpb"
CALL = "OpenAI.achat"
PREPARING = "OpenAI._prepare_chat_with_tools"
#: What an OpenInference LLM span records of the answer, and of the request.
ANSWER_KEYS = ("output.", "llm.output_messages.", "llm.token_count.", "llm.finish_reason")
REQUEST_KEYS = ("input.", "llm.input_messages.")


def _frames(data: bytes) -> list[ExportTraceServiceRequest]:
    out, at = [], 0
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        out.append(ExportTraceServiceRequest.FromString(data[at + 4 : at + 4 + size]))
        at += 4 + size
    return out


def _with_call_changed(which: int, failed: bool, keep_request: bool) -> bytes:
    """The trace with its ``which``-th model call stripped of its answer (and of its request
    unless ``keep_request``), ended in error if ``failed``."""
    requests = _frames(TRACE.read_bytes())
    calls = sorted(
        (
            s
            for r in requests
            for rs in r.resource_spans
            for ss in rs.scope_spans
            for s in ss.spans
            if s.name == CALL
        ),
        key=lambda s: s.start_time_unix_nano,
    )
    span = calls[which]
    dropped = ANSWER_KEYS if keep_request else ANSWER_KEYS + REQUEST_KEYS
    kept = [a for a in span.attributes if not a.key.startswith(dropped)]
    del span.attributes[:]
    span.attributes.extend(kept)
    if failed:
        span.status.code = Status.STATUS_CODE_ERROR
        span.status.message = "peer closed connection without sending complete message body"
    out = b""
    for request in requests:
        body = request.SerializeToString()
        out += len(body).to_bytes(4, "big") + body
    return out


@settings(max_examples=25, deadline=None)
@given(
    which=st.integers(min_value=0, max_value=2),
    how=st.sampled_from([(True, False), (True, True), (False, True)]),
)
def test_a_preparing_span_before_a_call_that_did_not_answer_is_no_model_step(
    which: int, how: tuple[bool, bool]
) -> None:
    failed, keep_request = how
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "traces.binpb"
        path.write_bytes(_with_call_changed(which, failed, keep_request))
        (run,) = otel_replay.load(path)
    # One model step per call the agent made, the one that did not answer among them.
    assert [s.name for s in run.steps if s.kind == "model"] == [CALL] * 3
    prepared = [s for s in run.steps if s.name == PREPARING]
    assert len(prepared) == 3 and all(s.kind == "other" for s in prepared)
