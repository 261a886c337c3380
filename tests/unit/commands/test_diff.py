"""``otel-replay diff``: two recordings, or a recording and the replay a session wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from examples.order_support.agent import run_agent

import otel_replay
from otel_replay import attributes as A
from otel_replay.cli.main import cli
from otel_replay.payload.attributes import to_attributes
from otel_replay.replay.recorder import (
    DIVERGENCE_DIFF,
    DIVERGENCE_EVENT,
    DIVERGENCE_STEP,
    DIVERGENCE_WHAT,
)
from otel_replay.runs.build import build_runs
from otel_replay.runs.diff import diff_runs
from tests.fixtures.agent import LOOKUP, WORLD, call, calls, record_run, say, support_agent
from tests.fixtures.cli import cli_process
from tests.fixtures.data import ROOT, TESTS
from tests.fixtures.records import span_record

CASE_FILE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
THIRDPARTY = TESTS / "data" / "thirdparty"

CANCEL = [
    call("lookup_order", "c1", query="my order"),
    call("cancel_order", "c2", order_id="4421", reason="late"),
    say("Order #4421 is cancelled."),
]
#: The same story with one more tool call before the cancel, in the same model turn.
CANCEL_CHECKED = [
    call("lookup_order", "c1", query="my order"),
    calls(
        ("check_eligibility", "c9", {"order_id": "4421"}),
        ("cancel_order", "c2", {"order_id": "4421", "reason": "late"}),
    ),
    say("Order #4421 is cancelled."),
]


def invoke(*args: str | Path) -> Result:
    return CliRunner().invoke(cli, [str(a) for a in args])


def diff_json(*args: str | Path, code: int) -> dict[str, Any]:
    result = invoke("diff", "--json", *args)
    assert result.exit_code == code, result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def statuses(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(p["status"], (p["a"] or p["b"])["name"]) for p in doc["steps"]]


# --- recording vs replay --------------------------------------------------------------


def test_a_clean_replay_equals_its_recording(tmp_path: Path) -> None:
    replayed = tmp_path / "replay.otlp"
    (run,) = otel_replay.load(CASE_FILE)
    with otel_replay.replay(run, record_to=replayed) as session:
        answer = run_agent("Where is my order?", model=session.model, user_id="u_7710")
        session.check_output(answer)
    (written,) = otel_replay.load(replayed)
    assert written.run_id != run.run_id
    assert written.roots[0].attributes["otel_replay.replay_of"] == run.run_id
    assert [s.kind for s in written.steps] == [s.kind for s in run.steps]
    assert written.kit.verdict == "full"
    doc = diff_json(CASE_FILE, replayed, code=0)
    assert doc["equal"] is True and doc["first_divergence"] is None
    assert {p["status"] for p in doc["steps"]} == {"equal"} and len(doc["steps"]) == 4
    # Equal to the nanosecond: the replay clock stood at the recorded times.
    assert [(s.start_ns, s.end_ns) for s in written.steps] == [
        (s.start_ns, s.end_ns) for s in run.steps
    ]


def test_a_diverged_replay_names_the_step_where_it_left(tmp_path: Path) -> None:
    replayed = tmp_path / "fixed.otlp"
    (run,) = otel_replay.load(CASE_FILE)
    lookup = next(s for s in run.tool_steps())
    with pytest.raises(otel_replay.ReplayDivergence):
        with otel_replay.replay(run, record_to=replayed) as session:
            run_agent("Where is my order?", model=session.model, user_id="u_7710", fixed=True)
    doc = diff_json(CASE_FILE, replayed, code=1)
    first = doc["first_divergence"]
    assert first["a"]["index"] == lookup.index and first["a"]["span_id"] == lookup.span_id
    assert first["a"]["name"] == "lookup_order" and first["status"] == "changed"
    change = {c["field"]: c for c in first["changes"]}
    assert change["arguments"]["a"] == {"query": "my order"}
    assert change["arguments"]["b"] == {"query": "my order", "user_id": "u_7710"}
    # The recorded answer after the lookup never happened in the replay.
    assert statuses(doc)[-1] == ("removed", "chat scripted-sonnet-4-2510")
    assert doc["run_changes"][0]["field"] == "final_output"

    text = invoke("diff", CASE_FILE, replayed)
    assert text.exit_code == 1
    assert f"first divergence: A step {lookup.index} (tool lookup_order" in text.stdout
    assert "arguments: added user_id" in text.stdout
    # The replay's step says where and how it left, as an event a backend shows.
    (written,) = otel_replay.load(replayed)
    (left,) = [s for s in written.steps if any(e["name"] == DIVERGENCE_EVENT for e in s.events)]
    (event,) = [e for e in left.events if e["name"] == DIVERGENCE_EVENT]
    said = event["attributes"]
    assert left.name == "execute_tool lookup_order"
    assert said[DIVERGENCE_STEP] == lookup.index
    assert "arguments" in said[DIVERGENCE_WHAT]
    assert '+    "user_id": "u_7710"' in said[DIVERGENCE_DIFF].splitlines()


def test_session_write_on_demand(tmp_path: Path) -> None:
    (run,) = otel_replay.load(CASE_FILE)
    with otel_replay.replay(run) as session:
        session.check_output(run_agent("Where is my order?", model=session.model, user_id="u_7710"))
    run_id = session.write(tmp_path / "r.otlp")
    (written,) = otel_replay.load(tmp_path / "r.otlp")
    assert written.run_id == run_id
    assert written.final_output() == run.final_output()
    assert diff_runs(run, written).equal


def test_replays_of_our_agent_through_changed_tools(tmp_path: Path) -> None:
    """Record, replay with a live tool that now answers otherwise: the diff names the tool."""
    recording = tmp_path / "rec.otlp"
    record_run(recording, LOOKUP)
    (run,) = otel_replay.load(recording)
    replayed = tmp_path / "replay.otlp"
    WORLD["orders"] = [{"order_id": "4421", "status": "lost"}]
    try:
        # The live tool answers otherwise; the model takes any request (rung "any").
        with otel_replay.replay(run, tools="live", model_match="any", record_to=replayed) as s:
            support_agent("Where is my order?", s.model)
    finally:
        WORLD["orders"] = [{"order_id": "4421", "status": "shipped"}]
    doc = diff_json(recording, replayed, code=1)
    first = doc["first_divergence"]
    assert first["a"]["name"] == "lookup_order"
    (change,) = [c for c in first["changes"] if c["field"] == "result"]
    assert change["a"][0]["status"] == "shipped" and change["b"][0]["status"] == "lost"


# --- two recordings ----------------------------------------------------------------------


def test_an_inserted_tool_call_does_not_misalign_the_rest(tmp_path: Path) -> None:
    a, b = tmp_path / "a.otlp", tmp_path / "b.otlp"
    record_run(a, CANCEL)
    record_run(b, CANCEL_CHECKED)
    doc = diff_json(a, b, code=1)
    assert statuses(doc) == [
        ("equal", "invoke_agent support"),  # same question, same answer
        ("equal", "chat scripted-1"),
        ("equal", "lookup_order"),
        ("changed", "chat scripted-1"),  # asked for one more call
        ("added", "check_eligibility"),
        ("equal", "cancel_order"),  # still met: not shifted by the insertion
        ("changed", "chat scripted-1"),  # saw one more tool result
    ]
    first = doc["first_divergence"]
    assert first["a"]["index"] == 3 and first["b"]["index"] == 3
    assert [c["field"] for c in first["changes"]] == ["output_messages"]


def test_diff_by_run_ids_in_one_dump(tmp_path: Path) -> None:
    dump = tmp_path / "both.otlp"
    record_run(dump, CANCEL)
    record_run(dump, CANCEL)
    r1, r2 = otel_replay.load(dump)
    result = invoke("diff", dump, "--run-a", r1.run_id[:8], "--run-b", r2.run_id[:8])
    assert result.exit_code == 0, result.output
    assert "the runs are equal" in result.stdout
    assert invoke("diff", f"{dump}#{r1.run_id}", f"{dump}#{r2.run_id[:6]}").exit_code == 0
    # A dump of two runs with no id given cannot be read as one run.
    bad = invoke("diff", dump, dump)
    assert bad.exit_code == 2 and "holds 2 runs" in bad.stderr and r1.run_id in bad.stderr
    assert invoke("diff", f"{dump}#ffffffff", f"{dump}#{r2.run_id}").exit_code == 2
    assert invoke("diff", dump).exit_code == 2


def test_missing_input_is_exit_2(tmp_path: Path) -> None:
    result = invoke("diff", tmp_path / "a.otlp", tmp_path / "b.otlp")
    assert result.exit_code == 2 and "a.otlp" in result.stderr


def test_diff_as_a_user_runs_it(tmp_path: Path) -> None:
    a, b = tmp_path / "a.otlp", tmp_path / "b.otlp"
    record_run(a, CANCEL)
    record_run(b, CANCEL_CHECKED)
    done = cli_process("diff", a, b)
    assert done.returncode == 1, done.stderr
    assert "first divergence: A step 3 (model" in done.stdout
    assert "+   -   4  tool    check_eligibility  only in B" in done.stdout
    assert cli_process("diff", a, a).returncode == 0


# --- fields and timing, on runs built by hand ---------------------------------------------


def _tool_run(trace: str, *, duration: int, result: Any, params: dict[str, Any]) -> Any:
    model = {
        A.OPERATION_NAME: "chat",
        A.REQUEST_MODEL: "gpt-4o",
        **{A.REQUEST_PREFIX + k: v for k, v in params.items()},
        **to_attributes(A.INPUT_MESSAGES, [{"role": "user", "parts": []}]),
    }
    tool = {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: "search",
        **to_attributes(A.TOOL_CALL_ARGUMENTS, {"q": "x"}),
        **to_attributes(A.TOOL_CALL_RESULT, result),
    }
    spans = [
        span_record(trace, "a" * 16, None, 0, "invoke_agent x", {A.OPERATION_NAME: "invoke_agent"}),
        span_record(trace, "b" * 16, "a" * 16, 1, "chat gpt-4o", model),
        span_record(trace, "c" * 16, "a" * 16, 2, "execute_tool search", tool, duration=duration),
    ]
    (run,) = build_runs(spans)
    return run


def test_fields_and_timing_beyond_the_threshold() -> None:
    ms = 1_000_000
    a = _tool_run("1" * 32, duration=10 * ms, result=[1], params={"temperature": 0.0})
    b = _tool_run("2" * 32, duration=10 * ms, result=[1], params={"temperature": 0.0})
    assert diff_runs(a, b).equal
    slow = _tool_run("3" * 32, duration=2000 * ms, result=[1], params={"temperature": 0.0})
    d = diff_runs(a, slow, time_threshold_ms=500)
    assert not d.equal
    assert d.first_divergence is not None and d.first_divergence.a is not None
    assert d.first_divergence.a.index == 2
    assert [(c.field, c.a, c.b) for c in d.first_divergence.changes] == [
        ("duration_ms", 10.0, 2000.0)
    ]
    assert diff_runs(a, slow, time_threshold_ms=5000).equal
    assert diff_runs(a, slow, time_threshold_ms=None).equal
    other = _tool_run("4" * 32, duration=10 * ms, result=[2], params={"temperature": 1.0})
    d = diff_runs(a, other)
    changed = {p.a.index: [c.field for c in p.changes] for p in d.pairs if p.a and p.changes}
    assert changed == {1: ["params"], 2: ["result"]}


def test_the_same_scenario_through_two_vendors_aligns_call_by_call() -> None:
    """Client-only spans (no agent span) against pydantic-ai's agent tree: the calls still pair."""
    a = THIRDPARTY / "otel_openai_v2" / "chat_sync" / "traces.otlp.jsonl"
    b = THIRDPARTY / "pydantic_ai" / "v6_async" / "traces.otlp.jsonl"
    doc = diff_json(a, b, code=1)
    pairs = [(p["status"], p["a"] and p["a"]["kind"], p["b"]["kind"]) for p in doc["steps"]]
    assert pairs[0] == ("added", None, "agent")
    assert [(pa, pb) for _, pa, pb in pairs[1:]] == [
        ("model", "model"),
        ("tool", "tool"),
        ("model", "model"),
        ("tool", "tool"),
        ("model", "model"),
    ]
    tools = [p for p in doc["steps"] if p["b"]["kind"] == "tool"]
    # Same tools, same arguments; the stacks differ in ids and in what they recorded.
    for p in tools:
        assert "arguments" not in {c["field"] for c in p["changes"]}
    assert invoke("diff", a, a).exit_code == 0
