"""What a replay needs that a run lacks: every path refuses at that step, naming it alike.

The class: a run whose verdict names a part of a step as not recorded
(``steps[i].result``, ``steps[i].arguments``, ``steps[i].output_messages``,
``steps[i].input_messages``): an exporter dropped a tool output it could not encode
(``openai_agents_openinference/sync@seed-347713782``), a span was cut, a backend
kept no body.  :func:`~otel_replay.replay.servable.lacking` lists each such step in
the words a replay refuses it with: ``serve`` (whose engine and pinned model refuse a
model step), in process (the pinned model, the tool stubs), and so ``regress`` and
the pytest plugin, which replay in a session.  In process, a framework that catches a
stub's refusal (the Agents SDK sends a tool's error to the model) went on and the
replay ended "diverged, ended early"; the session now ends with the refusal.

A replay that will certainly need what the trace lacks (:func:`~otel_replay.replay.
servable.needed`) is refused before the agent runs, every item named at once, and its
report says REFUSED, not DIVERGED; what live tools and overrides supply is not needed.

Drawn: real runs of the conformance corpus (one full, replayable run per stack that
has tools), steps, and parts of them removed; the recording replayed against itself
(by an agent that makes the recording's own requests and calls through the session).
"""

from __future__ import annotations

import contextlib
import copy
import functools
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.capture.hooks import ToolInvocation
from otel_replay.payload import codec as payload
from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.divergence import ReplayDivergence, ReplayError, ReplayRefused
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from otel_replay.replay.pinned_model import PinnedModel
from otel_replay.replay.recorder import REFUSAL_EVENT, REFUSAL_STEP, REFUSED, REPLAY_OF
from otel_replay.replay.servable import lacking, servable
from otel_replay.replay.session import ReplaySession
from otel_replay.replay.tool_stubs import ToolStubs
from otel_replay.runs.kit import check_kit
from otel_replay.runs.model import Run, Step
from otel_replay.runs.verdict import outcome
from tests.conformance.checks import Case, check, find_cases
from tests.fixtures.data import TESTS

LOST_OUTPUT = (
    TESTS / "conformance" / "cases" / "openai_agents_openinference" / "sync@seed-347713782"
)

#: A part of a step a trace may lack, and the field the verdict names it by.
PARTS = {
    "tool result": ("tool", "result"),
    "tool arguments": ("tool", "arguments"),
    "model output": ("model", "output_messages"),
    "model input": ("model", "input_messages"),
}
#: What a replay refuses a step for when it lacks each part.
KINDS = {
    "tool result": "no_result",
    "tool arguments": "no_arguments",
    "model output": "unanswered",
    "model input": "no_input",
}
#: The parts that are a step's answer: what a live tool or an override supplies.
ANSWERS = ("tool result", "model output")


def _candidate(case: Case) -> bool:
    """What :func:`_plain` asks of ``case`` that its files say without loading its trace:
    one run, full content, tool spans recorded, no run raised, replayed ok both ways."""
    meta, stored = case.meta, case.replayed()
    if not meta["content"] or int(meta["runs"]) != 1 or case.raised:
        return False
    if not meta.get("tool_spans", True):  # tool steps derived from model messages
        return False
    return all(stored.get(how, {}).get("ok") is True for how in ("serve", "inprocess"))


def _plain(case: Case) -> bool:
    """A case with one run, full, replayable, ok, with tool and model steps, each replayed
    by the stack's agent both ways: the recording replays against itself."""
    if not _candidate(case):
        return False
    (run,) = check(case).runs
    kinds = {s.kind for s in run.steps}
    return (
        run.kit.verdict == "full"
        and run.kit.replayable
        and outcome(run).ok
        and {"tool", "model"} <= kinds
        and not any(s.tool is not None and s.tool.derived for s in run.steps)
    )


