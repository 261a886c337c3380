"""Conformance: every recorded stack and mode rebuilds each agent run exactly.

Each case under ``cases/<stack>/<mode>/`` (``<mode>@<scenario>/`` for a scenario other
than the default) is what an agent framework's own
tracing exported while its agent ran a conformance scenario against the
fake model server, with the server's log as ground truth (see README.md and
``checks.py`` for what is compared).  A case passes when
:func:`~tests.conformance.checks.check` finds no difference.

Known gaps are listed in :data:`KNOWN_GAPS`, one line each, and marked
``xfail(strict=True)``: a fix makes the case pass, and the test then fails
until its entry is removed.  Cases whose trace does not hold what the check
asks for (no reader could rebuild it) are in :data:`NOT_RECORDED`, marked the
same way, and shown as such in the tables.  ``python -m tests.conformance.table`` rewrites
the README's table from the same checks.
"""

from __future__ import annotations

import pytest

from tests.conformance.checks import Case, check, find_cases
from tests.conformance.table import (
    MAIN_README,
    README,
    ROOT_README,
    SCENARIOS_END,
    SCENARIOS_START,
    SUMMARY_END,
    SUMMARY_START,
    render,
    scenarios_table,
    summary,
    table_in,
)


def _modes(stack: str, reason: str, *modes: str) -> dict[str, str]:
    return {f"{stack}/{mode}": reason for mode in modes}


_RUNS = ("two_runs", "two_runs_concurrent")
_NO_CALL_IDS_WITHOUT_CONTENT = (
    "tool steps: no call id (without content the trace holds none: the TOOL spans record "
    "none and the model's calls are not recorded)"
)
_SPLIT_WITHOUT_CONTENT = (
    "split: one run per completion() call (without content nothing joins the calls of a run)"
)
_CLIENT_SPLIT_WITHOUT_CONTENT = (
    "split: one run per model call (a client instrumentation traces each call alone and, "
    "without content, nothing joins the calls of a run)"
)

#: Named scenarios other than the default (``cases/<stack>/<mode>@<scenario>/``).
_SCENARIOS = ("json_results", "blocks_and_errors", "plain_text")


def _at(scenario: str, stack: str, reason: str, *modes: str) -> dict[str, str]:
    return {f"{stack}/{mode}@{scenario}": reason for mode in modes}


#: Case id -> what is wrong today, one line.  Remove an entry when its case passes.
KNOWN_GAPS: dict[str, str] = {}

