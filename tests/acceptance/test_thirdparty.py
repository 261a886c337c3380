"""Acceptance over real third-party traces: one run per case, as the model server saw it.

Each case under tests/data/thirdparty_formats/ holds the spans one
instrumentation wrote of the same order-support scenario, in three formats,
and ``server_requests.jsonl``: every request the fake model server
received and the exact answer it sent.  ``otel-replay show --json`` (the real
CLI) must give one run: a model step per request with the messages the server
received and answered, and the two tool steps with their arguments and
results (from tool spans, or derived from the messages).  The run must also
replay through :func:`otel_replay.replay` with an agent loop like the scenario's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from tests.fixtures.cli import cli_run
from tests.fixtures.data import THIRDPARTY_FORMATS, found
from tests.fixtures.ground_truth import answered, recorded, sent, tool_calls_with_ids, value
from tests.fixtures.scenario import scenario_agent

CASES = [
    p.parent.relative_to(THIRDPARTY_FORMATS).as_posix()
    for p in found(THIRDPARTY_FORMATS, "**/server_requests.jsonl")
]
FORMATS = ("traces.otlp.jsonl", "traces.otlp.pb", "traces.otlp.ldpb")


def requests_of(case: str) -> list[dict[str, Any]]:
    with open(THIRDPARTY_FORMATS / case / "server_requests.jsonl", encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["method"] == "POST"]


def show(path: Path) -> list[dict[str, Any]]:
    done = cli_run("show", "--json", path)
    assert done.returncode == 0, done.stderr
    runs: list[dict[str, Any]] = json.loads(done.stdout)["runs"]
    return runs


def test_cases_are_found() -> None:
    assert len(CASES) >= 5, (
        f"expected the third-party cases under {THIRDPARTY_FORMATS}, found {CASES}"
    )


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("case", CASES)
def test_show_gives_one_run_as_the_server_saw_it(case: str, fmt: str) -> None:
    runs = show(THIRDPARTY_FORMATS / case / fmt)
    requests = requests_of(case)
    (run,) = runs
    steps = run["steps"]
    models = [s for s in steps if s["kind"] == "model"]
    assert len(models) == len(requests)
    for step, request in zip(models, requests, strict=True):
        where = f"{case} step {step['index']}"
        assert recorded(step["input_messages"], step["system_instructions"]) == sent(request), where
        assert recorded(step["output_messages"]) == answered(request), where
    tools = [s for s in steps if s["kind"] == "tool"]
    got = [(t["call_id"], t["tool_name"], value(t["arguments"]), value(t["result"])) for t in tools]
    assert got == tool_calls_with_ids(requests) and len(got) == 2
    # Each tool step sits between the call that asked for it and the next call.
    for tool in tools:
        before = [m for m in models if m["index"] < tool["index"]]
        after = [m for m in models if m["index"] > tool["index"]]
        assert before and after, tool["name"]
        asked = [p.get("id") for m in before[-1]["output_messages"] for p in m["parts"]]
        assert tool["call_id"] in asked
    derived = [t for t in tools if t["derived"]]
    assert all(not t["timed"] for t in derived) and all(
        t["timed"] for t in tools if not t["derived"]
    )
    untimed = {f"steps[{t['index']}].timestamps" for t in derived}
    assert untimed <= set(run["missing"])
    if derived:
        assert run["verdict"] == "model-only" and not run["replayable"]
    else:
        assert run["verdict"] == "full"


@pytest.mark.parametrize("case", CASES)
def test_the_run_replays_with_pinned_model_and_stubbed_tools(case: str) -> None:
    runs = otel_replay.load(str(THIRDPARTY_FORMATS / case / FORMATS[0]))
    (run,) = runs
    first = run.model_steps()[0].model
    assert first is not None and first.input_messages
    system_apart = first.input_messages[0]["role"] != "system"
    with otel_replay.replay(run) as session:
        answer = scenario_agent(session.model, system_apart)
        session.check_output(answer)
    report = session.report()
    assert report.matched, str(report)
    hows = [(kind, how) for _, kind, how in report.replayed]
    assert [k for k, _ in hows] == ["model", "tool", "model", "tool", "model"]
    assert all(how == "stub" for kind, how in hows if kind == "tool")
    final = answered(requests_of(case)[-1])
    assert answer == "".join(item[1] for _, item in final if item[0] == "text")
