"""Calls and ids an instrumentation left out of later inputs, recovered from the conversation.

Built from the conformance corpus (real traces of LiteLLM's own OpenTelemetry
callback and of OpenInference's LiteLLM instrumentation, recorded against the
scripted model server).
"""

from __future__ import annotations

import json
from pathlib import Path

import otel_replay
from otel_replay.runs.double_spans import same_model
from otel_replay.runs.stitch import turns
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases"


def _models(case: str) -> list[otel_replay.Step]:
    (run,) = otel_replay.load(CASES / case / "traces.binpb")
    return [s for s in run.steps if s.kind == "model"]


def test_turns_litellm_recorded_empty_take_the_answers_they_were() -> None:
    first, second, third = _models("litellm_otel/sync")
    assert first.model is not None and second.model is not None and third.model is not None
    # The answer's calls came from the legacy gen_ai.completion.N.function_call attributes;
    # their ids from the tool results that follow the turn in the next input.
    calls = [p for p in first.model.output_messages[0]["parts"] if p["type"] == "tool_call"]
    assert [(c["id"], c["name"]) for c in calls] == [
        ("call_lookup_order_5521", "lookup_order"),
        ("call_track_shipment_5521", "track_shipment"),
    ]
    turn = second.model.input_messages[2]
    assert turn["role"] == "assistant" and [p["id"] for p in turn["parts"]] == [
        "call_lookup_order_5521",
        "call_track_shipment_5521",
    ]
    assert len(third.model.derived) == 2 and all(
        "recorded without its calls" in n for n in third.model.derived
    )
    shown = json.loads(json.dumps(second.to_json()))
    assert shown["derived_fields"] == second.model.derived


def test_a_turn_that_kept_its_text_is_filled_too() -> None:
    """LiteLLM's Anthropic route keeps the answer's text and drops its calls."""
    _, second, _ = _models("litellm_otel/anthropic")
    assert second.model is not None
    turn = second.model.input_messages[2]
    assert [p["type"] for p in turn["parts"]] == ["text", "tool_call", "tool_call"]


def test_tool_results_without_ids_take_the_ids_of_the_calls_before_them() -> None:
    _, second, _ = _models("litellm_openinference/sync")
    assert second.model is not None
    results = [m for m in second.model.input_messages if m["role"] == "tool"]
    assert [m["parts"][0]["id"] for m in results] == [
        "call_lookup_order_5521",
        "call_track_shipment_5521",
    ]
    assert any("call ids" in n for n in second.model.derived)


def test_one_answer_recorded_as_several_messages_is_one_turn() -> None:
    answer = [
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "a", "name": "f"}]},
        {"role": "assistant", "parts": [{"type": "tool_call", "id": "b", "name": "g"}]},
        {"role": "tool", "parts": [{"type": "tool_call_response", "id": "a", "response": 1}]},
    ]
    (merged, tool) = turns(answer)
    assert [p["id"] for p in merged["parts"]] == ["a", "b"] and tool["role"] == "tool"


def test_a_router_and_a_client_name_one_model() -> None:
    assert same_model("openai/responses/gpt-4o-mini", "gpt-4o-mini-2024-07-18")
    assert same_model("gpt-4o-mini", None)
    assert not same_model("gpt-4o-mini", "gpt-4o")
    assert not same_model("anthropic/claude-sonnet-4-5", "gpt-4o-mini")


def test_a_span_that_only_prepares_a_call_is_no_model_step() -> None:
    """LlamaIndex's _prepare_chat_with_tools: an OpenInference LLM span that sends nothing."""
    from otel_replay.runs.build import build_runs
    from otel_replay.sources.reader import SpanReader

    path = CASES / "llamaindex_openinference" / "async" / "traces.binpb"
    (run,) = otel_replay.load(path)
    models = [s for s in run.steps if s.kind == "model"]
    assert [s.name for s in models] == ["OpenAI.achat"] * 3
    prepared = [s for s in run.steps if s.name == "OpenAI._prepare_chat_with_tools"]
    assert len(prepared) == 3 and all(s.kind == "other" for s in prepared)
    # Without the call it prepared (the answering sibling), a span is not demoted.
    records = [r for r in SpanReader(path) if r.name != "OpenAI.achat"]
    (alone,) = build_runs(records)
    assert [s.kind for s in alone.steps if s.name.endswith("_prepare_chat_with_tools")] == [
        "model"
    ] * 3


def test_an_answer_the_span_kept_no_record_of_is_the_turn_the_next_call_sent_back(
    tmp_path: Path,
) -> None:
    # A real trace (the OTel openai-v2 instrumentation, content on spans) whose first chat
    # span is made to keep no output, as a streamed generation's span may.
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    data, at, out, first = (
        (CASES / "openai_otel_v2" / "sync" / "traces.binpb").read_bytes(),
        0,
        b"",
        None,
    )
    while at < len(data):
        size = int.from_bytes(data[at : at + 4], "big")
        request = ExportTraceServiceRequest.FromString(data[at + 4 : at + 4 + size])
        at += 4 + size
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                for span in ss.spans:
                    keys = [a.key for a in span.attributes]
                    if first is None and "gen_ai.output.messages" in keys:
                        first = span.span_id.hex()
                        kept = [a for a in span.attributes if a.key != "gen_ai.output.messages"]
                        del span.attributes[:]
                        span.attributes.extend(kept)
        body = request.SerializeToString()
        out += len(body).to_bytes(4, "big") + body
    assert first is not None
    (tmp_path / "traces.binpb").write_bytes(out)
    (run,) = otel_replay.load(tmp_path / "traces.binpb")
    (step,) = [s for s in run.model_steps() if s.span_id == first]
    assert step.model is not None and step.model.output_messages is not None
    calls = [p["id"] for p in step.model.output_messages[0]["parts"] if p["type"] == "tool_call"]
    assert calls == ["call_lookup_order_5521", "call_track_shipment_5521"]
    assert any("the next model call" in note for note in step.model.derived)
    # The run rates as the one whose span kept its answer (the loop's tools are untraced).
    (original,) = otel_replay.load(CASES / "openai_otel_v2" / "sync" / "traces.binpb")
    assert original.kit.verdict == run.kit.verdict