#: Case id -> what the stack's trace does not hold, so that no reader could rebuild it.
#: The case fails its check for that alone; the verdict says what is missing.
NOT_RECORDED: dict[str, str] = {
    **{
        f"openai_agents_openinference/{mode}@seed-347713782": (
            "a tool's int beyond 64 bits: the exporter drops the tool span's output.value it "
            "cannot encode (the verdict names the step's result as not recorded, and a replay "
            "refuses it; the model was sent its text)"
        )
        for mode in ("sync", "responses")
    },
    "google_adk/sync@seed-1470744703": (
        "a tool's int beyond 64 bits: ADK 2.x records a tool's result and the model's input "
        "only in its log records, and the exporter loses the records it cannot encode: the "
        "verdict names every result, the value the failed call returned among them, and "
        "each request after the first as not recorded (a replay refuses them)"
    ),
    "google_adk/sync@seed-471155946": (
        "a tool's list of an int and floats: ADK 2.x records a tool's result only in its log "
        "records' message attributes, where the OpenTelemetry SDK keeps None for a list whose "
        "items are of more than one type (nothing in the trace says a value was dropped)"
    ),
    **{
        f"anthropic_openllmetry/anthropic_stream@seed-{n}": (
            "a stream cut partway: OpenLLMetry's Anthropic instrumentation exports no span of "
            "the cut request, only the SDK's metadata span of it (the verdict says the run's "
            "last model call is not in the trace)"
        )
        for n in (31, 32)
    },
    "openai_openllmetry/responses_stream@seed-14": (
        "a stream cut partway: OpenLLMetry's OpenAI instrumentation ends the span of the cut "
        "Responses stream in error holding its model and that it streamed, no request (joined "
        "to its run, the verdict says the run's last model call is not in the trace); the "
        "call ids of the answer before it are then in no record either (OpenLLMetry records "
        "a streamed Responses call by its item id; the call id is read off the next request: "
        "a replay says it serves the item id in its place)"
    ),
    **{
        case: (
            "a stream cut partway: the trace holds nothing of what streamed before the cut "
            "(the tracing records no output of a failed call; the verdict names the step's "
            "output, and a replay refuses it)"
        )
        for case in (
            "vercel_ai/stream@seed-14",
            "vercel_ai/responses_stream@seed-14",
            "vercel_ai/legacy_stream@seed-32",
            "langgraph_openinference/stream@seed-14",
            "strands/async_stream@seed-14",
            "langchain_js/stream@seed-14",
            "smolagents/stream@seed-52",
            "strands/sync@seed-874456028",
            "llamaindex_openinference/async_stream@seed-99217",
            "semantic_kernel/async_stream@seed-34648",
        )
    },
    **{
        f"{stack}/async_stream@seed-92": (
            "a stream cut partway: the trace holds nothing of what streamed before the cut "
            "(the Agents SDK records a streamed call's output at its last event), and the "
            "error it records (the client's 'Connection error.', raised alike for a "
            "connection refused) does not say whether the answer had begun; the verdict "
            "names the step's output, and a replay refuses it"
        )
        for stack in ("openai_agents_openinference", "openai_agents_otel")
    },
    "litellm_openinference/responses@seed-94278": (
        "counter call ids (call_0 at every step) on LiteLLM's openai/responses/ route: "
        "LiteLLM gives the agent each call's Responses item id (fc_...) for its call id, and "
        "OpenInference records only the chat-shaped answer the agent got, so the model's call "
        "id is in no record (a replay says it serves the item id in its place)"
    ),
    **{
        case: (
            "text beside tool calls: Semantic Kernel records an answer with calls as "
            "ChatMessageContent.to_dict() makes it, the calls alone (the kit names the text)"
        )
        # (the second: a streamed run answers that text, then its answer: its ending)
        for case in (
            "semantic_kernel/async@blocks_and_errors",
            "semantic_kernel/async_stream@seed-1",
        )
    },
    # Runs the framework ended its own way (``ending`` in case.json):
    "openai_agents_openinference/sync@seed-1": (
        "a run the Agents SDK ended in its ModelBehaviorError on a reused call id: no span "
        "records the error (every span ends OK), so nothing says the run raised"
    ),
    "openai_agents_openinference/sync@seed-11": (
        "a run the Agents SDK ended in its ModelBehaviorError on two calls of one answer with "
        "the same empty id: no span records the error (every span ends OK), so nothing says "
        "the run raised"
    ),
    "openai_agents_otel/sync@seed-1": (
        "a run the Agents SDK ended in its ModelBehaviorError on a reused call id: no span "
        "records the error (every span ends OK), so nothing says the run raised; the span of "
        "the answer it raised on holds its text alone, its calls in no record"
    ),
    "google_adk_v1/async_stream@seed-1098253923": (
        "a stream cut partway inside a call's arguments: ADK 1.x decodes them once the stream "
        "ends and raises JSONDecodeError, and its span records no output of the failed call, "
        "so the trace holds nothing of what streamed before the cut (the verdict names the "
        "step's output, and a replay refuses it)"
    ),
    **{
        case: (
            "a stream cut partway, which ADK 1.x on LiteLLM took for the answer: its span of the "
            "call records what streamed before the cut as a whole answer (finish reason stop, "
            "not failed), so nothing says it was cut; and a tool that raised is recorded as its "
            "error callback's response, unfailed"
        )
        for case in (
            "google_adk_v1/stream@seed-14",
            "google_adk_v1/async_stream@seed-366003604",
            "google_adk_v1/stream@seed-1307948360",  # (whole calls before the cut, run)
        )
    },
    "llamaindex_openinference/responses@seed-2": (
        "an answer in several Responses output_text parts, which LlamaIndex answers joined "
        "with newlines: the trace holds that rendering only in Python reprs (str(ChatMessage) "
        "as the model span's output.value, the root's StopEvent), which a reader does not "
        "parse; the rebuild's final output is the model's text, its parts as sent"
    ),
    "litellm_otel/no_content": _SPLIT_WITHOUT_CONTENT,
    "litellm_openinference/no_content": _SPLIT_WITHOUT_CONTENT,
    "llamaindex_openinference/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "openai_openinference/no_content": _CLIENT_SPLIT_WITHOUT_CONTENT,
    "openai_openllmetry/no_content": _CLIENT_SPLIT_WITHOUT_CONTENT,
    "anthropic_openinference/no_content": _CLIENT_SPLIT_WITHOUT_CONTENT,
    "anthropic_openllmetry/no_content": _CLIENT_SPLIT_WITHOUT_CONTENT,
    "openai_otel_v2/no_content": _CLIENT_SPLIT_WITHOUT_CONTENT,
    "langgraph_openinference/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "langgraph_openllmetry/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "langgraph_v0_openinference/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "langgraph_v0_openllmetry/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "openai_agents_openinference/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "openai_agents_otel/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "smolagents/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    **{f"smolagents/no_content@{s}": _NO_CALL_IDS_WITHOUT_CONTENT for s in _SCENARIOS},
    **{
        f"google_adk_v1/sync@{s}": (
            "the raising tool: ADK 1.x records the response its on_tool_error_callback made as "
            "the tool's and leaves the span unfailed, so nothing says the tool raised"
        )
        for s in ("json_results", "blocks_and_errors", "seed-27")
    },
    "crewai/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "langchain_js/no_content": _NO_CALL_IDS_WITHOUT_CONTENT,
    "crewai_v0/no_content": (
        "the raising tool: CrewAI tells the model of the error in the tool span's output and "
        "leaves the span OK, so without content nothing says it raised"
    ),
    "crewai_v0/sync@seed-1411261800": (
        "the raising tool: CrewAI 0.x runs a tool that raised again itself, inside the one "
        "ToolUsage span, which records the last attempt alone"
    ),
    **_modes(
        "openai_agents_otel",
        "model input: with a Responses model the bridge records the first user message "
        "alone (no instructions, no earlier turns, no tool results)",
        "responses",
        "responses_stream",
    ),
    **_modes(
        "semantic_kernel",
        "model calls: the OpenAIResponsesAgent traces the agent and its tools alone (no model "
        "call span; the tool spans name the calls by their item ids)",
        "responses",
        "responses_stream",
    ),
    **_modes(
        "google_adk_v1",
        "the raising tool: ADK 1.x records the response its on_tool_error_callback made as the "
        "tool's and leaves the span unfailed, so nothing says the tool raised",
        "sync",
        "async",
        "stream",
        "async_stream",
        "no_content",
        "two_runs",
        "two_runs_concurrent",
    ),
    **{
        f"{stack}/no_content": (
            "no tool step: the Agent traces no span per tool call and, without content, the "
            "chat generator spans hold no tool call to derive one from"
        )
        for stack in ("haystack_openinference", "haystack2_openinference")
    },
}

