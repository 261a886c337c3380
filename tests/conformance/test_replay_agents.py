"""The stack's own agent, unchanged and untraced, replays each case from its trace.

Each way of :mod:`tests.conformance.replay_agents`: through ``otel-replay serve``
(the agent's model base URL pointed at it), in-process inside
``otel_replay.replay(...)`` with its framework's tools stubbed (none may run
for real), and in-process with one recorded tool result changed (the replay
must diverge, naming the step).  Each runs the agent in the stack's own
environment, made when missing.

- Slow tier: each stack's first case with content and one run, every way.
- ``pytest -m replay_agents``: every case with content, serve and in-process
  (about an hour).
- Default tier: the result each case keeps in ``replay.json`` (what the
  README's tables show) says it replayed.

Cases whose trace does not hold their model calls cannot be replayed; they
are marked ``xfail(strict=True)`` with the reason, as in the conformance test,
and so are the replays that fail today (:data:`REPLAY_GAPS`, one line each).
"""

from __future__ import annotations

import pytest

from tests.conformance.checks import Case, find_cases
from tests.conformance.generate import is_node
from tests.conformance.replay_agents import HOWS, hows_of, sample_cases, stack_python
from tests.conformance.scenario import scenario_named
from tests.conformance.table import refused
from tests.conformance.test_conformance import NOT_RECORDED

#: Content cases whose trace lacks the model calls' real input (or any model call).
UNREPLAYABLE = (
    "openai_agents_otel/responses",
    "openai_agents_otel/responses_stream",
    "semantic_kernel/responses",
    "semantic_kernel/responses_stream",
    # the cut request is not in the trace: the replay stops before it
    "anthropic_openllmetry/anthropic_stream@seed-31",
    "anthropic_openllmetry/anthropic_stream@seed-32",
    "openai_openllmetry/responses_stream@seed-14",
    # runs their framework ended its own way, on what the trace lacks: the answer's calls
    # (the OTel bridge's span holds its text alone), the text beside calls
    "openai_agents_otel/sync@seed-1",
    "semantic_kernel/async_stream@seed-1",
)

_LITELLM_ERROR_TEXT = (
    "LiteLLM's loop sends a raising tool's error as 'Error: <message>', which is no JSON: the "
    "client-only trace holds only that text, not the exception, so the stub refuses, naming "
    "the step (results_from_messages='json' answers the other calls)"
)
#: The LiteLLM loop's cases in which a tool raised (its scenario has a raising tool).
_LITELLM_RAISING = [
    c.id
    for c in find_cases()
    if c.meta["stack"] in ("litellm_openinference", "litellm_otel")
    and c.meta["content"]
    and int(c.meta["runs"]) == 1
    and scenario_named(str(c.meta.get("scenario", "default"))).raising is not None
    # (a run LiteLLM ended at a failed request it did not retry may not reach its tools)
    and c.tool_runs() > 0
]

_CUT_UNRECORDED = (
    "a stream cut partway, of which the trace holds nothing of what streamed before the cut: "
    "the replay refuses the step rather than fail it with no events"
)
#: The cases whose run ended at a stream cut partway that the trace holds nothing of
#: (a JavaScript agent replays through serve alone).
_CUT_UNRECORDED_CASES = [
    (c.id, is_node(c.meta["stack"]))
    for c in find_cases()
    if c.raised and "holds nothing of what streamed" in NOT_RECORDED.get(c.id, "")
]

_LOST_RESULT = (
    "a tool's result the exporter dropped (an int past 64 bits): the stub has nothing to "
    "return, and the replay refuses the step, naming it"
)

