"""Runs whose message content was stored by reference (``gen_ai.*_ref``), read back.

``tests/data/genai_refs`` is a real trace of ``opentelemetry-util-genai``'s
``TelemetryHandler`` with its ``upload`` completion hook writing to a local
fsspec store (its README and ``make.py`` say how): the spans carry only
``gen_ai.input.messages_ref`` and the like, ``file:///tmp/genai_refs/uploads/...``,
and the files are in ``uploads/`` beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import otel_replay
from _cli import cli_process
from otel_replay.replay.engine import ReplayEngine
from otel_replay.store import content_refs

DATA = Path(__file__).parent / "data" / "genai_refs"
TRACE = DATA / "trace.otlp"
#: Where the hook stored the files, and where they are now.
STORE, HERE = "file:///tmp/genai_refs/uploads", DATA / "uploads"
SYSTEM = "0f148fc37bac489bba295df2dc8c8bfe43048505caeec958d663cd189b59aa2a_system_instruction.json"


@pytest.fixture(autouse=True)
def _no_stores(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(content_refs.OTEL_REPLAY_CONTENT_REFS, raising=False)
    content_refs.use_content_refs(None)
    yield
    content_refs.use_content_refs(None)


def _stored(name: str) -> object:
    return json.loads((HERE / name).read_text())


def test_references_are_not_read_unless_their_store_is_allowed() -> None:
    (run,) = otel_replay.load(TRACE)
    assert run.kit.verdict == "inspect-only" and not run.replayable
    refused = [p for p in run.kit.problems if "is not read" in p]
    assert len(refused) == 6  # two per chat call, two for the agent
    assert all(STORE in p and "--refs" in p for p in refused)
    assert "steps[1].input_messages" in run.kit.missing


def test_a_run_stored_by_reference_rebuilds_whole_from_its_store() -> None:
    content_refs.use_content_refs([f"{STORE}={HERE}"])
    (run,) = otel_replay.load(TRACE)
    assert run.kit.verdict == "full", run.kit.problems
    agent, first, tool, second = run.steps
    assert [s.kind for s in run.steps] == ["agent", "model", "tool", "model"]
    inputs = _stored("cb0d4fdb-00e2-4b88-980c-c45a38030b18_inputs.json")
    assert second.model is not None and len(second.model.input_messages or []) == 3
    stored_result = inputs[2]["parts"][0]["response"]  # type: ignore[index]
    assert second.model.input_messages[2]["parts"][0]["response"] == stored_result  # type: ignore[index]
    assert tool.tool is not None and tool.tool.result == stored_result
    assert tool.tool.arguments == {"city": "Paris"}
    system = _stored(SYSTEM)[0]["content"]  # type: ignore[index]
    assert first.model is not None
    assert first.model.system_instructions == [{"type": "text", "content": system}]
    assert run.final_output() == "It is 18 °C and sunny in Paris."
    assert agent.model is not None and agent.model.input_payload is not None
    assert agent.model.input_payload.status == "unverified"  # the hook records no digest


def test_a_run_stored_by_reference_replays_its_model_calls() -> None:
    """The requests the agent sent are answered with what the model answered."""
    content_refs.use_content_refs([f"{STORE}={HERE}"])
    (run,) = otel_replay.load(TRACE)
    engine = ReplayEngine([run])
    system = (
        "You are a weather assistant. Call get_weather to look up the weather before you answer."
    )
    question = [
        {"role": "system", "content": system},
        {"role": "user", "content": "What is the weather in Paris?"},
    ]
    call = {
        "id": "call_w1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
    bodies = [
        {"model": "gpt-4o-mini", "messages": question},
        {
            "model": "gpt-4o-mini",
            "messages": [
                *question,
                {"role": "assistant", "content": None, "tool_calls": [call]},
                {
                    "role": "tool",
                    "tool_call_id": "call_w1",
                    "content": '{"city": "Paris", "temperature_c": 18, "sky": "sunny"}',
                },
            ],
        },
    ]
    answers = []
    for body in bodies:
        answer = engine.handle("POST", "/v1/chat/completions", json.dumps(body).encode(), {})
        assert answer.status == 200, b"".join(answer.chunks)
        answers.append(json.loads(b"".join(answer.chunks)))
    first, second = (a["choices"][0]["message"] for a in answers)
    assert first["tool_calls"][0]["function"]["name"] == "get_weather"
    assert second["content"] == "It is 18 °C and sunny in Paris."


def test_a_reference_outside_its_store_is_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "outside.json"
    secret.write_text('[{"role": "user", "parts": [{"type": "text", "content": "private"}]}]')
    store = tmp_path / "store"
    store.mkdir()
    content_refs.use_content_refs([f"file://{store}"])
    for ref in (
        f"file://{store}/../outside.json",
        f"file://{store}/%2e%2e/outside.json",
        f"file://{tmp_path}/outside.json",
        f"file://elsewhere{store}/x.json",
        f"{secret}",
    ):
        with pytest.raises(content_refs.RefUnavailable, match="is not read"):
            content_refs.read(ref)
    (store / "in.json").write_text("[]")
    assert content_refs.read(f"file://{store}/in.json") == b"[]"


def test_a_jsonl_store_file_is_read_as_its_array() -> None:
    lines = b'{"role":"user","parts":[],"index":1}\n{"role":"system","parts":[],"index":0}\n'
    assert json.loads(content_refs.as_json(lines)) == [
        {"role": "system", "parts": []},
        {"role": "user", "parts": []},
    ]


def test_the_cli_reads_references_under_the_stores_it_is_given() -> None:
    refused = cli_process("check", TRACE)
    assert refused.returncode == 1 and "--refs" in refused.stdout
    allowed = cli_process("--refs", f"{STORE}={HERE}", "check", TRACE)
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert "full" in allowed.stdout


def test_a_run_stored_by_reference_in_an_object_store_rebuilds_from_it() -> None:
    """The store moved to one that is no directory (fsspec's in-memory filesystem, as S3
    or GCS would be), read through fsspec: the same run as from the local copy."""
    import fsspec

    memory = fsspec.filesystem("memory")
    for stored in HERE.iterdir():
        memory.pipe(f"/genai-refs-moved/{stored.name}", stored.read_bytes())
    content_refs.use_content_refs([f"{STORE}=memory://genai-refs-moved"])
    moved = otel_replay.load(TRACE, strict=True)
    content_refs.use_content_refs([f"{STORE}={HERE}"])
    local = otel_replay.load(TRACE, strict=True)
    assert moved[0].kit.verdict == "full"
    assert [r.to_json() for r in moved] == [r.to_json() for r in local]
