"""``otel-replay cohort`` over the conformance corpus: more than a hundred runs of eight
stacks, each run's own loop driven by the model it was recorded with.

The corpus was recorded against a scripted model server (``tests/conformance/server``);
the same server is the candidate model here, one per scenario.  Driving a run's loop
with it (the recorded system prompt, messages, tool definitions and parameters sent to
it, its tool calls answered from the recording) must give back the run: the same tool
calls and the same answer.  Where the trace lacks what the candidate must be sent (a
stack that records no tool definitions, a case the corpus lists as not recorded), the
run is refused, naming it; a run recorded
without content is skipped, saying why.  Nothing else.
"""

from __future__ import annotations

import collections
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

import otel_replay
from otel_replay.runs.failed_calls import fails_again
from tests.conformance import scenario
from tests.conformance.checks import find_cases
from tests.conformance.server import ModelServer
from tests.conformance.test_conformance import NOT_RECORDED
from tests.fixtures.cli import SRC, python_process

#: Stacks whose traces the corpus holds on the Chat Completions wire: frameworks with their
#: own telemetry, OpenInference and OpenLLMetry on a framework, a client instrumentation.
STACKS = (
    "langgraph_openinference",
    "openai_otel_v2",
    "openai_openinference",
    "google_adk",
    "pydantic_ai",
    "strands",
    "crewai",
    "litellm_otel",
)


#: Known gaps, printed, not failed: (when, the words the outcome then has, why); ``when``
#: takes the scenario's name, whether the run ended at a failed model call, and whether its
#: framework ended it its own way.
#: - A run with a model call that failed (an answer cut partway through), which a replay
#:   fails again: the candidate answers that call, so the run goes another way than the
#:   recording (at that call, past its end, before its later calls, or to another answer).
#: - A run its framework ended its own way (pydantic-ai's ``run_stream`` stops at text
#:   written beside calls): the candidate's agent code goes on, past the recording's end.
KNOWN: tuple[tuple[Callable[[str, bool, bool], bool], str, str], ...] = (
    *(
        (
            lambda name, failed, own: failed,
            words,
            "the recorded run has a model call that failed, which the candidate answers",
        )
        for words in (
            "the recorded call failed and the candidate answered it",
            "after the recording",
            "answered before the recorded calls",
            "other answer",
        )
    ),
    (
        lambda name, failed, own: own,
        "after the recording",
        "the framework ended the recorded run its own way, which the candidate goes past",
    ),
)


def _ended_failed(run: otel_replay.Run) -> bool:
    """Whether ``run`` has a model call that failed and that a replay fails again (the
    kit's own definition)."""
    return any(s.kind == "model" and s.model is not None and fails_again(run, s) for s in run.steps)


def _cases_by_scenario() -> tuple[
    dict[str, list[Path]], dict[str, str], set[str], set[str], set[str]
]:
    """The corpus's trace files by scenario, the stack of each run (by its id), the runs
    that ended at a failed model call, those their framework ended its own way, and those
    whose trace lacks what a replay needs (the corpus lists each, with why)."""
    out: dict[str, list[Path]] = collections.defaultdict(list)
    stack_of: dict[str, str] = {}
    ended_failed: set[str] = set()
    own_ending: set[str] = set()
    lacking: set[str] = set()
    for case in find_cases():
        meta = case.meta
        if meta["stack"] in STACKS and meta.get("api", "chat") == "chat" and meta["content"]:
            out[str(meta.get("scenario", "default"))] += case.trace_files()
            for r in otel_replay.load(*case.trace_files()):
                stack_of[r.run_id] = meta["stack"]
                if case.id in NOT_RECORDED:
                    lacking.add(r.run_id)
                if _ended_failed(r):
                    ended_failed.add(r.run_id)
                if case.ending is not None:
                    own_ending.add(r.run_id)
    return out, stack_of, ended_failed, own_ending, lacking


@pytest.mark.slow
def test_each_run_driven_by_its_own_model_comes_back_the_same_or_is_refused_by_name() -> None:
    outcomes: collections.Counter[str] = collections.Counter()
    same_in: set[str] = set()
    problems: list[str] = []
    by_scenario, stack_of, ended_failed, own_ending, lacking = _cases_by_scenario()
    for name, files in sorted(by_scenario.items()):
        with tempfile.TemporaryDirectory() as tmp:
            with ModelServer(Path(tmp) / "log.jsonl", scn=scenario.scenario_named(name)) as server:
                done = python_process(
                    "-m",
                    "otel_replay.cli.main",
                    "cohort",
                    *map(str, files),
                    "--model",
                    f"openai:gpt-4o-mini@{server.url}/v1",
                    "--json",
                    env={**os.environ, "PYTHONPATH": str(SRC)},
                    timeout=600,
                )
        assert done.returncode in (0, 1), done.stderr
        doc = json.loads(done.stdout)
        for run in doc["runs"]:
            if run["skipped"]:
                outcomes["skipped"] += 1
                if "no content recorded" not in run["skipped"]:
                    problems.append(f"{name} {run['run_id']}: skipped: {run['skipped']}")
                continue
            (outcome,) = run["outcomes"]
            outcomes[outcome["outcome"]] += 1
            if outcome["outcome"] == "same":
                same_in.add(stack_of[run["run_id"]])
                continue
            if outcome["outcome"] == "refused" and "tool definitions" in outcome["words"]:
                continue
            if outcome["outcome"] == "refused" and run["run_id"] in lacking:
                print(f"refused: {name} {run['run_id']}: {outcome['words']} (not recorded)")
                continue
            ended, own = run["run_id"] in ended_failed, run["run_id"] in own_ending
            known = [
                why
                for when, words, why in KNOWN
                if when(name, ended, own) and words in outcome["words"]
            ]
            if known:
                print(f"known: {name} {run['run_id']}: {outcome['words']} ({known[0]})")
                continue
            problems.append(f"{name} {run['run_id']} ({run['agent']}): {outcome['words']}")
    print(dict(outcomes), sorted(same_in))
    assert not problems, "\n".join(problems)
    assert sum(outcomes.values()) >= 100, outcomes
    # Strands and the OpenAI SDK's own instrumentation record no tool definitions (each of
    # their runs is refused, by name); the other stacks record them, and give runs back.
    assert same_in == set(STACKS) - {"strands", "openai_otel_v2"}, same_in
