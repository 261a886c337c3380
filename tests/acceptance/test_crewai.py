"""CrewAI under OpenInference (wrapper and event-listener modes) read as one run per kickoff.

The cases are of the conformance corpus: OpenInference's CrewAI (and OpenAI)
spans, exported over OTLP while a one-agent crew ran against the fake model
server, whose log is the ground truth.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import otel_replay
from tests.conformance.checks import Case, check
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases" / "crewai"


def _copy(mode: str, tmp_path: Path) -> Path:
    target = tmp_path / f"{mode}.binpb"
    shutil.copyfile(CASES / mode / "traces.binpb", target)
    return target


def test_a_streaming_kickoff_that_hands_the_crew_to_another_trace_is_no_run(
    tmp_path: Path,
) -> None:
    # Crew(stream=True).kickoff() returns a stream at once (its span's output is the
    # object's repr) and runs the crew again from a thread, in a trace of its own.
    path = _copy("stream", tmp_path)
    runs = otel_replay.load(path)
    (run,) = runs
    assert len(run.model_steps()) == 3
    assert [s.name for s in run.roots] == [run.steps[0].name]
    assert run.steps[0].attributes["output.value"].startswith('{"raw": ')


def test_tool_calls_recorded_as_a_list_and_quoted_names_are_read(tmp_path: Path) -> None:
    # The event listener writes a model answer of tool calls as the JSON list of the
    # calls, and the calls of earlier turns with their names in Python quotes.
    for mode in ("events", "events_stream", "events_responses"):
        (run,) = otel_replay.load(_copy(mode, tmp_path))
        first, second = (s.model for s in run.model_steps()[:2])
        assert first is not None and second is not None
        calls = [(p["id"], p["name"]) for m in first.output_messages or [] for p in m["parts"]]
        assert calls == [
            ("call_lookup_order_5521", "lookup_order"),
            ("call_track_shipment_5521", "track_shipment"),
        ], mode
        asked = [
            p["name"]
            for m in second.input_messages or []
            for p in m["parts"]
            if p["type"] == "tool_call"
        ]
        assert asked == ["lookup_order", "track_shipment"], mode
        assert [s.tool.call_id for s in run.tool_steps() if s.tool] == [
            "call_lookup_order_5521",
            "call_track_shipment_5521",
            "call_open_ticket_5521",
        ]
        assert check(Case(CASES / mode)).exact


V0 = CASES.parent / "crewai_v0"


def test_a_react_crew_rebuilds_one_tool_step_per_action_with_its_error_and_answer(
    tmp_path: Path,
) -> None:
    # CrewAI 0.x: the model writes "Action:"/"Action Input:" text; ToolUsage._use is traced
    # with the whole answer as its input, runs a raising tool again inside its own span
    # (three attempts), and tells the model of the error in the span's output.
    target = tmp_path / "v0.binpb"
    shutil.copyfile(V0 / "sync" / "traces.binpb", target)
    (run,) = otel_replay.load(target)
    tools = [s.tool for s in run.tool_steps() if s.tool is not None]
    assert [(t.tool_name, t.arguments) for t in tools] == [
        ("lookup_order", {"order_id": "ORD-5521"}),
        ("track_shipment", {"order_id": "ORD-5521"}),
        ("open_ticket", {"order_id": "ORD-5521", "reason": "échec du suivi du colis"}),
    ]
    retries = [s for s in run.steps if s.kind == "other" and s.tool is not None]
    assert len(retries) == 2
    assert {s.duplicate_of for s in retries} == {run.tool_steps()[1].span_id}
    error = tools[1].error
    assert error is not None and error.type == "_OTHER"
    assert error.message == "le transporteur « Colis-Express » ne répond pas (délai dépassé)"
    assert (run.final_output() or "").startswith("Votre commande ORD-5521")
    assert run.kit.verdict == "full"
    for mode in ("sync", "stream", "two_runs"):
        assert check(Case(V0 / mode)).exact, mode
