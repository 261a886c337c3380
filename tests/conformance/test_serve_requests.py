"""Replay matching: each case's recorded requests are served back from its own trace.

The exact bodies each agent sent the model server are sent again, in order,
to the replay engine built from the case's trace (the default ``messages``
rung): every one is answered, except where the trace does not hold the
model calls (:data:`~tests.conformance.test_conformance.NOT_RECORDED`), and
each answer's tool calls are the server's as they went on the wire (ids,
names, argument texts), or the answer says it re-spelled them.
And a request changed where it matters (the question, a tool result, the
system prompt) is refused.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import pytest

import otel_replay
from otel_replay import messages as M
from otel_replay.replay.engine import ReplayEngine
from otel_replay.replay.matchers import request_keys, split_system
from otel_replay.same_message import conversation_keys
from tests.conformance.checks import CASES, Case, check, find_cases
from tests.conformance.serve_requests import failed_end, serve_case, spelling_problems
from tests.conformance.test_conformance import KNOWN_GAPS, NOT_RECORDED

#: Cases whose trace holds no model input to match, or no model call at all.
UNSERVABLE = ("openai_agents_otel/responses", "openai_agents_otel/responses_stream")
UNSERVABLE += ("semantic_kernel/responses", "semantic_kernel/responses_stream")
UNSERVABLE += ("openai_openllmetry/responses_stream@seed-14",)  # the cut request, and ids
UNSERVABLE += ("litellm_openinference/responses@seed-94278",)  # the ids
UNSERVABLE += ("openai_agents_otel/sync@seed-1",)  # the calls of the answer the SDK raised on
UNSERVABLE += ("google_adk/sync@seed-1470744703",)  # the log records of the requests lost


#: Cases whose trace rebuilds a model input other than the one sent (a known gap, or what the
#: trace does not hold), so that the request as sent is refused.
MISMATCHED: tuple[str, ...] = ("google_adk/sync@seed-471155946",)
#: Cases whose trace records an answer cut partway, which the agent went on from, as a whole
#: answer (nothing says it was cut), so that it is served whole.
MISMATCHED += ("google_adk_v1/stream@seed-1307948360",)


def _param(case: Case) -> object:
    if case.id in MISMATCHED:
        reason = KNOWN_GAPS.get(case.id) or NOT_RECORDED[case.id]
        return pytest.param(case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=reason)])
    if case.id not in UNSERVABLE:
        return pytest.param(case, id=case.id)
    return pytest.param(
        case, id=case.id, marks=[pytest.mark.xfail(strict=True, reason=NOT_RECORDED[case.id])]
    )


@pytest.mark.parametrize("case", [_param(c) for c in find_cases() if c.meta["content"]])
def test_every_recorded_request_is_served_as_the_wire_spelled_it_or_says_not(case: Case) -> None:
    """Every request answered; each answer's calls as the server sent them, or the answer
    names the calls it re-spelled (the trace holds their arguments as values, or as a text
    the instrumentation may have dumped itself)."""
    problems = spelling_problems(case)
    assert not problems, "\n".join(problems)


def _is_result(item: Any) -> bool:
    """A tool result as some wire carries it: an OpenAI tool message, a Responses
    ``function_call_output`` item, an Anthropic ``tool_result`` block, a Converse
    ``toolResult`` block, a Gemini ``functionResponse`` part."""
    if not isinstance(item, Mapping):
        return False
    if item.get("role") == "tool" or item.get("type") in ("function_call_output", "tool_result"):
        return True
    return any(k in item for k in ("toolResult", "functionResponse", "function_response"))


def _results_reversed(value: Any) -> tuple[Any, int]:
    """``value`` with every run of two or more consecutive tool results in reverse order,
    wherever in the body a list holds them, and how many runs were reversed."""
    if isinstance(value, Mapping):
        out, count = {}, 0
        for key, item in value.items():
            out[key], n = _results_reversed(item)
            count += n
        return out, count
    if not isinstance(value, list):
        return value, 0
    items, count = [], 0
    for item in value:
        item, n = _results_reversed(item)
        items.append(item)
        count += n
    i = 0
    while i < len(items):
        j = i
        while j < len(items) and _is_result(items[j]):
            j += 1
        if j - i > 1 and len({json.dumps(x, sort_keys=True) for x in items[i:j]}) > 1:
            items[i:j] = items[i:j][::-1]
            count += 1
        i = max(j, i + 1)
    return items, count


def _reversing(counted: list[int]) -> Any:
    def sent(body: bytes) -> bytes:
        changed, n = _results_reversed(json.loads(body))
        counted.append(n)
        return json.dumps(changed, ensure_ascii=False).encode() if n else body

    return sent


def _with_parallel_results(case: Case) -> bool:
    return any(_results_reversed(r["body_json"])[1] for r in case.requests())


@pytest.mark.parametrize(
    "case",
    [
        _param(c)
        for c in find_cases()
        if c.meta["content"] and c.id not in UNSERVABLE and _with_parallel_results(c)
    ],
)
def test_results_of_one_turn_sent_in_another_order_are_served(case: Case) -> None:
    """An agent that runs a turn's tools at once sends their results as they finish: the
    same request with those results in another order is the same conversation, served
    from the recording, whatever wire carries it (it was a race in the agent's code)."""
    counted: list[int] = []
    refused = serve_case(case, _reversing(counted))
    assert refused is None, refused
    assert sum(counted) > 0


def _changed(body: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    text = json.dumps(body, ensure_ascii=False)
    assert old in text
    changed: dict[str, Any] = json.loads(text.replace(old, new))
    return changed


def _second_status(case: Case, body: dict[str, Any]) -> int:
    """The status a fresh engine on ``case`` answers ``body`` with, after the first request."""
    (run,) = otel_replay.load(*case.trace_files())
    engine = ReplayEngine([run])
    first = case.requests()[0]
    path = "/v1/chat/completions"
    assert engine.handle("POST", path, first["body_raw"].encode(), {}).status == 200
    return engine.handle("POST", path, json.dumps(body, ensure_ascii=False).encode(), {}).status


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("ORD-5521 ?", "ORD-5522 ?"),  # the question
        ("en préparation", "expédiée"),  # a tool result
        ("Ködbüro", "Kodburo"),  # the system prompt
    ],
    ids=["question", "tool_result", "system_prompt"],
)
@pytest.mark.parametrize("stack", ["langgraph_openinference", "strands", "crewai"])
def test_a_request_changed_where_it_matters_is_refused(stack: str, old: str, new: str) -> None:
    case = Case(CASES / stack / "sync")
    second = case.requests()[1]["body_json"]
    assert _second_status(case, second) == 200
    assert _second_status(case, _changed(second, old, new)) == 409