#: (case id, how) -> why the replay refuses, by design, naming the step: the trace does not
#: hold what the stack's agent needs.  The test checks that it refuses, and says so.
REPLAY_REFUSED: dict[tuple[str, str], str] = {
    **{(case, "inprocess"): _LITELLM_ERROR_TEXT for case in _LITELLM_RAISING},
    **{
        (case, how): _CUT_UNRECORDED
        for case, node in _CUT_UNRECORDED_CASES
        for how in (("serve",) if node else ("serve", "inprocess"))
    },
    # A tool's result the tool span lost (an int past 64 bits): its stub has nothing to
    # return, so the replay refuses its step (serve needs no tool result: the tool runs).
    **{
        (f"openai_agents_openinference/{mode}@seed-347713782", "inprocess"): _LOST_RESULT
        for mode in ("sync", "responses")
    },
    # The log records the exporter lost (an int past 64 bits) held every tool's result and
    # each request after the first: serve refuses the second request, in process refuses
    # before the agent runs.
    **{
        ("google_adk/sync@seed-1470744703", how): (
            "the requests and results the exporter lost (an int past 64 bits in ADK 2.x's "
            "log records): the replay refuses, naming each"
        )
        for how in ("serve", "inprocess")
    },
}

#: (case id, how) -> why the stack's own agent does not replay it today, one line.
REPLAY_GAPS: dict[tuple[str, str], str] = {
    # What the trace does not hold: the tool's result the model was sent (the stub in process
    # returns what the trace says, so the agent goes on; serve matches the request as sent).
    ("google_adk/sync@seed-471155946", "serve"): NOT_RECORDED["google_adk/sync@seed-471155946"],
}

CASES = [c for c in find_cases() if c.meta["content"]]
SAMPLE = sample_cases(CASES)


def _param(case: Case, how: str, *marks: pytest.MarkDecorator) -> object:
    if case.id in UNREPLAYABLE and how != "changed":
        marks = (*marks, pytest.mark.xfail(strict=True, reason=NOT_RECORDED[case.id]))
    elif (case.id, how) in REPLAY_GAPS:
        marks = (*marks, pytest.mark.xfail(strict=True, reason=REPLAY_GAPS[case.id, how]))
    return pytest.param(case, how, id=f"{case.id}-{how}", marks=marks)


def _params() -> list[object]:
    params = []
    for case in CASES:
        for how in hows_of(case, SAMPLE):
            mark = pytest.mark.slow if case in SAMPLE else pytest.mark.replay_agents
            # A stack's cases on one worker: a JavaScript agent reads its scenario from the
            # one home of its stack.
            params.append(_param(case, how, mark, pytest.mark.xdist_group(case.meta["stack"])))
    return params


@pytest.mark.parametrize(("case", "how"), _params())
def test_the_agent_replays_the_case(case: Case, how: str) -> None:
    result = HOWS[how](case, stack_python(case.meta["stack"]))
    stored = case.replayed().get(how)
    if (case.id, how) in REPLAY_REFUSED:
        assert result.ok is False and refused(result.detail), result.detail
        assert stored is not None and stored["ok"] is False and refused(stored["detail"])
        return
    assert result.ok is not False, result.detail
    assert stored is not None and stored["ok"] == result.ok, (
        f"replay.json says {stored}; run python -m tests.conformance.replay_agents --write"
    )


def test_every_replay_gap_names_a_case() -> None:
    ids = {(c.id, how) for c in CASES for how in hows_of(c, SAMPLE)}
    assert not set(REPLAY_GAPS) - ids, "REPLAY_GAPS lists replays of cases that do not exist"
    assert not set(REPLAY_REFUSED) - ids, "REPLAY_REFUSED lists replays of cases that do not exist"


@pytest.mark.parametrize(
    ("case", "how"), [_param(c, how) for c in CASES for how in hows_of(c, SAMPLE)]
)
def test_the_stored_result_says_it_replayed(case: Case, how: str) -> None:
    stored = case.replayed().get(how)
    assert stored is not None, f"{case.id} was not replayed {how}: run replay_agents --write"
    if (case.id, how) in REPLAY_REFUSED:  # refused by design, naming what the trace lacks
        assert stored["ok"] is False and refused(stored["detail"]), stored["detail"]
        return
    assert stored["ok"] is not False, stored["detail"]
