"""A run that ended at a model call whose answer was cut partway through: the replay fails that
call again, and the agent raises as it did.

The class: a model call that failed and so ended its run (no retry of it the trace shows, no
model call after it, the run raised).  Its client raised, a stream or a JSON body cut inside
it, and the agent with it; the trace holds the request and the error, not the bytes before
the cut (or, as OpenInference keeps them, a stream's first deltas).  A client that retries a
failure (the OpenAI SDK retries a JSON answer cut short, twice by default) sent the one
recorded call several times: each time it fails.  Drawn: the turn the cut comes at (the
first request, one after tool results, the answer's), the calls parallel or not, the API
(Chat Completions, Responses) and the SDK's mode (sync, async, a stream, the stream helper);
recorded by the shared SDK agent loops traced by OpenInference's OpenAI instrumentation
against the conformance model server, which cuts the answer every time it is asked.  The
rebuilt run is whole (nothing missing: the failure is how it ended), and replayed through
``serve`` (an HTTP server) and through the session's httpx transport the agent raises the
class it raised when recorded, after the same requests, and the session matches every step.
A Responses stream cut partway, of which OpenInference keeps no delta, is the exception:
its output is named as not recorded and the replay is refused before the agent runs,
naming the step.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from openinference.instrumentation.openai import OpenAIInstrumentor

import otel_replay
from otel_replay.replay.divergence import ReplayRefused
from tests.conformance import scenario
from tests.conformance.server import ModelServer
from tests.fixtures.recording import instrumented
from tests.fixtures.sdk_agents import Sent, http_client, openai_chat, openai_responses

TOOLS = {name: otel_replay.tool(name=name)(fn) for name, fn in scenario.TOOLS.items()}

#: API -> (its agent loop, its modes).
APIS = {
    "chat": (openai_chat, ("sync", "async", "stream", "async_stream")),
    "responses": (openai_responses, ("sync", "stream", "async_stream")),
}


def call_tool(call_id: str, name: str, arguments: str) -> str:
    try:
        with otel_replay.tool_call_id(call_id):
            return json.dumps(TOOLS[name](**json.loads(arguments)), ensure_ascii=False)
    except scenario.TOOL_ERRORS as e:
        return f"Error: {e}"


def first_request(api: str, question: str) -> dict[str, Any]:
    tools = scenario.openai_tools()
    asked = [{"role": "user", "content": question}]
    if api == "responses":
        flat = [{"type": "function", **t["function"]} for t in tools]
        return {
            "model": "gpt-4o-mini",
            "instructions": scenario.SYSTEM_PROMPT,
            "input": asked,
            "tools": flat,
        }
    system = [{"role": "system", "content": scenario.SYSTEM_PROMPT}]
    return {"model": "gpt-4o-mini", "messages": system + asked, "tools": tools}


def raised(
    api: str, mode: str, base_url: str, question: str, transport: Any = None
) -> tuple[str, int]:
    """The class the agent raises (the test fails if it answers), and the requests it sent."""
    agent, _ = APIS[api]
    sent = Sent()
    http = http_client(mode, sent, transport)
    with pytest.raises(Exception) as caught:
        with otel_replay.agent_run("support", input=question):
            agent(base_url, mode, first_request(api, question), call_tool, http)
    return type(caught.value).__name__, len(sent.bodies)


def _cases() -> list[Any]:
    """Every API and mode at every turn, calls parallel or not: in the default tier each
    API and mode once (turn and grouping rotating), the others in the slow tier."""
    out = []
    combos = [(api, mode) for api, (_, modes) in APIS.items() for mode in modes]
    for n, (api, mode) in enumerate(combos):
        for turn in range(len(scenario.DEFAULT.turns) + 1):
            for parallel in (True, False):
                quick = turn == n % 3 and parallel == (n % 2 == 0)
                marks = () if quick else (pytest.mark.slow,)
                grouped = "parallel" if parallel else "one_call"
                name = f"{api}-{mode}-turn{turn}-{grouped}"
                out.append(pytest.param(api, mode, turn, parallel, marks=marks, id=name))
    return out


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.parametrize(("api", "mode", "turn", "parallel"), _cases())
def test_a_run_ended_by_a_cut_answer_replays_to_the_same_raise(
    tmp_path: Path, api: str, mode: str, turn: int, parallel: bool
) -> None:
    turns = scenario.DEFAULT.turns
    if not parallel:  # each call in a turn of its own
        turns = tuple((c,) for group in turns for c in group)
    cut = scenario.Retry(turn, cut="stream", times=9)  # each time the client asks
    scn = dataclasses.replace(scenario.DEFAULT, turns=turns, retries=(cut,))
    question = scn.questions[0]
    path = tmp_path / "run.otlp"
    with ModelServer(tmp_path / "server.jsonl", scn=scn) as server:
        with instrumented(path, OpenAIInstrumentor()):
            recorded = raised(api, mode, f"{server.url}/v1", question)
    (run,) = otel_replay.load(path)
    models = run.model_steps()
    assert len(models) == turn + 1, [s.label() for s in run.steps]
    assert models[-1].status == "ERROR" and models[-1].retried_as is None
    if api == "responses" and "stream" in mode:
        # OpenInference keeps no delta of a Responses stream cut partway (of a Chat
        # Completions stream it keeps the first): not recorded whole, and refused.
        _refused(run, api, mode, question)
        return
    assert run.kit.verdict == "full", run.kit.problems
    assert run.kit.missing == [] and run.kit.replayable

    with otel_replay.replay(run) as session:
        assert raised(api, mode, f"{session.base_url}/v1", question) == recorded
    assert session.report().matched, session.report()

    with otel_replay.replay(run) as session:
        transport = session.async_transport() if mode.startswith("async") else session.transport()
        assert raised(api, mode, "http://replay/v1", question, transport) == recorded
    assert session.report().matched, session.report()


def _refused(run: Any, api: str, mode: str, question: str) -> None:
    """The cut step's output is named as not recorded, and the replay is refused before the
    agent runs, naming the step."""
    cut = run.model_steps()[-1]
    assert cut.model.output_messages is None
    assert f"steps[{cut.index}].output_messages" in run.kit.missing and not run.kit.replayable
    session, entered = otel_replay.replay(run), []
    with pytest.raises(ReplayRefused) as refused, session:
        entered.append(True)
        async_ = mode.startswith("async")
        transport = session.async_transport() if async_ else session.transport()
        raised(api, mode, "http://replay/v1", question, transport)
    assert not entered and refused.value.before
    report = session.report()
    assert report.verdict == "refused" and not report.matched, report
    (item,) = refused.value.items
    assert item.index == cut.index and "holds nothing of what streamed" in item.what