CASES = find_cases()


def _param(case: Case) -> object:
    gap = KNOWN_GAPS.get(case.id) or NOT_RECORDED.get(case.id)
    marks = [pytest.mark.xfail(strict=True, reason=gap)] if gap else []
    return pytest.param(case, id=case.id, marks=marks)


def test_cases_are_found() -> None:
    assert CASES, "no conformance case found under tests/conformance/cases/"


def test_every_known_gap_names_a_case() -> None:
    ids = {c.id for c in CASES}
    assert not set(KNOWN_GAPS) - ids, "KNOWN_GAPS lists cases that do not exist"
    assert not set(NOT_RECORDED) - ids, "NOT_RECORDED lists cases that do not exist"
    assert not set(KNOWN_GAPS) & set(NOT_RECORDED), "a case is either a gap or not recorded"


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_the_trace_rebuilds_every_run_exactly(case: Case) -> None:
    outcome = check(case)
    assert outcome.exact, f"{case.id}:\n  " + "\n  ".join(outcome.problems)


def test_the_readme_tables_are_current() -> None:
    assert table_in(README.read_text(encoding="utf-8")) == render(
        CASES, KNOWN_GAPS, NOT_RECORDED
    ), "tests/conformance/README.md is stale: run `python -m tests.conformance.table`"
    main = MAIN_README.read_text(encoding="utf-8")
    assert table_in(main, SUMMARY_START, SUMMARY_END) == summary(CASES, NOT_RECORDED), (
        "the summary in docs/instrumentations.md is stale: run `python -m tests.conformance.table`"
    )


def test_the_project_readme_shows_scenarios_by_stacks_and_modes_as_the_corpus_holds_them() -> None:
    """The README's scenarios table is the one the committed cases make, and it counts every
    case once."""
    table = scenarios_table(CASES, NOT_RECORDED)
    rows = [line.split(" | ") for line in table.splitlines()[2:]]
    assert sum(int(row[3]) for row in rows) == len(CASES)
    readme = ROOT_README.read_text(encoding="utf-8")
    assert SCENARIOS_START in readme and SCENARIOS_END in readme, (
        "README.md has no scenarios table: put its markers in, then run "
        "`python -m tests.conformance.table --readme`"
    )
    assert table_in(readme, SCENARIOS_START, SCENARIOS_END) == table, (
        "the scenarios table in README.md is stale: run `python -m tests.conformance.table --readme`"
    )
