"""``otel-replay cohort``: the user's agent against a candidate model, and tools run live.

The cohort is the order-support agent's runs (``test_cohort``'s fixture).  An
agent given as ``--agent MODULE:FUNC@openai:MODEL@BASE_URL`` runs against a
fake OpenAI-compatible server on 127.0.0.1 instead of the pinned model: its
tool calls are answered from the recording where they match it, and a call
the recording cannot answer ends the run as a new path, unless ``--live-tool``
names the tool.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from tests.unit.commands.test_cohort import (
    QUESTIONS,
    ROOT,
    as_json,
    cohort,
    cohort_cli,
    function_model,
    no_tools,
    politer,
    refusing,
    scripted,
    with_user_id,
)

__all__ = ["cohort"]  # the recorded runs, a fixture shared with test_cohort

AGENT = "examples.order_support.agent:run_agent"
FIXED = "tests.fixtures.cohort_agents:fixed_agent"
USER = ("--kwarg", "user_id=@user.id")


def test_the_agent_against_candidate_models(cohort: Path) -> None:
    received: list[dict[str, Any]] = []
    with (
        function_model(scripted, received) as same,
        function_model(politer) as other,
        function_model(no_tools) as direct,
        function_model(with_user_id) as new,
        function_model(refusing) as gone,
    ):
        doc = as_json(
            cohort,
            *("--agent", f"{AGENT}@openai:same@{same}"),
            *("--agent", f"{AGENT}@openai:politer@{other}"),
            *("--agent", f"{AGENT}@openai:hasty@{direct}"),
            *("--agent", f"{AGENT}@openai:careful@{new}"),
            *("--agent", f"{AGENT}@openai:gone@{gone}"),
            *USER,
            "--replayable",
        )
    assert doc["cohort"]["candidates"] == [
        f"agent {AGENT} on openai:{m}" for m in ("same", "politer", "hasty", "careful", "gone")
    ]
    runs = doc["runs"]
    assert len(runs) == len(QUESTIONS)
    # The agent's own requests reached the candidate: its system prompt, tools, parameters.
    assert len(received) == 2 * len(QUESTIONS)
    for body in received:
        assert body["model"] == "same" and body["temperature"] == 0.7 and body["seed"] == 7
        assert body["messages"][0]["content"].startswith("You are the order-support assistant")
    for run in runs:
        same, other, direct, new, gone = run["outcomes"]
        assert same["outcome"] == "same", same
        assert same["model_calls"] == 2 and same["tokens"] == 2 * 14
        assert [c["name"] for c in same["tool_calls"]] == ["lookup_order"]
        assert other["outcome"] == "other_answer" and other["answer"].startswith("Thanks! ")
        assert direct["outcome"] == "other_path"
        assert direct["divergence"]["step"] == 1 and direct["divergence"]["kind"] == "model"
        assert direct["answer"] == "Please ask support." and direct["tool_calls"] == []
        # The model asked for a lookup the recording never made: the run ends there, named.
        assert new["outcome"] == "new_path", new
        assert new["detail"].startswith("lookup_order(") and "u_7710" in new["detail"]
        assert new["divergence"]["kind"] == "tool" and new["answer"] is None
        assert gone["outcome"] == "error" and "model not found" in gone["detail"]
    totals = {t["candidate"]: t["counts"] for t in doc["totals"]}
    assert totals[f"agent {AGENT} on openai:same"]["same"] == len(QUESTIONS)


def test_the_fix_against_a_candidate_model_is_a_new_path_unless_its_tool_runs_live(
    cohort: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fix calls the lookup with the user id: a call the recording cannot answer.
    Named with --live-tool, the fix's own lookup runs, and the run goes on to an answer."""
    ran = tmp_path / "tool.log"
    monkeypatch.setenv("COHORT_TOOL_LOG", str(ran))
    with function_model(scripted) as url:
        ended = as_json(cohort, "--agent", f"{FIXED}@openai:m@{url}", *USER, "--replayable")
        went_on = as_json(
            cohort,
            *("--agent", f"{FIXED}@openai:m@{url}", *USER, "--replayable"),
            *("--live-tool", "lookup_order"),
        )
    for run in ended["runs"]:
        (out,) = run["outcomes"]
        assert out["outcome"] == "new_path" and "user_id" in out["detail"]
    answers = {}
    for run in went_on["runs"]:
        (out,) = run["outcomes"]
        # The model made the recorded calls; the answer is the fixed lookup's.
        assert out["outcome"] in ("same", "other_answer"), out
        assert out["model_calls"] == 2 and out["answer"]
        answers[run["run_id"]] = out
    recorded = {r.run_id: r.final_output() for r in otel_replay.load(cohort)}
    # The story's bug: "my order" found another user's order; the fix finds the user's own.
    mine = [o for i, o in answers.items() if "#4421" in (recorded[i] or "")]
    assert mine and all(o["outcome"] == "other_answer" and "#4430" in o["answer"] for o in mine)
    assert not ran.exists()  # the agent's own function ran, not the one for --model