def test_request_keys_are_the_keys_of_each_rung() -> None:
    """Keyed once, a request's keys are those each rung defines, on every recorded input."""
    seen = 0
    for case in find_cases():
        for run in check(case).runs:
            for step in run.model_steps():
                inputs = step.model.input_messages if step.model else None
                if not inputs:
                    continue
                every = conversation_keys(M.normalize(inputs), hidden=True)
                rest = split_system(M.normalize(inputs))[1]
                assert request_keys(inputs) == (
                    json.dumps(conversation_keys(rest, hidden=True)),
                    every[-1] if every else None,
                ), (case.id, step.span_id)
                seen += 1
    assert seen > 500


def _ended_on_a_status(case: Case) -> bool:
    return any(failed_end(case, order) for order in case.conversations())


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.id) for c in find_cases() if c.meta["content"] and _ended_on_a_status(c)],
)
def test_a_call_that_failed_on_an_error_status_fails_again_on_it(case: Case) -> None:
    """A run's last request, which the server failed on an error status (a 503 LiteLLM's
    Responses route does not retry) and which ended the run: served after the run's other
    requests, it fails again on that status, with the body the server sent where the trace
    quotes it, so that the client raises the error it raised."""
    seen: list[tuple[dict[str, Any], httpx.Response]] = []
    assert serve_case(case, ended=lambda r, answer: seen.append((r, answer))) is None
    assert seen
    for r, answer in seen:
        assert answer.status_code == r["status"], answer.text
        assert answer.json() == json.loads(r["response_raw"])


def test_every_way_a_failed_call_names_its_status_is_read() -> None:
    """The corpus holds calls that ended on an error status, each in a stack that says it
    its own way (a span attribute, httpx's error in the recorded stack trace)."""
    stacks = {c.meta["stack"] for c in find_cases() if c.meta["content"] and _ended_on_a_status(c)}
    assert {"litellm_otel", "litellm_openinference"} <= stacks
