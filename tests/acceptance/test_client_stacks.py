"""Client instrumentations and agent-SDK bridges, read as the model server saw the run.

Each test reads a conformance case (the stack's own spans, exported over OTLP
while its agent ran against the fake model server) as a user would.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import otel_replay
from otel_replay import messages as M
from otel_replay.runs.model import Run
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases"


def _runs(case: str, tmp_path: Path) -> list[Run]:
    shutil.copyfile(CASES / case / "traces.binpb", tmp_path / "traces.binpb")
    return otel_replay.load(tmp_path / "traces.binpb")


def test_the_anthropic_sdks_metadata_only_twin_joins_the_call_it_traced(tmp_path: Path) -> None:
    # The SDK's own tracing (on by default, metadata only) beside OpenLLMetry's: each
    # call traced twice, in separate traces; the response id pairs the two.
    for case in ("anthropic_openllmetry/anthropic", "anthropic_openllmetry/anthropic_stream"):
        (run,) = _runs(case, tmp_path)
        assert len(run.model_steps()) == 3, case
        twins = [s for s in run.steps if s.duplicate_of]
        assert [s.name for s in twins] == ["anthropic.messages.create"] * 3
        assert run.kit.verdict == "model-only"  # the loop's tools are not traced
    (a, b) = _runs("anthropic_openllmetry/two_runs_concurrent", tmp_path)
    assert [len(r.model_steps()) for r in (a, b)] == [3, 3]


def test_a_streamed_generation_recorded_as_whole_response_objects(tmp_path: Path) -> None:
    # openai-agents streaming a chat model: OpenInference's output.value is a JSON list
    # of Response objects, the OTel bridge's output a text part with their repr.
    for case in ("openai_agents_openinference/async_stream", "openai_agents_otel/async_stream"):
        (run,) = _runs(case, tmp_path)
        first = run.model_steps()[0].model
        assert first is not None and first.output_messages is not None
        calls = M.tool_calls(first.output_messages)
        assert [c["id"] for c in calls] == ["call_lookup_order_5521", "call_track_shipment_5521"]
        assert run.final_output() is not None and "T-5521" in run.final_output()  # type: ignore[operator]


def test_openllmetry_responses_item_ids_become_the_call_ids(tmp_path: Path) -> None:
    (run,) = _runs("openai_openllmetry/responses", tmp_path)
    ids = [s.tool.call_id for s in run.tool_steps() if s.tool is not None]
    assert ids == ["call_lookup_order_5521", "call_track_shipment_5521", "call_open_ticket_5521"]


def test_openllmetry_anthropic_events_without_span_context_join_their_own_span(
    tmp_path: Path,
) -> None:
    # use_attributes=False: content as log records that name no span, joined by time; the
    # SDK's metadata-only twin overlaps each call, so the record's own scope decides, and
    # the twin (no response id on the wrapper here) pairs by process, time and usage.
    case = CASES / "anthropic_openllmetry" / "events_stream"
    for name in ("traces.binpb", "logs.binpb"):
        shutil.copyfile(case / name, tmp_path / name)
    (run,) = otel_replay.load(tmp_path / "traces.binpb", tmp_path / "logs.binpb")
    assert len(run.model_steps()) == 3
    first = run.model_steps()[0].model
    assert first is not None and first.output_messages is not None
    # Streaming, a choice's content is one part object, not a string or a list.
    parts = first.output_messages[0]["parts"]
    assert parts[0] == {"type": "text", "content": "Je vérifie la commande et son suivi…"}
    shutil.copyfile(
        CASES / "anthropic_openllmetry" / "events" / "traces.binpb", tmp_path / "t.binpb"
    )
    shutil.copyfile(CASES / "anthropic_openllmetry" / "events" / "logs.binpb", tmp_path / "l.binpb")
    (run,) = otel_replay.load(tmp_path / "t.binpb", tmp_path / "l.binpb")
    # Each call once as a model step (the richer span, content merged in), once a duplicate.
    assert len([s for s in run.steps if s.duplicate_of]) == 3
    assert {s.scope for s in run.steps if s.kind in ("model", "other")} == {
        "com.anthropic.sdk.python",
        "opentelemetry.instrumentation.anthropic",
    }
    assert len(run.model_steps()) == 3


def test_an_input_recorded_without_the_conversation_it_was_sent_is_not_full(
    tmp_path: Path,
) -> None:
    # The OTel openai-agents bridge with a Responses model records each call's first user
    # message alone: after tools ran, the next input holds none of their calls or results.
    (run,) = _runs("openai_agents_otel/responses", tmp_path)
    later = run.model_steps()[1:]
    assert run.kit.verdict == "model-only"
    assert [f"steps[{s.index}].input_messages" in run.kit.missing for s in later] == [True, True]
    assert any("recorded incompletely" in p for p in run.kit.problems)
    # A run whose inputs carry the conversation is not touched by the rule.
    (full,) = _runs("openai_agents_otel/sync", tmp_path)
    assert full.kit.verdict == "full"
