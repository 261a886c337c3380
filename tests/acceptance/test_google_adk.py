"""Google ADK's built-in tracing read as the model server saw the run.

Each test reads a case of the conformance corpus (ADK's own telemetry,
exported over OTLP while its agent ran against the fake model server) as a
user would: copies of its files, read with ``load()``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import otel_replay
from otel_replay import messages as M
from otel_replay.runs.model import Run
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases" / "google_adk"


def _run(mode: str, tmp_path: Path) -> Run:
    paths = []
    for name in ("traces.binpb", "logs.binpb"):
        shutil.copyfile(CASES / mode / name, tmp_path / name)
        paths.append(tmp_path / name)
    (run,) = otel_replay.load(*paths)
    return run


def _requests(mode: str) -> list[dict[str, object]]:
    lines = (CASES / mode / "server.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def test_legacy_call_llm_json_reads_as_messages_and_its_inner_span_is_its_twin(
    tmp_path: Path,
) -> None:
    # ADK_TELEMETRY_SCHEMA_VERSION_OPT_IN=1: google-genai request/response JSON on
    # call_llm, the same call again as generate_content inside it (content in events
    # that send the model's turns as user messages).
    run = _run("legacy", tmp_path)
    models = run.model_steps()
    assert [s.name for s in models] == ["call_llm"] * 3
    inner = [s for s in run.steps if s.name.startswith("generate_content")]
    assert [s.duplicate_of for s in inner] == [s.span_id for s in models]
    first = models[0].model
    assert first is not None and first.system_instructions is not None
    assert [d["name"] for d in first.tool_definitions or []] == [
        "lookup_order",
        "track_shipment",
        "open_ticket",
    ]
    last = models[-1].model
    assert last is not None and last.input_messages is not None
    assert [m["role"] for m in last.input_messages] == [
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]
    assert len(_requests("legacy")) == 3
    assert run.kit.verdict == "full"


def test_a_streamed_answer_recorded_as_partials_then_the_whole_is_the_whole(
    tmp_path: Path,
) -> None:
    for mode in ("stream", "legacy_stream"):
        run = _run(mode, tmp_path)
        outputs = [s.model.output_messages for s in run.model_steps() if s.model]
        assert [len(o or []) for o in outputs] == [1, 1, 1], mode
        assert [c["id"] for c in M.tool_calls(outputs[0] or [])] == [
            "call_lookup_order_5521",
            "call_track_shipment_5521",
        ]


def test_partials_that_do_not_spell_the_whole_stay_apart() -> None:
    part = {"role": "assistant", "parts": [{"type": "text", "content": "Bon"}]}
    whole = {
        "role": "assistant",
        "parts": [{"type": "text", "content": "Bonjour"}],
        "finish_reason": "stop",
    }
    assert M.one_answer([part, whole]) != [whole]
    jour = {"role": "assistant", "parts": [{"type": "text", "content": "jour"}]}
    assert M.one_answer([part, jour, whole]) == [whole]


def test_elided_event_content_is_no_content(tmp_path: Path) -> None:
    # Legacy schema, content off for log records: each message event says "<elided>".
    run = _run("no_content", tmp_path)
    assert run.kit.verdict != "full"
    legacy = _run("legacy_no_events", tmp_path)
    inner = [s for s in legacy.steps if s.name.startswith("generate_content")]
    assert inner and all(s.duplicate_of for s in inner)
    assert legacy.kit.verdict == "full"


def test_gemini_content_parts_read_as_genai_parts() -> None:
    content = {
        "role": "model",
        "parts": [
            {"text": "thinking", "thought": True, "inline_data": None},
            {"text": "Voilà", "thought": None},
            {"function_call": {"id": "c1", "name": "f", "args": {"x": 1}}, "text": None},
            {"functionResponse": {"id": "c0", "name": "g", "response": {"ok": True}}},
        ],
    }
    assert M.normalize_message(content) == {
        "role": "assistant",
        "parts": [
            {"type": "reasoning", "content": "thinking"},
            {"type": "text", "content": "Voilà"},
            {"type": "tool_call", "id": "c1", "name": "f", "arguments": {"x": 1}},
            {"type": "tool_call_response", "id": "c0", "response": {"ok": True}},
        ],
    }
