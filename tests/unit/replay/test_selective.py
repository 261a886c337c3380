"""Selective replay and forks: a live model (ours, deterministic, no network), ``live_from``, overrides.

The recorded run (``LOOKUP``): step 1 the model asks for ``lookup_order``,
step 2 the lookup answers order #4421 shipped, step 3 the model answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from otel_replay.messages import tool_calls
from tests.fixtures.agent import LOOKUP, WORLD, call, record_run, say, support_agent
from tests.fixtures.cli import cli_run


class LiveModel:
    """Stands in for the user's hosted model: deterministic, and it keeps what it was asked."""

    def __init__(self, wording: str = "Order #{order_id} is {status}.") -> None:
        self.wording = wording
        self.calls: list[dict[str, Any]] = []

    def __call__(
        self, messages: Any, *, system: Any = None, tools: Any = None, **params: Any
    ) -> dict[str, Any]:
        asked = json.loads(json.dumps(messages))  # the agent goes on appending to its list
        self.calls.append({"messages": asked, "system": system, **params})
        last = messages[-1]
        if last["role"] == "user":
            return call("lookup_order", f"live_{len(self.calls)}", query="my order")
        (part,) = last["parts"]
        found = part["response"]
        if isinstance(found, str) or not found:
            return say("I could not find your order.")
        return say(self.wording.format(**found[0]))


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    path = tmp_path / "run.otlp"
    record_run(path, LOOKUP)
    return path


@pytest.fixture(autouse=True)
def world() -> Any:
    saved = json.loads(json.dumps(WORLD))
    yield WORLD
    WORLD.clear()
    WORLD.update(saved)


def steps_of(path: Path) -> dict[str, int]:
    (run,) = otel_replay.load(path)
    return {
        f"{s.kind}{i}": s.index for i, s in enumerate(x for x in run.steps if x.kind != "agent")
    }


# --- model="live": drift, step by step ---------------------------------------------------


def test_live_model_gets_the_recorded_requests_pinned_and_drift_is_reported(
    recorded: Path,
) -> None:
    live = LiveModel(wording="Order {order_id} has {status}.")
    with otel_replay.replay(recorded, model="live", live=live) as session:
        answer = support_agent("Where is my order?", session.model)
    assert answer == "Order #4421 is shipped."  # the agent was served the recording
    assert session.report().matched
    # Pinned: the recorded model id, parameters and seed, the recorded messages.
    assert [c["model"] for c in live.calls] == ["scripted-1", "scripted-1"]
    assert all(c["seed"] == 7 and c["temperature"] == 0.0 and c["top_p"] == 1.0 for c in live.calls)
    assert live.calls[0]["messages"][0]["parts"][0]["content"] == "Where is my order?"
    assert live.calls[0]["system"] == [
        {"type": "text", "content": "You are the support agent. Use the tools."}
    ]
    drift = session.drift
    assert [(e.index, e.same) for e in drift.entries] == [(1, True), (3, False)]
    assert drift.entries[1].what == "text differs"
    text = str(drift)
    assert "1 of 2 model step(s) answered differently live" in text
    assert "step 1 (scripted-1, span" in text and "): same" in text
    changed = [line.strip() for line in text.splitlines() if line.strip()[:1] in "+-"]
    assert any(c.startswith("-") and '"content": "Order #4421 is shipped."' in c for c in changed)
    assert any(c.startswith("+") and '"content": "Order 4421 has shipped."' in c for c in changed)
    assert "live model: 1 of 2 model step(s) drifted (step 3)" in str(session.report())


def test_a_live_model_asking_for_another_tool_is_named(recorded: Path) -> None:
    def other_tool(messages: Any, **_: Any) -> dict[str, Any]:
        return call("cancel_order", "x", order_id="4421", reason="late")

    with otel_replay.replay(recorded, model="live", live=other_tool) as session:
        support_agent("Where is my order?", session.model)
    first = session.drift.entries[0]
    assert (
        not first.same
        and first.what == "tool calls ['lookup_order'] recorded, ['cancel_order'] live"
    )


def test_model_live_needs_a_live_model(recorded: Path) -> None:
    with pytest.raises(ValueError, match="needs live="):
        otel_replay.replay(recorded, model="live")


# --- live_from=N -------------------------------------------------------------------------


