"""Stored spans become runs: dedupe, any arrival order, missing parents, kit verdicts."""

from __future__ import annotations

import json
import random
import struct
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import Status, StatusCode, Tracer

import otel_replay
from otel_replay import attributes as A
from otel_replay.otlp.errors import FormatError
from otel_replay.otlp.records import EventRecord, SpanRecord
from otel_replay.payload import codec as payload
from otel_replay.payload.attributes import to_attributes
from otel_replay.payload.blobs import BlobStore
from otel_replay.runs.build import build_runs
from otel_replay.runs.load import LoadWarning, load
from otel_replay.runs.steps import classify, current_attributes, to_step
from tests.fixtures.records import span_record

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(span_id: str, parent: str | None, start: int, name: str, **attrs: Any) -> SpanRecord:
    return span_record(
        TRACE, span_id, parent, start, name, attrs, resource={"service.name": "t"}, source="f.otlp"
    )


def tool_attrs(name: str, args: Any, result: Any) -> dict[str, Any]:
    return {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: name,
        **to_attributes(A.TOOL_CALL_ARGUMENTS, args),
        **to_attributes(A.TOOL_CALL_RESULT, result),
    }


def model_attrs(text: str) -> dict[str, Any]:
    return {
        A.OPERATION_NAME: "chat",
        "gen_ai.system": "openai",
        A.REQUEST_MODEL: "m",
        **to_attributes(
            A.INPUT_MESSAGES, [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
        ),
        **to_attributes(
            A.OUTPUT_MESSAGES, [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
        ),
    }


def spans() -> list[SpanRecord]:
    return [
        span(
            "a" * 16,
            None,
            100,
            "invoke_agent x",
            **{A.OPERATION_NAME: "invoke_agent", A.FP_COMMIT: "c0ffee"},
        ),
        span("b" * 16, "a" * 16, 110, "chat m", **model_attrs("calling")),
        span("c" * 16, "a" * 16, 120, "execute_tool t", **tool_attrs("t", {"x": 1}, [1, 2])),
        span("d" * 16, "c" * 16, 121, "db query"),
        span("e" * 16, "a" * 16, 130, "chat m", **model_attrs("done")),
    ]


def shape(run: Any) -> list[tuple[int, str, str, int]]:
    return [(s.index, s.kind, s.span_id[0], s.depth) for s in run.steps]


def test_tree_in_start_order_whatever_the_arrival_order() -> None:
    expected = [
        (0, "agent", "a", 0),
        (1, "model", "b", 1),
        (2, "tool", "c", 1),
        (3, "other", "d", 2),
        (4, "model", "e", 1),
    ]
    for seed in range(10):
        shuffled = spans()
        random.Random(seed).shuffle(shuffled)
        (run,) = build_runs(shuffled)
        assert shape(run) == expected
    (run,) = build_runs(spans())
    assert run.fingerprint["commit"] == "c0ffee"
    assert (
        run.steps[1].model is not None and run.steps[1].model.provider == "openai"
    )  # legacy gen_ai.system
    assert run.final_output() == "done"


def test_spans_exported_twice_count_once() -> None:
    doubled = spans() + spans()
    doubled[-1] = span("e" * 16, "a" * 16, 130, "chat m")  # a poorer duplicate loses
    (run,) = build_runs(doubled)
    assert len(run.steps) == 5
    assert run.steps[4].model is not None and run.steps[4].model.output_messages is not None


def test_missing_parent_keeps_the_orphan_as_a_root() -> None:
    orphaned = [s for s in spans() if s.span_id != "c" * 16]  # the tool span never arrived
    (run,) = build_runs(orphaned)
    assert len(run.steps) == 4
    assert [r.span_id[0] for r in run.roots] == ["a", "d"]


def test_kit_verdicts() -> None:
    (full,) = build_runs(spans())
    assert full.kit.verdict == "full" and full.replayable
    assert "tenant.id" in full.kit.not_set and "commit" not in full.kit.not_set
    assert "tenant.id" not in full.kit.missing  # optional, and absent from the whole run

    no_result = spans()
    attrs = dict(no_result[2].attributes)
    for key in [k for k in attrs if k.endswith(A.TOOL_CALL_RESULT)]:
        del attrs[key]
    no_result[2] = span("c" * 16, "a" * 16, 120, "execute_tool t", **attrs)
    (model_only,) = build_runs(no_result)
    assert model_only.kit.verdict == "model-only" and not model_only.replayable
    assert "steps[2].result" in model_only.kit.missing

    truncated = spans()
    attrs = dict(truncated[2].attributes)
    attrs[A.TOOL_CALL_RESULT] = attrs[A.TOOL_CALL_RESULT][:3]
    truncated[2] = span("c" * 16, "a" * 16, 120, "execute_tool t", **attrs)
    (bad,) = build_runs(truncated)
    assert not bad.replayable
    assert any("step 2 (tool t" in p and "not byte-exact" in p for p in bad.kit.problems)

    cold = [
        span(
            s.span_id,
            s.parent_span_id,
            s.start_ns,
            s.name,
            **{A.CONTENT: "NO_CONTENT", A.OPERATION_NAME: s.attributes.get(A.OPERATION_NAME, "")},
        )
        for s in spans()
    ]
    (inspect_only,) = build_runs(cold)
    assert inspect_only.kit.verdict == "inspect-only" and not inspect_only.replayable


def test_two_traces_are_two_runs() -> None:
    other = [span("f" * 16, None, 50, "invoke_agent y")]
    other[0].trace_id = "1" * 32
    runs = build_runs(spans() + other)
    assert [r.run_id for r in runs] == ["1" * 32, TRACE]  # sorted by start time


# --- real SDK spans, real files ------------------------------------------------------


def sdk_spans(
    body: Callable[[Tracer], None], limits: SpanLimits | None = None
) -> list[ReadableSpan]:
    """Spans as the SDK finishes them (its attribute limits applied)."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "svc"}), span_limits=limits)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    body(provider.get_tracer("test"))
    provider.shutdown()
    return list(exporter.get_finished_spans())


def write_otlp(path: Path, *batches: Sequence[ReadableSpan], append: bool = False) -> None:
    """The file format: per record a 4-byte big-endian length, then an export request."""
    with open(path, "ab" if append else "wb") as f:
        for batch in batches:
            body = encode_spans(batch).SerializeToString()
            f.write(struct.pack(">I", len(body)) + body)


MESSAGES_IN = [{"role": "user", "parts": [{"type": "text", "content": "where is order 88?"}]}]
CALL = {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": "88"}}
MESSAGES_OUT = [{"role": "assistant", "parts": [CALL], "finish_reason": "tool_call"}]


def agent_body(tracer: Tracer) -> None:
    with tracer.start_as_current_span(
        "invoke_agent support",
        attributes={
            A.OPERATION_NAME: "invoke_agent",
            A.FP_COMMIT: "abc123",
            A.USER_ID: "u_root",
            **to_attributes(A.INPUT_MESSAGES, MESSAGES_IN),
        },
    ):
        with tracer.start_as_current_span(
            "chat gpt-4o",
            attributes={
                **model_attrs("x"),
                A.USER_ID: "u_child",  # the root's value wins
                A.TENANT_ID: "t1",  # only here: still found
                **to_attributes(A.OUTPUT_MESSAGES, MESSAGES_OUT),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={
                **tool_attrs("lookup", {"q": "88"}, {"status": "shipped"}),
                A.TOOL_CALL_ID: "c1",
            },
        ):
            with tracer.start_as_current_span("db query"):
                pass


def test_real_spans_from_two_files_in_any_order_join_one_run(tmp_path: Path) -> None:
    finished = sdk_spans(agent_body)  # children end (and export) before parents
    assert [s.name for s in finished][-1] == "invoke_agent support"
    first, second = tmp_path / "a.otlp", tmp_path / "b.otlp"
    write_otlp(first, finished[2:])  # the root and the tool span land in one file...
    write_otlp(second, finished[:2], finished[1:2])  # ...the rest in another, one twice
    runs = load(tmp_path)
    assert runs.problems == []
    (run,) = runs
    assert [(s.depth, s.kind, s.name) for s in run.steps] == [
        (0, "agent", "invoke_agent support"),
        (1, "model", "chat gpt-4o"),
        (1, "tool", "execute_tool lookup"),
        (2, "other", "db query"),
    ]
    assert [s.index for s in run.steps] == [0, 1, 2, 3]
    assert run.run_id == run.trace_ids[0] == format(finished[0].context.trace_id, "032x")
    assert run.sources == [str(first), str(second)]
    assert run.fingerprint == {"commit": "abc123", "user.id": "u_root", "tenant.id": "t1"}
    assert run.resource["service.name"] == "svc"
    root = run.steps[0]
    assert root.model is not None and root.model.input_messages == MESSAGES_IN
    tool = run.steps[2].tool
    assert tool is not None and tool.call_id == "c1" and tool.result == {"status": "shipped"}
    model = run.steps[1].model
    assert model is not None
    assert model.output_messages == MESSAGES_OUT
    assert model.output_payload is not None and model.output_payload.status == "exact"


def test_the_richer_copy_of_a_span_wins() -> None:
    poor = span("b" * 16, "a" * 16, 110, "chat m", **{A.OPERATION_NAME: "chat"})
    rich = spans()[1]
    late = span("b" * 16, "a" * 16, 110, "chat m", **{A.OPERATION_NAME: "chat"})
    late.end_ns += 5
    for order in ([poor, rich], [rich, poor]):
        (run,) = build_runs([spans()[0], *order])
        assert run.steps[1].model is not None and run.steps[1].model.output_messages
    (run,) = build_runs([spans()[0], poor, late])
    assert run.steps[1].end_ns == late.end_ns  # same attributes: the later end wins


def test_parent_cycles_and_self_parents_drop_nothing() -> None:
    looped = [
        span("1" * 16, "2" * 16, 10, "x"),
        span("2" * 16, "1" * 16, 20, "y"),
        span("3" * 16, "3" * 16, 5, "self"),
        span("4" * 16, "2" * 16, 30, "child of y"),
    ]
    (run,) = build_runs(looped)
    assert sorted(s.name for s in run.steps) == ["child of y", "self", "x", "y"]
    assert [s.name for s in run.roots] == ["self", "x"]
    assert [(s.name, s.depth) for s in run.steps] == [
        ("self", 0),
        ("x", 0),
        ("y", 1),
        ("child of y", 2),
    ]


@pytest.mark.parametrize(
    ("attrs", "name", "kind"),
    [
        *[({A.OPERATION_NAME: op}, "span", "model") for op in sorted(A.MODEL_OPERATIONS)],
        ({A.OPERATION_NAME: "execute_tool"}, "span", "tool"),
        *[({A.OPERATION_NAME: op}, "span", "agent") for op in sorted(A.AGENT_OPERATIONS)],
        ({A.OPERATION_NAME: "retrieval_custom"}, "span", "other"),
        ({}, "GET /orders", "other"),
        ({A.TOOL_NAME: "lookup"}, "lookup", "tool"),  # no operation name (older spans)
        ({"gen_ai.system": "openai"}, "x", "other"),  # a provider alone is no model call
        (
            {"gen_ai.system": "openai", A.REQUEST_MODEL: "m", "gen_ai.usage.prompt_tokens": 3},
            "x",
            "model",
        ),
    ],
)
def test_classification(attrs: dict[str, Any], name: str, kind: str) -> None:
    assert classify(current_attributes(attrs)) == kind
    assert to_step(span("a" * 16, None, 0, name, **attrs)).kind == kind


def test_legacy_names_are_read_under_the_current_ones() -> None:
    legacy = {
        A.OPERATION_NAME: "chat",
        "gen_ai.system": "anthropic",
        A.REQUEST_MODEL: "claude",
        "gen_ai.usage.prompt_tokens": 11,
        "gen_ai.usage.completion_tokens": 4,
        "gen_ai.openai.request.seed": 7,
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.stop_sequences": ["\n\n"],
    }
    step = to_step(span("a" * 16, None, 0, "chat claude", **legacy))
    m = step.model
    assert m is not None
    assert m.provider == "anthropic"
    assert m.usage == {"input_tokens": 11, "output_tokens": 4}
    assert m.params == {"seed": 7, "temperature": 0.2, "stop_sequences": ["\n\n"]}
    assert step.attributes == legacy  # the originals are kept as they came
    current = to_step(span("a" * 16, None, 0, "c", **{**legacy, A.PROVIDER_NAME: "aws"}))
    assert current.model is not None and current.model.provider == "aws"  # current name wins


def test_third_party_content_without_digests() -> None:
    """JSON strings with no companions (status "unverified"), and kvlist/list values as-is."""
    as_json = {
        A.OPERATION_NAME: "chat",
        A.INPUT_MESSAGES: json.dumps(
            [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
        ),
        A.OUTPUT_MESSAGES: json.dumps(
            [
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "tool_call", "id": "t", "name": "f", "arguments": '{"a": 1}'}
                    ],
                }
            ]
        ),
        A.SYSTEM_INSTRUCTIONS: "Be brief.",  # plain text, not JSON
        A.TOOL_DEFINITIONS: json.dumps(
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
        ),
        A.RESPONSE_FINISH_REASONS: ["tool_calls"],
    }
    m = to_step(span("a" * 16, None, 0, "chat", **as_json)).model
    assert m is not None
    assert m.input_messages == [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    assert m.output_messages is not None
    assert m.output_messages[0]["parts"][0]["arguments"] == {"a": 1}  # parsed JSON object
    assert m.system_instructions == [{"type": "text", "content": "Be brief."}]
    assert m.tool_definitions == [
        {"type": "function", "name": "f", "parameters": {"type": "object"}}
    ]
    assert m.finish_reasons == ["tool_calls"]
    assert m.input_payload is not None and m.input_payload.status == "unverified"

    as_values = {
        A.OPERATION_NAME: "chat",
        A.INPUT_MESSAGES: [{"role": "user", "content": "hi"}],  # OpenAI style, as a kvlist
        A.SYSTEM_INSTRUCTIONS: [{"type": "text", "content": "S"}],
    }
    m = to_step(span("a" * 16, None, 0, "chat", **as_values)).model
    assert m is not None
    assert m.input_messages == [{"role": "user", "parts": [{"type": "text", "content": "hi"}]}]
    assert m.system_instructions == [{"type": "text", "content": "S"}]

    odd = {A.OPERATION_NAME: "chat", A.INPUT_MESSAGES: [{"role": "user", "parts": 3}, "text"]}
    m = to_step(span("a" * 16, None, 0, "chat", **odd)).model  # must not raise
    assert m is not None and m.input_messages is not None and len(m.input_messages) == 2


def test_exact_bytes_win_over_a_display_the_sdk_truncated() -> None:
    long_text = "order 88 " * 100
    messages = [{"role": "assistant", "parts": [{"type": "text", "content": long_text}]}]
    limit = 200

    def body(tracer: Tracer) -> None:
        attrs = {
            A.OPERATION_NAME: "chat",
            **to_attributes(A.OUTPUT_MESSAGES, messages, length_limit=limit),
            **to_attributes(A.TOOL_CALL_RESULT, long_text, length_limit=limit),
        }
        with tracer.start_as_current_span("chat m", attributes=attrs):
            pass

    (finished,) = sdk_spans(body, SpanLimits(max_attribute_length=limit))
    assert len(str(finished.attributes[A.OUTPUT_MESSAGES])) == limit  # really truncated
    record = span("a" * 16, None, 0, "chat m", **dict(finished.attributes))
    m = to_step(record).model
    assert m is not None
    assert m.output_payload is not None and m.output_payload.status == "exact"
    assert m.output_messages == messages  # from the exact bytes, not the display


def test_digest_mismatch_keeps_the_display_and_is_flagged() -> None:
    messages = [{"role": "assistant", "parts": [{"type": "text", "content": "x" * 300}]}]
    attrs = {A.OPERATION_NAME: "chat", **to_attributes(A.OUTPUT_MESSAGES, messages)}
    assert A.BYTES + A.OUTPUT_MESSAGES not in attrs  # the display alone carries it...
    attrs[A.OUTPUT_MESSAGES] = attrs[A.OUTPUT_MESSAGES][:100]  # ...and got truncated
    m = to_step(span("a" * 16, None, 0, "chat", **attrs)).model
    assert m is not None
    assert m.output_payload is not None and m.output_payload.status == "mismatch"
    assert m.output_messages is None  # the truncated display is not JSON any more

    tool = tool_attrs("t", {"q": 1}, "y" * 300)
    tool[A.TOOL_CALL_RESULT] = tool[A.TOOL_CALL_RESULT][:50]
    t = to_step(span("a" * 16, None, 0, "execute_tool t", **tool)).tool
    assert t is not None
    assert t.result_payload is not None and t.result_payload.status == "mismatch"
    assert t.result == "y" * 50  # what the display has


def test_tool_step_from_a_real_failing_span() -> None:
    class Boom(RuntimeError):
        pass

    def body(tracer: Tracer) -> None:
        with tracer.start_as_current_span(
            "execute_tool fetch",
            attributes={
                A.OPERATION_NAME: "execute_tool",
                **to_attributes(A.TOOL_CALL_ARGUMENTS, {"url": "u", "when": b"\xff"}),
                **to_attributes(A.EXCEPTION_ARGS, ("down", 503)),
            },
            record_exception=False,
            set_status_on_exception=False,
        ) as s:
            s.record_exception(ValueError("first try"))  # retried: not the error that ended it
            s.record_exception(Boom("down"))
            s.set_status(Status(StatusCode.ERROR, "status says down"))

    (finished,) = sdk_spans(body)
    rec = span("a" * 16, None, 0, finished.name, **dict(finished.attributes))
    rec.status_code = 2
    rec.status_message = "status says down"
    rec.events = [EventRecord(e.name, e.timestamp, dict(e.attributes)) for e in finished.events]
    step = to_step(rec)
    t = step.tool
    assert t is not None
    assert t.tool_name == "fetch"  # from the span name
    assert t.arguments == {"url": "u", "when": "base64:/w=="}  # plain JSON of the exact value
    assert t.arguments_payload is not None and t.arguments_payload.type == payload.PYJSON
    assert t.error is not None
    assert t.error.type.endswith("Boom") and t.error.message == "down"
    assert t.error.args_payload is not None and t.error.args_payload.value() == ("down", 503)
    assert [e["name"] for e in step.events] == ["exception", "exception"]

    typed = to_step(
        span(
            "b" * 16,
            None,
            0,
            "execute_tool g",
            **{A.OPERATION_NAME: "execute_tool", A.ERROR_TYPE: "TimeoutError"},
        )
    )
    assert typed.tool is not None and typed.tool.error is not None
    assert typed.tool.error.type == "TimeoutError"
    ok = to_step(span("c" * 16, None, 0, "execute_tool h", **tool_attrs("h", {}, "r")))
    assert ok.tool is not None and ok.tool.error is None and ok.tool.result == "r"


def test_semconv_string_arguments_are_parsed() -> None:
    attrs = {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: "f",
        A.TOOL_CALL_ARGUMENTS: '{"city": "Paris"}',
        A.TOOL_CALL_RESULT: "sunny",
    }
    t = to_step(span("a" * 16, None, 0, "execute_tool f", **attrs)).tool
    assert t is not None and t.arguments == {"city": "Paris"} and t.result == "sunny"


def test_agent_steps_get_their_own_io_only_when_recorded() -> None:
    with_io = {
        A.OPERATION_NAME: "invoke_agent",
        **to_attributes(A.INPUT_MESSAGES, MESSAGES_IN),
        **to_attributes(
            A.OUTPUT_MESSAGES, [{"role": "assistant", "parts": [{"type": "text", "content": "ok"}]}]
        ),
    }
    agent = to_step(span("a" * 16, None, 0, "invoke_agent a", **with_io))
    assert agent.kind == "agent" and agent.model is not None
    assert agent.model.input_messages == MESSAGES_IN
    bare = to_step(span("a" * 16, None, 0, "invoke_agent a", **{A.OPERATION_NAME: "invoke_agent"}))
    assert bare.model is None


def test_payload_refs_resolve_beside_each_file(tmp_path: Path) -> None:
    big = [{"role": "user", "parts": [{"type": "text", "content": "z" * 5000}]}]
    attrs = to_attributes(A.INPUT_MESSAGES, big, max_inline=1000)
    data = attrs.pop(A.BYTES + A.INPUT_MESSAGES)
    path = tmp_path / "run.otlp"
    attrs[A.REF + A.INPUT_MESSAGES] = BlobStore(path).put(data)

    def body(tracer: Tracer) -> None:
        with tracer.start_as_current_span("chat m", attributes={A.OPERATION_NAME: "chat", **attrs}):
            pass

    write_otlp(path, sdk_spans(body))
    (run,) = load(path)
    m = run.steps[0].model
    assert m is not None and m.input_payload is not None
    assert m.input_payload.status == "exact" and m.input_messages == big
    for blob in (tmp_path / "run.otlp.blobs").iterdir():
        blob.unlink()
    (run,) = load(path)
    m = run.steps[0].model
    assert m is not None and m.input_payload is not None
    assert m.input_payload.status == "missing" and m.input_messages is None
    assert not run.replayable


def test_load_keeps_the_good_runs_before_a_truncated_tail(tmp_path: Path) -> None:
    path = tmp_path / "live.otlp"
    write_otlp(path, sdk_spans(agent_body))
    good = path.stat().st_size
    second = sdk_spans(agent_body)
    body = encode_spans(second).SerializeToString()
    with open(path, "ab") as f:  # a writer died halfway through the next record
        f.write(struct.pack(">I", len(body)) + body[: len(body) // 2])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = load(path)
    assert len(runs) == 1 and len(runs[0].steps) == 4
    (problem,) = runs.problems
    assert (problem.path, problem.offset) == (str(path), good)
    assert [str(w.message) for w in caught if w.category is LoadWarning] == [str(problem)]
    assert str(problem).startswith(f"{path}: ") and str(problem).endswith(f"at byte {good}")
    with pytest.raises(FormatError) as raised:
        load(path, strict=True)
    assert raised.value.offset == good


def test_load_reports_a_missing_path_and_reads_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "a.otlp"
    write_otlp(path, sdk_spans(agent_body))
    with pytest.warns(LoadWarning, match="no such file$"):
        runs = load(tmp_path / "nope.otlp", path)
    assert len(runs) == 1
    (problem,) = runs.problems
    assert (problem.path, problem.offset, problem.reason) == (
        str(tmp_path / "nope.otlp"),
        0,
        "no such file",
    )
    assert isinstance(otel_replay.load(path), otel_replay.Runs)  # the public name


def _any_value(value: Any) -> dict[str, Any]:
    """``value`` as an OTLP/JSON AnyValue, maps and lists structured (not JSON text)."""
    if isinstance(value, dict):
        pairs = [{"key": k, "value": _any_value(v)} for k, v in value.items()]
        return {"kvlistValue": {"values": pairs}}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_any_value(v) for v in value]}}
    return {"stringValue": value}


def test_structured_message_attributes_read_like_json_text(tmp_path: Path) -> None:
    """SDKs that take structured attributes send messages as AnyValue maps, not JSON text."""
    messages = {
        A.INPUT_MESSAGES: [{"role": "user", "parts": [{"type": "text", "content": "Où ?"}]}],
        A.OUTPUT_MESSAGES: [{"role": "assistant", "parts": [{"type": "text", "content": "Ici."}]}],
        A.SYSTEM_INSTRUCTIONS: [{"type": "text", "content": "Sois bref."}],
    }
    runs = []
    for structured in (True, False):
        attributes = [
            {"key": A.OPERATION_NAME, "value": {"stringValue": "chat"}},
            {"key": A.PROVIDER_NAME, "value": {"stringValue": "openai"}},
            {"key": A.REQUEST_MODEL, "value": {"stringValue": "gpt-4o"}},
        ] + [
            {
                "key": key,
                "value": _any_value(value)
                if structured
                else {"stringValue": json.dumps(value, ensure_ascii=False)},
            }
            for key, value in messages.items()
        ]
        span = {
            "traceId": "0" * 31 + "1",
            "spanId": "0" * 15 + "1",
            "name": "chat gpt-4o",
            "kind": 3,
            "startTimeUnixNano": "1",
            "endTimeUnixNano": "2",
            "attributes": attributes,
        }
        scope = {"scope": {"name": "any"}, "spans": [span]}
        path = tmp_path / f"{structured}.json"
        path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [scope]}]}) + "\n")
        (run,) = otel_replay.load(path)
        runs.append(run)
    structured_run, text_run = runs
    (step,) = structured_run.steps
    assert step.model is not None
    assert step.model.input_messages == messages[A.INPUT_MESSAGES]
    assert step.model.output_messages == messages[A.OUTPUT_MESSAGES]
    assert step.model.system_instructions == messages[A.SYSTEM_INSTRUCTIONS]
    assert structured_run.steps[0].to_json() == text_run.steps[0].to_json()
