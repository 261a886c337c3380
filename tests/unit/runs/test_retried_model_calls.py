"""A model call the agent retried: its failed attempts are no model steps, and a replay answers
the request it sends without failing it first.

A framework that retries a failed model call itself (Strands' retry strategy, an agent's own
loop) traces each attempt: a model span ended in error with the request and no answer, then
the same request again, which answered.  Drawn: runs of several turns, each preceded by
failed attempts or not, beside failures that no retry follows (the last call, a call followed
by another request), which stay failed model steps.  Then a real agent
loop on the OpenAI SDK, recorded with its own retries against a model server that fails
requests (HTTP 429, 500, 503), replays without a failure.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import openai
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import attributes as A
from otel_replay.cli.render import step_line
from otel_replay.otlp.records import SpanRecord
from otel_replay.runs.build import build_runs
from tests.conformance import scenario
from tests.conformance.server import ModelServer
from tests.fixtures.recording import recording
from tests.fixtures.records import span_record

TRACE = f"{7:032x}"
ROOT = f"{1:016x}"
FAILED = "a failed model call has no output to serve"


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def _chat(n: int, start: int, inputs: list[dict[str, Any]], answer: str | None) -> SpanRecord:
    """A model span under the agent's: answered with ``answer``, or failed (None)."""
    attrs: dict[str, Any] = {
        A.OPERATION_NAME: "chat",
        A.PROVIDER_NAME: "openai",
        A.REQUEST_MODEL: "gpt-4o-mini",
        A.INPUT_MESSAGES: json.dumps(inputs),
    }
    if answer is not None:
        attrs[A.OUTPUT_MESSAGES] = json.dumps([_text("assistant", answer)])
    span = span_record(TRACE, f"{n + 16:016x}", ROOT, start, "chat gpt-4o-mini", attrs, duration=8)
    if answer is not None:
        return span
    return dataclasses.replace(span, status_code=2, status_message="Error code: 429 - rate limited")


@dataclasses.dataclass
class Drawn:
    spans: list[SpanRecord]
    #: Span ids: the answered calls, each failed attempt -> the call that answered it, and the
    #: failures nothing retried.
    answered: list[str]
    retried: dict[str, str]
    unretried: list[str]


@st.composite
def runs_with_retries(draw: st.DrawFn) -> Drawn:
    """A run of 1-4 turns, each after 0-3 failed attempts of its request; maybe a failure
    no retry follows: the last call, or one before another request."""
    attempts = draw(st.lists(st.integers(0, 3), min_size=1, max_size=4))
    tail = draw(st.sampled_from(["none", "last", "another_request"]))
    spans: list[SpanRecord] = []
    answered: list[str] = []
    retried: dict[str, str] = {}
    unretried: list[str] = []
    history = [_text("user", "Où est ma commande ORD-5521 ?")]
    clock = 100

    def add(inputs: list[dict[str, Any]], answer: str | None) -> SpanRecord:
        nonlocal clock
        span = _chat(len(spans), clock, inputs, answer)
        spans.append(span)
        clock += 20
        return span

    for turn, failures in enumerate(attempts):
        if turn == len(attempts) - 1 and tail == "another_request":
            unretried.append(add(list(history), None).span_id)
            history.append(_text("user", "Réessayez plus simplement."))
        failed = [add(list(history), None).span_id for _ in range(failures)]
        answer = f"réponse {turn}"
        ok = add(list(history), answer).span_id
        answered.append(ok)
        retried.update({f: ok for f in failed})
        history += [_text("assistant", answer), _text("user", f"Et ensuite ? ({turn})")]
    if tail == "last":
        unretried.append(add(list(history), None).span_id)
    root = span_record(
        TRACE, ROOT, None, 0, "invoke_agent support", {A.OPERATION_NAME: "invoke_agent"}
    )
    spans.append(dataclasses.replace(root, end_ns=clock + 10))
    return Drawn(spans, answered, retried, unretried)


