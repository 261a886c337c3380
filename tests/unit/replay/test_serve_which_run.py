"""With several runs served, a request that diverges is answered with a 409 (and a log
line) naming the run it diverged from, not only its step: the step numbers of many
runs look alike.  With one run served, there is no other to tell it from."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.engine import ReplayEngine
from tests.fixtures.recording import recording

CONVERSATION = "x-otel-replay-conversation"


def record_runs(path: Path, n: int) -> list[otel_replay.Run]:
    with recording(path):
        ask(n)
    return sorted(otel_replay.load(path), key=lambda r: r.question() or "")


def ask(n: int) -> None:
    for i in range(n):
        question = f"question {i}"
        with otel_replay.agent_run("agent", input=question):
            asked = [{"role": "user", "content": question}]
            with otel_replay.model_call(provider="openai", model="m", messages=asked) as call:
                call.record({"role": "assistant", "content": f"answer {i}"})
            asked = [*asked, {"role": "assistant", "content": f"answer {i}"}]
            asked.append({"role": "user", "content": f"more {i}"})
            with otel_replay.model_call(provider="openai", model="m", messages=asked) as call:
                call.record({"role": "assistant", "content": f"last {i}"})


def body(messages: list[dict[str, str]]) -> bytes:
    return json.dumps({"model": "m", "messages": messages}).encode()


@settings(max_examples=12, deadline=None)
@given(n=st.integers(1, 5), data=st.data())
def test_a_divergence_names_its_run_when_several_are_served(n: int, data: st.DataObject) -> None:
    path = Path(tempfile.mkdtemp()) / "runs.otlp"
    runs = record_runs(path, n)
    k = data.draw(st.integers(0, n - 1))
    lines: list[str] = []
    engine = ReplayEngine(runs, log=lines.append)
    headers = {"content-type": "application/json"}
    first = [{"role": "user", "content": f"question {k}"}]
    answer = engine.handle("POST", "/v1/chat/completions", body(first), headers)
    assert answer.status == 200
    named = dict(answer.headers)
    second = [*first, {"role": "assistant", "content": f"answer {k}"}]
    second.append({"role": "user", "content": "something else"})
    answer = engine.handle(
        "POST", "/v1/chat/completions", body(second), {**headers, CONVERSATION: named[CONVERSATION]}
    )
    assert answer.status == 409
    error = json.loads(b"".join(answer.chunks))["error"]
    assert error["run_id"] == runs[k].run_id
    said = error["message"]
    if n > 1:
        assert said.startswith(f"run {runs[k].run_id}: replay diverged at step "), said
        assert any(f"run {runs[k].run_id}: replay diverged" in line for line in lines), lines
    else:
        assert said.startswith("replay diverged at step "), said


def ask_alike(n: int) -> None:
    """``n`` runs that begin with the same question, each answered its own way."""
    for i in range(n):
        with otel_replay.agent_run("agent", input="same question"):
            asked = [{"role": "user", "content": "same question"}]
            with otel_replay.model_call(provider="openai", model="m", messages=asked) as call:
                call.record({"role": "assistant", "content": f"answer {i}"})


@settings(max_examples=12, deadline=None)
@given(n=st.integers(2, 4), rounds=st.integers(1, 3), data=st.data())
def test_runs_that_begin_alike_are_served_in_turn(n: int, rounds: int, data: st.DataObject) -> None:
    """The same question asked in several runs (or a task its framework ran again after a
    failed call): each new conversation starts in the next run, in recorded order, and a
    client replaying the whole recording again goes round once more."""
    path = Path(tempfile.mkdtemp()) / "runs.otlp"
    with recording(path):
        ask_alike(n)
    runs = sorted(otel_replay.load(path), key=lambda r: r.start_ns)
    engine = ReplayEngine(runs)
    headers = {"content-type": "application/json"}
    first = body([{"role": "user", "content": "same question"}])
    for _ in range(rounds):
        said = []
        for _ in range(n):
            answer = engine.handle("POST", "/v1/chat/completions", first, headers)
            assert answer.status == 200
            reply = json.loads(b"".join(answer.chunks))
            said.append(reply["choices"][0]["message"]["content"])
        assert said == [f"answer {i}" for i in range(n)]