@functools.cache
def _stacks() -> list[str]:
    """The stacks with a case that may be plain, told from their files alone: the tests are
    drawn per stack when collected, and each trace is loaded only where a test runs."""
    return sorted({case.meta["stack"] for case in find_cases() if _candidate(case)})


@functools.cache
def _case(stack: str) -> Case:
    """The first plain case of ``stack``."""
    for case in find_cases():
        if case.meta["stack"] == stack and _plain(case):
            return case
    raise AssertionError(f"{stack} records no plain run (one whole run with tools)")


def _cases() -> list[Case]:
    """The first plain case of each stack."""
    return [_case(stack) for stack in _stacks()]


def _run(case: Case) -> Run:
    (run,) = check(case).runs
    return run


def _without(run: Run, index: int, part: str) -> Run:
    """A copy of ``run`` whose step ``index`` lacks ``part``, its verdict checked again."""
    cut = copy.deepcopy(run)
    cut._kit = None
    step = cut.steps[index]
    if step.tool is not None:
        if part == "tool result":
            step.tool.result, step.tool.result_payload = None, None
        else:
            step.tool.arguments, step.tool.arguments_payload = None, None
    elif step.model is not None:
        if part == "model output":
            step.model.output_messages, step.model.output_payload = None, None
            step.model.raw = None
        else:
            step.model.input_messages, step.model.input_payload = None, None
            step.model.raw = None
    return cut


def _returned(run: Run) -> list[Step]:
    """The tool steps that returned at their first try (no failed attempt before them)."""
    tried = {s.retried_as for s in run.steps if s.retried_as is not None}
    return [
        s
        for s in run.steps
        if s.tool is not None and s.tool.error is None and s.span_id not in tried
    ]


def _parts(run: Run) -> list[tuple[int, str]]:
    """Each (step index, part) a draw may remove: of a tool step that returned at its first
    try, or of a model step."""
    tools = [(s.index, p) for s in _returned(run) for p in ("tool result", "tool arguments")]
    models = [(s.index, p) for s in run.model_steps() for p in ("model output", "model input")]
    return tools + models


def _without_all(run: Run, removed: list[tuple[int, str]]) -> Run:
    for index, part in removed:
        run = _without(run, index, part)
    return run


def _called(step: Step) -> bool:
    """A tool step, or a failed attempt of one (each attempt is a call the agent made)."""
    return step.kind == "tool" or bool(step.duplicate_of or step.retried_as)


class _Agent:
    """The recording's own requests and calls, made through ``session``'s model and tool
    stubs as a stack's agent makes them; a call the replay runs live returns what the
    recorded tool returned.  ``entered``: the agent was called."""

    def __init__(self, recorded: Run, session: ReplaySession) -> None:
        self.recorded, self.session, self.entered = recorded, session, False

    def __call__(self) -> None:
        self.entered = True
        model, tools = self.session.model, self.session.tools
        for step in self.recorded.steps:
            if step.kind == "model" and step.model is not None:
                model.respond(
                    step.model.input_messages or [], system=step.model.system_instructions
                )
            elif step.tool is not None and not step.tool.not_run and _called(step):
                done = tools.resolve(_invocation(step))
                value = step.tool.result if done.action == "live" else done.value
                tools.complete(done, value, done.error if done.action == "raise" else None)


def _invocation(step: Step) -> ToolInvocation:
    t = step.tool
    assert t is not None
    return ToolInvocation(t.tool_name, t.call_id, t.arguments, payload.encode(t.arguments))


def _in_process(recorded: Run, run: Run) -> tuple[Step | None, ReplayError | None]:
    """Replay ``run`` with the recording's own requests and calls, in process, until one is
    refused: (that step of the recording, the refusal), or (None, None)."""
    model, tools = PinnedModel(run), ToolStubs(run)
    for step in recorded.steps:
        try:
            if step.kind == "model" and step.model is not None:
                m = step.model
                model.respond(m.input_messages or [], system=m.system_instructions)
            elif step.kind == "tool" and step.tool is not None and step.tool.error is None:
                tools.resolve(_invocation(step))
        except ReplayError as err:
            return step, err
    return None, None