@settings(max_examples=100, deadline=None)
@given(drawn=runs_with_retries(), seed=st.randoms(use_true_random=False))
def test_failed_attempts_of_a_retried_call_are_no_model_steps(drawn: Drawn, seed: Any) -> None:
    spans = list(drawn.spans)
    seed.shuffle(spans)  # the order spans arrive in says nothing
    (run,) = build_runs(spans)
    models = [s.span_id for s in run.model_steps()]
    assert sorted(models) == sorted(drawn.answered + drawn.unretried)
    by_id = {s.span_id: s for s in run.steps}
    for attempt, answered in drawn.retried.items():
        step = by_id[attempt]
        assert (step.kind, step.model, step.retried_as) == ("other", None, answered)
        assert step.status == "ERROR", "the attempt keeps its error"
        assert f"a failed attempt, retried as span {answered}" in step_line(step)
        assert run.to_json()["steps"][step.index]["retried_as"] == answered
    assert all(by_id[s].retried_as is None for s in drawn.answered + drawn.unretried)
    said = [p for p in run.kit.problems if FAILED in p]
    assert len(said) == len(drawn.unretried), run.kit.problems


# --- a real agent loop that retries, recorded and replayed ----------------------------------

RETRYABLE = (openai.RateLimitError, openai.InternalServerError)
TOOLS = {name: otel_replay.tool(name=name)(fn) for name, fn in scenario.TOOLS.items()}


def ask(client: openai.OpenAI, question: str, failures: list[str]) -> str:
    """The scenario's agent, retrying a failed model call itself (each attempt traced); the
    failures it retried are appended to ``failures``."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": scenario.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    request = {"model": "gpt-4o-mini", "tools": scenario.openai_tools(), "temperature": 0}
    with otel_replay.agent_run("support", input=question) as run:
        for _ in range(8):
            for _attempt in range(4):
                try:
                    with otel_replay.model_call(
                        provider="openai", messages=messages, **request
                    ) as c:
                        response = client.chat.completions.create(messages=messages, **request)
                        message = response.choices[0].message.model_dump(exclude_none=True)
                        c.record(message, response_id=response.id, response_model=response.model)
                    break
                except RETRYABLE as e:
                    failures.append(type(e).__name__)
            messages.append(message)
            if not message.get("tool_calls"):
                run.record(message["content"])
                return str(message["content"])
            for call in message["tool_calls"]:
                name, args = call["function"]["name"], json.loads(call["function"]["arguments"])
                try:
                    with otel_replay.tool_call_id(call["id"]):
                        result = json.dumps(TOOLS[name](**args), ensure_ascii=False)
                except scenario.TOOL_ERRORS as e:
                    result = f"Error: {e}"
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("the agent did not answer")


def test_an_agent_that_retried_replays_without_failing(tmp_path: Path) -> None:
    # Each status a server answers a retryable failure with, once or twice before a call.
    retries = (scenario.Retry(0, 429), scenario.Retry(1, 500, 2), scenario.Retry(2, 503))
    scn = dataclasses.replace(scenario.DEFAULT, retries=retries)
    question = scn.questions[0]
    path = tmp_path / "run.otlp"
    recorded: list[str] = []
    with ModelServer(tmp_path / "server.jsonl", scn=scn) as server, recording(path):
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        answer = ask(client, question, recorded)
    assert len(recorded) == sum(r.times for r in retries)
    (run,) = otel_replay.load(path)
    assert len(run.model_steps()) == 3
    assert len([s for s in run.steps if s.retried_as]) == len(recorded)
    assert run.kit.verdict == "full", run.kit.problems
    replayed: list[str] = []
    with otel_replay.replay(run) as session:
        client = openai.OpenAI(base_url=f"{session.base_url}/v1", api_key="sk-test", max_retries=0)
        assert ask(client, question, replayed) == answer
    assert replayed == [], "the replay answered each request without failing it first"
    assert session.report().matched, session.report()
