"""A model call whose request is not in the trace: ``serve`` refuses it, naming the step.

The class: a model step recorded with no input messages (a call that failed, whose only
span says so: OpenLLMetry exports no span of its own for a stream cut partway, and the
SDK's metadata span, or OpenLLMetry's span of a Responses stream, names only the model).
The client's request for it goes on from the conversation served so far; the server
took it for a new conversation and answered 409 at that conversation's first step, which
named neither the step nor what is missing.  It now goes to the conversation it continues
and is refused (``not_recorded``), naming the step and that its request is not in the
trace.  Drawn: runs of answered turns then one whose request was not recorded, served
over the wire the run was recorded in; the real traces are every corpus case with such
a step.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from otel_replay.runs.model import ModelCall, Run, Step
from tests.conformance.checks import check, find_cases


@functools.cache
def cases() -> list[Any]:
    """The corpus cases whose runs (content recorded) have a model step without its request
    (read when a test asks, not when the module is collected)."""
    return [
        c
        for c in find_cases()
        if c.meta.get("content")
        and any(
            s.kind == "model" and s.model is not None and s.model.input_messages is None
            for r in otel_replay.load(*c.trace_files())
            if r.kit.verdict != "inspect-only"
            for s in r.steps
        )
    ]


def test_the_corpus_holds_such_cases() -> None:
    assert {c.id for c in cases()} >= {
        "anthropic_openllmetry/anthropic_stream@seed-32",
        "openai_openllmetry/responses_stream@seed-14",
    }


def test_a_recorded_request_for_such_a_step_is_refused_naming_it() -> None:
    """The requests the agent sent, in order (not the attempts its SDK sent again), through
    the engine of the case's runs: the one whose request the trace lacks is refused."""
    for case in cases():
        engine = ReplayEngine(check(case).runs)
        conversation: dict[str, str] = {}
        refusals = []
        for r in case.posts():
            if r.get("cut") == "before":
                continue
            path = r["path"].split("?", 1)[0]
            headers = {"content-type": "application/json", **conversation}
            answer = engine.handle("POST", path, r["body_raw"].encode(), headers)
            if answer.status != 200:
                refusals.append((answer.status, json.loads(b"".join(answer.chunks))["error"]))
                break
            conversation = {CONVERSATION_HEADER: dict(answer.headers)[CONVERSATION_HEADER]}
        ((status, error),) = refusals
        assert status == 500 and error["type"] == "not_recorded", (case.id, error)
        assert "not in the trace" in error["message"], (case.id, error)
        assert "cannot be checked against it" in error["message"], (case.id, error)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "parts": [{"type": "text", "content": text}]}


def _run(answers: list[tuple[str, bool]]) -> Run:
    """A conversation of ``answers`` (each followed by the tool's result, or by a user
    turn), then a call that failed with no request recorded."""
    root = Step("agent", "invoke_agent a", "root", None, "t", 0, 10**6)
    steps = [root]
    sent: list[dict[str, Any]] = [_user("q")]
    for k, (text, call) in enumerate(answers):
        parts: list[dict[str, Any]] = [{"type": "text", "content": text}]
        if call:
            parts.append({"type": "tool_call", "id": f"c{k}", "name": "f", "arguments": {"k": k}})
        reply = {"role": "assistant", "parts": parts}
        model = ModelCall(
            provider="openai",
            request_model="m",
            input_messages=list(sent),
            output_messages=[reply],
            finish_reasons=["tool_call" if call else "stop"],
        )
        steps.append(
            Step("model", "chat m", f"s{k:015x}", "root", "t", k * 100, k * 100 + 1, model=model)
        )
        result = {"type": "tool_call_response", "id": f"c{k}", "response": f"r{k}"}
        sent += [reply, {"role": "tool", "parts": [result]} if call else _user(f"more {k}")]
    cut = ModelCall(provider="openai", request_model="m")
    n = len(answers) * 100
    steps.append(
        Step("model", "chat m", "c" * 16, "root", "t", n, n + 1, model=cut, status="ERROR")
    )
    root.children = steps[1:]
    for index, s in enumerate(steps):
        s.index = index
    return Run("t", ["t"], [root], steps)


# The answers drawn include blank texts (whitespace only, or empty beside a tool call),
# sent back as served or with the blank text dropped (clients differ): a blank text says
# nothing, so the conversation's transcript (what ``serve`` weighs such a request by,
# ``Router._closest``) has no key for it, and the request must still go to the
# conversation it continues, not be taken for a new one and answered 409 at its first step.
_blank = st.sampled_from(["", " ", "\n", " \t\n ", "\u00a0", "\u3000"])
_text = st.one_of(_blank, st.text("abcé", min_size=1, max_size=6))
#: An answer: its text, and whether a tool call stands beside it (an empty text alone is
#: an answer the recording lost, refused as such: not drawn).
_answer = st.tuples(_text, st.booleans()).filter(lambda a: bool(a[0] or a[1]))


@settings(max_examples=150, deadline=None)
@given(answers=st.lists(_answer, min_size=1, max_size=3), dropped=st.booleans())
def test_a_request_going_on_from_the_conversation_is_refused_at_that_step(
    answers: list[tuple[str, bool]], dropped: bool
) -> None:
    engine = ReplayEngine([_run(answers)])
    messages: list[dict[str, Any]] = [{"role": "user", "content": "q"}]
    headers = {"content-type": "application/json"}
    for k, (text, call) in enumerate(answers):
        body = json.dumps({"model": "m", "messages": messages}).encode()
        answer = engine.handle("POST", "/v1/chat/completions", body, headers)
        assert answer.status == 200, b"".join(answer.chunks)
        sent: dict[str, Any] = {"role": "assistant", "content": text}
        if dropped and not text.strip():
            sent["content"] = None  # as a client that drops a blank text sends it back
        if call:
            function = {"name": "f", "arguments": json.dumps({"k": k})}
            sent["tool_calls"] = [{"id": f"c{k}", "type": "function", "function": function}]
        following = (
            {"role": "tool", "tool_call_id": f"c{k}", "content": f"r{k}"}
            if call
            else {"role": "user", "content": f"more {k}"}
        )
        messages += [sent, following]
    # No conversation header: routed by what the request goes on from.
    body = json.dumps({"model": "m", "messages": messages}).encode()
    answer = engine.handle("POST", "/v1/chat/completions", body, headers)
    error = json.loads(b"".join(answer.chunks))["error"]
    assert answer.status == 500 and error["type"] == "not_recorded", error
    assert f"step {len(answers) + 1}" in error["message"]
    assert "its request is not in the trace" in error["message"]