def test_a_model_driving_the_loop_runs_a_named_tool_where_the_recording_has_no_answer(
    cohort: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ran = tmp_path / "tool.log"
    monkeypatch.setenv("COHORT_TOOL_LOG", str(ran))
    with function_model(with_user_id) as new, function_model(scripted) as same:
        doc = as_json(
            cohort,
            *("--model", f"openai:careful@{new}", "--model", f"openai:same@{same}"),
            *("--live-tool", "lookup_order=tests.fixtures.cohort_agents:live_lookup"),
            "--replayable",
        )
    calls = [json.loads(line) for line in ran.read_text().splitlines()]
    # Only the calls the recording could not answer ran: the careful model's, one a run.
    assert len(calls) == len(QUESTIONS) and all(c["user_id"] == "u_7710" for c in calls)
    for run in doc["runs"]:
        careful, same = run["outcomes"]
        assert same["outcome"] == "same"
        assert careful["outcome"] == "other_path", careful  # other arguments, not a new path
        assert careful["divergence"]["step"] == 1 and "user_id" in careful["divergence"]["diff"]
        assert careful["answer"] and careful["model_calls"] == 2


def test_a_live_tool_that_fails_is_told_to_the_model(cohort: Path) -> None:
    told: list[Any] = []

    def reads_the_failure(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        if messages[-1]["role"] == "tool":
            told.append(messages[-1]["parts"][0]["response"])
            return {"role": "assistant", "parts": [{"type": "text", "content": "Try later."}]}
        return with_user_id(messages, body)

    with function_model(reads_the_failure) as url:
        doc = as_json(
            cohort,
            *("--model", f"openai:m@{url}", "--limit", "1", "--replayable"),
            *("--live-tool", "lookup_order=tests.fixtures.cohort_agents:failing_lookup"),
        )
    (out,) = doc["runs"][0]["outcomes"]
    assert out["outcome"] == "other_path" and out["model_calls"] == 2
    assert out["answer"] == "Try later."
    assert told == ["LookupError: the order service is down (asked for 'my order')"]


def test_live_tool_usage_errors(cohort: Path) -> None:
    for args, said in [
        (("--model", "openai:m@http://127.0.0.1:9", "--live-tool", "lookup_order"), "=MODULE:FUNC"),
        (("--agent", AGENT, "--live-tool", "=x:y"), "give it as NAME"),
        (("--agent", f"{AGENT}@gpt-4o"), "PROVIDER:MODEL"),
        (("--agent", AGENT, "--live-tool", "t=no such"), "is not MODULE:FUNC"),
    ]:
        code, _, err = cohort_cli(cohort, *args)
        assert code == 2 and said in err, err


def test_a_replay_against_a_candidate_model_in_code(cohort: Path) -> None:
    """The library's side of it: ``model="candidate"`` hands every request to ``live``;
    tools still answer from the recording; a tool named in ``live_tools`` runs live where
    the recording cannot answer it."""
    from examples.order_support.agent import run_agent
    from examples.order_support.scripted_model import ScriptedModel

    runs = [r for r in otel_replay.load(cohort) if r.kit.verdict != "inspect-only"]
    assert len(runs) == len(QUESTIONS)
    asked: list[Any] = []

    def candidate(messages: Any, **given: Any) -> dict[str, Any]:
        asked.append(messages)
        return ScriptedModel().respond(messages, **given)

    for run in runs:
        asked.clear()

        with otel_replay.replay(run, model="candidate", live=candidate) as session:
            answer = run_agent(run.question() or "", model=session.model, user_id="u_7710")
        assert answer == run.final_output() and len(asked) == 2
        assert session.report().divergence is None
        with pytest.raises(otel_replay.ReplayDivergence, match="user_id"):
            with otel_replay.replay(run, model="candidate", live=candidate) as again:
                run_agent(run.question() or "", model=again.model, user_id="u_7710", fixed=True)
        with otel_replay.replay(
            run, model="candidate", live=candidate, live_tools=["lookup_order"]
        ) as fixed:
            run_agent(run.question() or "", model=fixed.model, user_id="u_7710", fixed=True)
        assert "live tool calls with no recorded match: lookup_order" in str(fixed.report())
    with pytest.raises(ValueError, match="needs live="):
        otel_replay.replay(runs[0], model="candidate")


def test_an_agent_that_makes_its_own_client_reaches_the_candidate(cohort: Path) -> None:
    """An agent given a base URL makes its OpenAI client; the replay's server hands its
    requests to the candidate, and a candidate that fails is named, not the server."""
    with function_model(scripted) as same, function_model(refusing) as gone:
        doc = as_json(
            cohort,
            *("--agent", f"tests.fixtures.cohort_agents:http_agent@openai:same@{same}"),
            *("--agent", f"tests.fixtures.cohort_agents:http_agent@openai:gone@{gone}"),
            *USER,
            "--replayable",
        )
    for run in doc["runs"]:
        good, failed = run["outcomes"]
        assert good["outcome"] == "same" and good["model_calls"] == 2, good
        assert [c["name"] for c in good["tool_calls"]] == ["lookup_order"]
        assert failed["outcome"] == "error", failed
        assert (
            failed["detail"].startswith("CandidateFailed: ")
            and "model not found" in failed["detail"]
        )


def test_an_agent_the_candidate_never_lets_answer_is_stopped_at_max_turns(cohort: Path) -> None:
    def looping(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        call = {"type": "tool_call", "id": f"c{len(messages)}", "name": "lookup_order"}
        return {"role": "assistant", "parts": [{**call, "arguments": {"query": "again"}}]}

    received: list[dict[str, Any]] = []
    with function_model(looping, received) as url:
        doc = as_json(
            cohort,
            *("--agent", f"{AGENT}@openai:m@{url}", *USER, "--replayable"),
            *("--live-tool", "lookup_order", "--max-turns", "3"),
        )
    for run in doc["runs"]:
        (out,) = run["outcomes"]
        assert out["outcome"] == "other_path" and out["model_calls"] == 3, out
        assert out["divergence"]["what"] == "no answer within 3 model calls"
        assert [c["name"] for c in out["tool_calls"]] == ["lookup_order"] * 3
    assert len(received) == 3 * len(QUESTIONS)


def test_replay_runs_the_agent_against_the_users_model_in_the_recordings_place(
    cohort: Path,
) -> None:
    """``replay --model candidate --live MODULE:FUNC``: one run, the same mode."""
    from tests.fixtures.cli import SRC, python_process

    (run,) = [r for r in otel_replay.load(cohort) if r.question() == QUESTIONS[0]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), str(ROOT)])}

    def replay(*args: str) -> Any:
        return python_process(
            *("-m", "otel_replay.cli.main", "replay", str(cohort), "--run", run.run_id),
            *("--agent", AGENT, *USER, "--model", "candidate", *args),
            cwd=ROOT,
            env=env,
        )

    done = replay("--live", "tests.fixtures.cohort_agents:thanking_model", "--json")
    doc = json.loads(done.stdout)
    assert doc["answer"] == "Thanks! " + (run.final_output() or ""), done.stderr
    assert doc["report"]["divergence"]["kind"] == "output"
    assert [r["kind"] for r in doc["report"]["replayed"]] == ["tool"]  # the lookup, stubbed
    refused = replay()
    assert refused.returncode == 2 and "--model candidate need --live" in refused.stderr