def test_replay_up_to_step_n_then_continue_live(recorded: Path, tmp_path: Path) -> None:
    steps = steps_of(recorded)
    WORLD["orders"] = [{"order_id": "4430", "status": "processing"}]  # the world moved on
    live = LiveModel()
    out = tmp_path / "live.otlp"
    with otel_replay.replay(
        recorded, live_from=steps["tool1"], live=live, record_to=out
    ) as session:
        answer = support_agent("Where is my order?", session.model)
    # Step 1 came from the recording; the lookup ran for real, the last model call went live.
    assert answer == "Order #4430 is processing."
    assert len(live.calls) == 1 and live.calls[0]["model"] == "scripted-1"
    report = session.report()
    assert report.matched and [r[0] for r in report.replayed] == [steps["model0"]]
    assert f"live from step {steps['tool1']}" in str(report)
    assert session.tool_calls == [("lookup_order", {"query": "my order"})]

    compared = cli_run("diff", recorded, out, "--no-timing")
    assert compared.returncode == 1, compared.stderr
    assert "first divergence: A step 2 (tool lookup_order" in compared.stdout, compared.stdout
    (replayed,) = otel_replay.load(out)
    assert replayed.tool_steps()[0].tool.result == [{"order_id": "4430", "status": "processing"}]  # type: ignore[union-attr]
    assert replayed.final_output() == "Order #4430 is processing."


def test_live_from_a_later_step_replays_everything_before_it(recorded: Path) -> None:
    steps = steps_of(recorded)
    WORLD["orders"] = []  # a live lookup would find nothing: it must not run
    live = LiveModel(wording="live: #{order_id}")
    with otel_replay.replay(recorded, live_from=steps["model2"], live=live) as session:
        answer = support_agent("Where is my order?", session.model)
    assert answer == "live: #4421"  # the recorded lookup result, the live model's words
    assert len(live.calls) == 1


# --- fork: override one step, the rest continues ------------------------------------------


def test_fork_a_tool_result_and_continue_live(recorded: Path, tmp_path: Path) -> None:
    steps = steps_of(recorded)
    live = LiveModel()
    out = tmp_path / "fork.otlp"
    with otel_replay.replay(
        recorded, override={steps["tool1"]: []}, live=live, record_to=out
    ) as session:
        answer = support_agent("Where is my order?", session.model)
    assert answer == "I could not find your order."
    assert len(live.calls) == 1  # the step after the fork no longer matched: it went live
    report = session.report()
    assert report.matched and f"forked at step {steps['tool1']}" in str(report)

    compared = cli_run("diff", recorded, out, "--no-timing")
    assert compared.returncode == 1
    assert "first divergence: A step 2 (tool lookup_order" in compared.stdout, compared.stdout
    (forked,) = otel_replay.load(out)
    assert forked.tool_steps()[0].tool.result == []  # type: ignore[union-attr]
    assert forked.final_output() == "I could not find your order."
    same = cli_run("diff", out, out)
    assert same.returncode == 0


def test_fork_without_a_live_model_diverges_where_the_recording_ends(recorded: Path) -> None:
    steps = steps_of(recorded)
    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(recorded, override={steps["tool1"]: []}) as session:
            support_agent("Where is my order?", session.model)
    assert info.value.index == steps["model2"] and "does not match the recording" in str(info.value)


def test_fork_that_changes_nothing_stays_on_the_recording(recorded: Path) -> None:
    steps = steps_of(recorded)

    def no_live(*_: Any, **__: Any) -> Any:
        raise AssertionError("the recording still matched: nothing should go live")

    same = [{"order_id": "4421", "status": "shipped"}]
    with otel_replay.replay(recorded, override={steps["tool1"]: same}, live=no_live) as session:
        answer = support_agent("Where is my order?", session.model)
    assert answer == "Order #4421 is shipped."
    assert [k for _, k, _ in session.report().replayed] == ["model", "tool", "model"]