def _served(case: Case, run: Run) -> tuple[int, httpx.Response | None]:
    """Send the case's recorded requests to a server of ``run``: how many were answered,
    and the first answer that was not (None: all were)."""
    engine = ReplayEngine([run])
    headers = {"content-type": "application/json"}
    answered = 0
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for requests in case.conversations().values():
            for r in requests:
                got = http.post(r["path"], content=str(r["body_raw"]).encode(), headers=headers)
                if got.status_code != 200:
                    return answered, got
                answered += 1
                headers[CONVERSATION_HEADER] = got.headers[CONVERSATION_HEADER]
    return answered, None


def _said(run: Run, step: Step) -> list[str]:
    """What :func:`lacking` says of ``step``, without the run it names."""
    head = f"run {run.run_id} "
    return [p.message.removeprefix(head) for p in lacking(run) if step.label() in p.message]


def test_the_corpus_holds_a_plain_run_of_several_stacks() -> None:
    stacks = {c.meta["stack"] for c in _cases()}
    assert len(stacks) >= 5, stacks


@pytest.mark.parametrize("stack", _stacks())
def test_a_whole_recording_replays_against_itself(stack: str) -> None:
    case = _case(stack)
    run = _run(case)
    assert lacking(run) == []
    assert _in_process(run, run) == (None, None)
    assert _served(case, run) == (len(run.model_steps()), None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_part_the_trace_lacks_is_refused_alike_where_a_replay_needs_it(data: Any) -> None:
    case = data.draw(st.sampled_from(_cases()), label="case")
    recorded = _run(case)
    part = data.draw(st.sampled_from(sorted(PARTS)), label="part")
    kind, field = PARTS[part]
    steps = [s for s in recorded.steps if s.kind == kind and s.model is not None]
    steps = _returned(recorded) if kind == "tool" else steps
    step = data.draw(st.sampled_from(steps), label="step")
    run = _without(recorded, step.index, part)

    # The verdict names it, and so does the list of what a replay lacks.
    assert f"steps[{step.index}].{field}" in check_kit(run).missing
    said = _said(run, step)
    assert said, lacking(run)

    # In process: the pinned model or the stub refuses that very step, in those words.
    at, err = _in_process(recorded, run)
    assert at is not None and at.index == step.index, (at, err)
    assert not isinstance(err, ReplayDivergence) and str(err) in said, (str(err), said)

    # serve: a model step is refused, in those words; a tool's part is not what it needs.
    answered, refused = _served(case, run)
    if kind == "model":
        assert refused is not None and refused.status_code == 500, refused
        error = refused.json()["error"]
        assert error["type"] == "not_recorded" and error["message"] in said
        assert answered == recorded.model_steps().index(step)
        assert any(p.message.endswith(error["message"]) for p in servable(run))
    else:
        assert refused is None and answered == len(recorded.model_steps())
        assert not any(step.label() in p.message for p in servable(run))


@pytest.mark.parametrize("part", ["tool result", "tool arguments"])
@pytest.mark.parametrize("stack", _stacks())
def test_a_session_ends_with_the_refusal_the_agent_caught(stack: str, part: str) -> None:
    """The agent catches the stub's refusal and goes on (as the Agents SDK does): the
    session still ends with it, not with how the replay went after it.  (A replay that
    need not run to its end: nothing is certain to be needed, so the refusal is the
    step's, the safety net behind the refusal before the agent runs.)"""
    recorded = _run(_case(stack))
    step = _returned(recorded)[0]
    run = _without(recorded, step.index, part)
    session = ReplaySession(run, allow_network=True, freeze_clock=False, require_complete=False)
    with pytest.raises(ReplayRefused) as ended, session, contextlib.suppress(ReplayError):
        session.tools.resolve(_invocation(step))  # refused, and the agent goes on
    assert not ended.value.before
    assert str(ended.value) in _said(run, step)
    report = session.report()
    assert report.verdict == "refused" and not report.matched, str(report)
    assert str(report).splitlines()[0].startswith(f"replay of run {run.run_id}: REFUSED")
    assert [i["index"] for i in report.to_json()["refused"]] == [step.index]
    # Written, the replay's root says refused (not diverged), the step in its event.
    if any(s.kind == "agent" for s in run.steps):
        root = next(s for s in session.log.spans() if REPLAY_OF in (s.attributes or {}))
        assert (root.attributes or {})["error.type"] == REFUSED
        events = [e for e in root.events if e.name == REFUSAL_EVENT]
        assert [(e.attributes or {})[REFUSAL_STEP] for e in events] == [step.index]


def test_the_real_lost_output_is_refused_at_its_step() -> None:
    run = _run(Case(LOST_OUTPUT))
    (step,) = [s for s in run.steps if s.tool is not None and s.tool.result_payload is None]
    assert f"steps[{step.index}].result" in run.kit.missing
    assert _said(run, step) == [f"{step.label()}: no result was recorded for this tool call"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_a_replay_will_need_and_the_trace_lacks_is_refused_before_the_agent_runs(
    data: Any,
) -> None:
    case = data.draw(st.sampled_from(_cases()), label="case")
    recorded = _run(case)
    removed = data.draw(
        st.lists(st.sampled_from(_parts(recorded)), min_size=1, max_size=4, unique=True),
        label="removed",
    )
    run = _without_all(recorded, removed)
    session = ReplaySession(run, allow_network=True, freeze_clock=False)
    agent = _Agent(recorded, session)
    with pytest.raises(ReplayRefused) as refused, session:
        agent()

    # Before the agent's first call, every removed part named at once, in lacking's words
    # (a run left with no content at all is refused as such, naming every field missing).
    assert not agent.entered and refused.value.before
    items = refused.value.items
    if run.kit.verdict == "inspect-only":
        (item,) = items
        assert item.kind == "inspect_only" and item.index is None, items
        for index, part in removed:
            assert f"steps[{index}].{PARTS[part][1]}" in item.what, (part, item.what)
    else:
        assert {(i.index, i.kind) for i in items} == {(i, KINDS[p]) for i, p in removed}, items
    for item in items:
        said = _said(run, run.steps[item.index]) if item.index is not None else []
        assert item.index is None or item.what in said, (item, said)
    # The report says REFUSED (not DIVERGED), each item with it; nothing was replayed.
    report = session.report()
    assert report.verdict == "refused" and not report.matched and report.replayed == []
    text = str(report)
    assert text.startswith(f"replay of run {run.run_id}: REFUSED — ") and "DIVERGED" not in text
    assert all(f"refused: {i.what}" in text for i in items), text
    doc = report.to_json()
    assert doc["verdict"] == "refused" and doc["refused_before_run"] is True
    assert [(d["index"], d["kind"]) for d in doc["refused"]] == [(i.index, i.kind) for i in items]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_what_live_tools_or_overrides_supply_is_not_needed(data: Any) -> None:
    case = data.draw(st.sampled_from(_cases()), label="case")
    recorded = _run(case)
    answers = [(i, p) for i, p in _parts(recorded) if p in ANSWERS]
    removed = data.draw(
        st.lists(st.sampled_from(answers), min_size=1, max_size=3, unique=True), label="removed"
    )
    run = _without_all(recorded, removed)
    override: dict[int, Any] = {}
    live_tools: list[str] = []
    policies: dict[str, Any] = {}
    for index, _ in removed:
        step = recorded.steps[index]
        if step.model is not None:
            assert step.model.output_messages
            override[index] = step.model.output_messages[0]
            continue
        assert step.tool is not None
        how = data.draw(st.sampled_from(["live_tools", "policy", "override"]), label="how")
        if how == "override":
            override[index] = step.tool.result
        elif how == "live_tools":
            live_tools.append(step.tool.tool_name)
        else:
            policies[step.tool.tool_name] = "live"
    session = ReplaySession(
        run,
        allow_network=True,
        freeze_clock=False,
        override=override,
        live_tools=tuple(live_tools),
        tools={**policies, "*": "stub"},
    )
    agent = _Agent(recorded, session)
    with session:
        agent()
    report = session.report()
    assert agent.entered and report.verdict == "matched", str(report)
    replayed = {index for index, _, _ in report.replayed}
    assert {index for index, _ in removed} <= replayed, str(report)


#: The stacks whose traces mark a call failed from the value its tool returned, not from
#: an error raised out of it (ADK 2.x: the value an ``on_tool_error_callback`` returned).
_FAILURES_RETURNED_BY = ("google_adk",)
#: A real trace that lacks such a value: ADK 2.x keeps it in a log record, and the
#: exporter lost the records of a run whose other tool returned an int beyond 64 bits.
LOST_RETURNED_FAILURE = TESTS / "conformance" / "cases" / "google_adk" / "sync@seed-1470744703"


@functools.cache
def _failures_returned() -> list[tuple[Case, int, int]]:
    """(case, run, step) of each tool step of the corpus whose failure the stack read off
    the value the tool returned, that value recorded."""
    found = []
    for case in find_cases():
        if case.meta["stack"] not in _FAILURES_RETURNED_BY or not case.meta["content"]:
            continue
        for r, run in enumerate(check(case).runs):
            for s in run.steps:
                t = s.tool
                returned = t is not None and t.error is not None and t.error.returned
                if returned and t is not None and t.result_payload is not None:
                    found.append((case, r, s.index))
    return found


def _resolved(run: Run, step: Step) -> Any:
    """How a stub of ``run`` answers ``step``, the recording's tool calls made before it."""
    tools = ToolStubs(run)
    for s in run.steps:
        if s.tool is not None and not s.tool.not_run and _called(s):
            done = tools.resolve(_invocation(s))
            if s.index == step.index:
                return done
    raise AssertionError(f"{step.label()} is not a call")


def test_the_corpus_holds_failures_read_off_a_returned_value() -> None:
    assert len(_failures_returned()) >= 10, _failures_returned()


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_failure_read_off_a_returned_value_needs_that_value(data: Any) -> None:
    """The framework went on with the value the tool returned: a replay answers with it
    and, where the trace lacks it, refuses (not raising an error the tool never raised)."""
    case, r, index = data.draw(st.sampled_from(_failures_returned()), label="step")
    recorded = check(case).runs[r]
    step = recorded.steps[index]
    assert step.tool is not None and step.tool.error is not None
    done = _resolved(recorded, step)
    assert (done.action, done.value) == ("return", step.tool.result), done

    run = _without(recorded, index, "tool result")
    assert f"steps[{index}].result" in check_kit(run).missing
    assert f"{step.label()}: no result recorded" in check_kit(run).problems
    assert _said(run, step) == [f"{step.label()}: no result was recorded for this tool call"]
    with pytest.raises(ReplayRefused) as refused:
        _resolved(run, step)
    assert str(refused.value) in _said(run, step)
    session = ReplaySession(run, allow_network=True, freeze_clock=False)
    with pytest.raises(ReplayRefused) as before, session:
        pass
    assert before.value.before
    assert (index, "no_result") in {(i.index, i.kind) for i in before.value.items}


def test_the_real_lost_returned_failure_is_named_and_refused() -> None:
    (run,) = check(Case(LOST_RETURNED_FAILURE)).runs
    (step,) = [s for s in run.steps if s.tool is not None and s.tool.error is not None]
    assert step.tool is not None and step.tool.error is not None and step.tool.error.returned
    assert f"steps[{step.index}].result" in run.kit.missing
    assert _said(run, step) == [f"{step.label()}: no result was recorded for this tool call"]
