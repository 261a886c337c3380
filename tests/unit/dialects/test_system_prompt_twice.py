"""A system prompt given both ways: as ``system=`` and as the first messages.

An OpenAI message list passed whole to ``model_call`` beside ``system=`` (the
README's pattern with an ordinary agent) records the prompt twice, each as
given.  Such a run is exact and replayable: the recorded messages keep their
bytes (their digest checks), the conversation holds the prompt once wherever
the two are joined, whichever way the live agent sends it, and a divergence
shows what changed, not the prompt.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import messages as M
from otel_replay.replay.matchers import first_difference, model_rung
from otel_replay.runs.stitch import conversation
from otel_replay.same_message import message_key, without_repeated_system
from tests.fixtures.cli import cli_process
from tests.fixtures.recording import recording

SYSTEM = "You are a weather agent. Answer in one sentence."
QUESTION = "What is the weather in Paris?"


def record_twice(path: Path, system: str, question: str, answer: str = "Sunny.") -> None:
    """The newcomer's recording: the OpenAI message list whole, and ``system=`` too."""
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    with recording(path), otel_replay.agent_run("weather", input=question) as run:
        with otel_replay.model_call(
            provider="openai", model="gpt-4o-mini", messages=messages, system=system
        ) as call:
            call.record({"role": "assistant", "content": answer})
        run.record(answer)


def test_the_recording_is_exact_listed_clean_and_checks(tmp_path: Path) -> None:
    path = tmp_path / "runs.otlp"
    record_twice(path, SYSTEM, QUESTION)
    listed = cli_process("ls", path)
    assert listed.returncode == 0, listed.stderr
    assert "damaged" not in listed.stdout and "full" in listed.stdout
    checked = cli_process("check", path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "not byte-exact" not in checked.stdout and "not replayable" not in checked.stdout
    (run,) = otel_replay.load(path)
    (step,) = run.model_steps()
    assert step.model is not None and step.model.input_payload is not None
    assert step.model.input_payload.status == "exact"
    # The messages are kept as they were given, the prompt among them.
    assert [m["role"] for m in step.model.input_messages or []] == ["system", "user"]


@pytest.mark.parametrize("sent_as", ["messages", "system", "both"])
def test_replay_matches_however_the_agent_sends_the_prompt(tmp_path: Path, sent_as: str) -> None:
    path = tmp_path / "runs.otlp"
    record_twice(path, SYSTEM, QUESTION)
    user = [{"role": "user", "content": QUESTION}]
    messages = [{"role": "system", "content": SYSTEM}, *user] if sent_as != "system" else user
    system = SYSTEM if sent_as != "messages" else None
    with otel_replay.replay(path) as session:
        answer = session.model.respond(messages, system=system)
    assert M.last_text([M.normalize_message(answer)]) == "Sunny."


def test_a_divergence_shows_the_change_not_the_prompt(tmp_path: Path) -> None:
    path = tmp_path / "runs.otlp"
    record_twice(path, SYSTEM, QUESTION)
    changed = [{"role": "user", "content": "What is the weather in Lyon?"}]
    with pytest.raises(otel_replay.ReplayDivergence) as caught:
        with otel_replay.replay(path) as session:
            session.model.respond(changed, system=SYSTEM)
    err = caught.value
    assert "message 1 after the system instructions (user) differs" in str(err)
    expected, actual = err.expected, err.actual
    assert [m["role"] for m in expected] == [m["role"] for m in actual] == ["system", "user"]
    assert expected[0] == actual[0]  # the prompt, given differently, reads the same


# -- the class: any prompt, given as one or several leading messages, in any spelling -----

texts = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=40).filter(
    str.strip
)


@st.composite
def prompts_given_twice(draw: st.DrawFn) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system instructions, messages that lead with the same prompt, spelled some way)."""
    pieces = draw(st.lists(texts, min_size=1, max_size=3))
    system = [{"type": "text", "content": p} for p in pieces]
    role = draw(st.sampled_from(["system", "developer"]))
    spelling = draw(st.sampled_from(["one message", "one message per part", "blocks"]))
    if spelling == "one message":
        lead = [{"role": role, "content": [{"type": "text", "text": p} for p in pieces]}]
    elif spelling == "one message per part":
        lead = [{"role": role, "content": p} for p in pieces]
    else:
        lead = [{"role": role, "parts": system}]
    rest = [{"role": "user", "content": t} for t in draw(st.lists(texts, min_size=1, max_size=3))]
    return system, [M.normalize_message(m) for m in (*lead, *rest)]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(prompts_given_twice())
def test_the_prompt_is_held_once_in_a_conversation(
    given_twice: tuple[list[dict[str, Any]], list[dict[str, Any]]],
) -> None:
    system, messages = given_twice
    rest = [m for m in messages if m["role"] not in ("system", "developer")]
    assert list(without_repeated_system(messages, system)) == rest
    keys = list(conversation(messages, system))
    assert keys == list(conversation(rest, system))
    # A live request, either way, is the recorded conversation.
    assert model_rung(messages, system, messages, None) in ("exact", "messages")
    assert model_rung(messages, system, rest, system) in ("exact", "messages")
    assert first_difference(messages, rest) == "system instructions differ" or (
        message_key(messages[0]) is None
    )


@settings(max_examples=60, deadline=None)
@given(prompts_given_twice(), texts)
def test_a_leading_message_that_says_something_else_stays(
    given_twice: tuple[list[dict[str, Any]], list[dict[str, Any]]], other: str
) -> None:
    system, messages = given_twice
    rest = [m for m in messages if m["role"] not in ("system", "developer")]
    different = [M.normalize_message({"role": "system", "content": other}), *rest]
    if message_key(different[0]) == message_key({"role": "system", "parts": system}):
        return  # the same prompt after all (whitespace at the ends says nothing)
    assert list(without_repeated_system(different, system)) == different


_numbers = itertools.count()


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(texts, texts)
def test_any_prompt_recorded_twice_loads_exact(tmp_path: Path, system: str, question: str) -> None:
    path = tmp_path / f"{next(_numbers)}.otlp"
    record_twice(path, system, question)
    (run,) = otel_replay.load(path)
    (step,) = run.model_steps()
    assert step.model is not None and step.model.input_payload is not None
    assert step.model.input_payload.status == "exact", step.model.input_payload.reason
    assert json.loads(json.dumps(step.model.input_messages))[0]["role"] == "system"