def test_fork_a_model_response_tools_run_live_where_unrecorded(recorded: Path) -> None:
    steps = steps_of(recorded)
    cancel = call("cancel_order", "f1", order_id="4421", reason="changed my mind")
    cancelled: list[str] = []

    def live(messages: Any, **_: Any) -> dict[str, Any]:
        (part,) = messages[-1]["parts"]
        cancelled.append(part["response"]["status"])
        return say("Order #4421 is cancelled.")

    with otel_replay.replay(recorded, override={steps["model0"]: cancel}, live=live) as session:
        answer = support_agent("Where is my order?", session.model)
    assert answer == "Order #4421 is cancelled."
    assert cancelled == ["cancelled"]  # the real cancel_order ran: the recording has none
    assert session.tool_calls == [
        ("cancel_order", {"order_id": "4421", "reason": "changed my mind"})
    ]
    assert tool_calls([cancel])[0]["name"] == "cancel_order"


def test_fork_a_tool_into_an_error(recorded: Path, tmp_path: Path) -> None:
    steps = steps_of(recorded)
    live = LiveModel()
    out = tmp_path / "fork.otlp"
    timeout = TimeoutError("lookup timed out")
    with otel_replay.replay(
        recorded, override={steps["tool1"]: timeout}, live=live, record_to=out
    ) as session:
        answer = support_agent("Where is my order?", session.model)
    assert answer == "I could not find your order."
    assert live.calls[0]["messages"][-1]["parts"][0]["response"] == "error: lookup timed out"
    (forked,) = otel_replay.load(out)
    error = forked.tool_steps()[0].tool.error  # type: ignore[union-attr]
    assert error is not None and error.type == "TimeoutError"


def test_override_names_a_model_or_tool_step(recorded: Path) -> None:
    with pytest.raises(otel_replay.ReplayError, match=r"step 0 of run .* is no model or tool step"):
        otel_replay.replay(recorded, override={0: "x"})


# --- the live model behind the user's own client -------------------------------------------


def to_chat(messages: Any, system: Any) -> list[dict[str, Any]]:
    """GenAI messages -> OpenAI chat messages (what the user's own adapter would do)."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": "".join(p["content"] for p in system)})
    for m in messages:
        for p in m["parts"]:
            if p["type"] == "text":
                out.append({"role": m["role"], "content": p["content"]})
            elif p["type"] == "tool_call":
                function = {"name": p["name"], "arguments": json.dumps(p["arguments"])}
                out.append(
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": p["id"], "type": "function", "function": function}],
                    }
                )
            elif p["type"] == "tool_call_response":
                content = json.dumps(p["response"])
                out.append({"role": "tool", "tool_call_id": p["id"], "content": content})
    return out


def test_drift_through_the_users_own_client_and_a_server_on_loopback(recorded: Path) -> None:
    """The live model is an OpenAI-compatible server on 127.0.0.1, asked through the OpenAI SDK."""
    import openai

    from tests.fixtures import http as _http

    bodies: list[dict[str, Any]] = []

    def chat_server(handler: Any) -> tuple[int, str, bytes]:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        bodies.append(body)
        last = body["messages"][-1]
        message: dict[str, Any] = {"role": "assistant", "content": None}
        if last["role"] == "user":
            arguments = json.dumps({"query": "my order"})
            function = {"name": "lookup_order", "arguments": arguments}
            message["tool_calls"] = [{"id": "srv_1", "type": "function", "function": function}]
        else:
            message["content"] = f"Rolled forward: {json.loads(last['content'])[0]['order_id']}"
        reply = {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"] + "-2511",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        return 200, "application/json", json.dumps(reply).encode()

    with _http.serving(chat_server) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="test", max_retries=0)

        def my_model(messages: Any, *, system: Any = None, tools: Any = None, **params: Any) -> Any:
            done = client.chat.completions.create(
                model=params.pop("model"),
                messages=to_chat(messages, system),
                seed=params.get("seed"),
                temperature=params.get("temperature"),
                top_p=params.get("top_p"),
            )
            message = done.choices[0].message
            if message.tool_calls:
                (c,) = message.tool_calls
                return call(c.function.name, c.id, **json.loads(c.function.arguments))
            return say(message.content or "")

        with otel_replay.replay(recorded, model="live", live=my_model) as session:
            support_agent("Where is my order?", session.model)
    assert [(b["model"], b["seed"], b["temperature"], b["top_p"]) for b in bodies] == [
        ("scripted-1", 7, 0.0, 1.0)
    ] * 2
    assert [(e.same, e.what) for e in session.drift.entries] == [
        (True, ""),
        (False, "text differs"),
    ]
    assert "Rolled forward: 4421" in str(session.drift)
