"""The replay-kit check: verdicts, the exact list of missing fields, readable problems."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from otel_replay import attributes as A
from otel_replay.otlp.records import SpanRecord
from otel_replay.payload.attributes import to_attributes
from otel_replay.runs.build import build_runs
from otel_replay.runs.kit import check_kit
from otel_replay.runs.model import Run
from tests.fixtures.data import TESTS
from tests.fixtures.records import span_record

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
ROOT, CHAT1, TOOL, CHAT2 = "a" * 16, "b" * 16, "c" * 16, "d" * 16

ASK = [{"role": "user", "parts": [{"type": "text", "content": "where is order 88?"}]}]
CALL = [
    {
        "role": "assistant",
        "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": "88"}}],
    }
]
ANSWER = [{"role": "assistant", "parts": [{"type": "text", "content": "shipped"}]}]
TOOL_RESULT = [
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "shipped"}]}
]


def rec(
    span_id: str, parent: str | None, start: int, name: str, attrs: dict[str, Any]
) -> SpanRecord:
    return span_record(TRACE, span_id, parent, start, name, attrs, duration=5, scope="t")


def root_attrs(**extra: Any) -> dict[str, Any]:
    return {
        A.OPERATION_NAME: "invoke_agent",
        A.FP_COMMIT: "c0ffee",
        A.FP_PACKAGES: ["openai==1.0"],
        A.FP_FLAGS: '{"beta": true}',
        A.USER_ID: "u_7710",
        A.TENANT_ID: "acme",
        A.SESSION_ID: "s1",
        **extra,
    }


def chat_attrs(inputs: Any, outputs: Any, **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        A.OPERATION_NAME: "chat",
        A.PROVIDER_NAME: "openai",
        A.REQUEST_MODEL: "gpt-4o",
        "gen_ai.request.temperature": 0.0,
        "gen_ai.request.top_p": 1.0,
        "gen_ai.request.seed": 42,
        **to_attributes(A.SYSTEM_INSTRUCTIONS, [{"type": "text", "content": "Be brief."}]),
        **to_attributes(A.TOOL_DEFINITIONS, [{"type": "function", "name": "lookup"}]),
    }
    if inputs is not None:
        attrs.update(to_attributes(A.INPUT_MESSAGES, inputs))
    if outputs is not None:
        attrs.update(to_attributes(A.OUTPUT_MESSAGES, outputs))
    attrs.update(extra)
    return attrs


def tool_attrs(result: Any = "shipped", **extra: Any) -> dict[str, Any]:
    attrs: dict[str, Any] = {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: "lookup",
        A.TOOL_CALL_ID: "c1",
        **to_attributes(A.TOOL_CALL_ARGUMENTS, {"q": "88"}),
    }
    if result is not None:
        attrs.update(to_attributes(A.TOOL_CALL_RESULT, result))
    attrs.update(extra)
    return attrs


def complete() -> list[SpanRecord]:
    return [
        rec(ROOT, None, 100, "invoke_agent support", root_attrs()),
        rec(CHAT1, ROOT, 110, "chat gpt-4o", chat_attrs(ASK, CALL)),
        rec(TOOL, ROOT, 120, "execute_tool lookup", tool_attrs()),
        rec(CHAT2, ROOT, 130, "chat gpt-4o", chat_attrs(ASK + CALL + TOOL_RESULT, ANSWER)),
    ]


def one(spans: list[SpanRecord]) -> Run:
    (run,) = build_runs(spans)
    return run


def replace(spans: list[SpanRecord], span_id: str, attrs: dict[str, Any]) -> list[SpanRecord]:
    return [
        rec(s.span_id, s.parent_span_id, s.start_ns, s.name, attrs) if s.span_id == span_id else s
        for s in spans
    ]


def test_a_complete_run_is_full_replayable_and_misses_nothing() -> None:
    kit = one(complete()).kit
    assert (kit.verdict, kit.replayable, kit.missing, kit.problems) == ("full", True, [], [])


def test_missing_fields_are_named_exactly_and_in_a_stable_order() -> None:
    sparse = [
        rec(ROOT, None, 100, "invoke_agent", {A.OPERATION_NAME: "invoke_agent"}),
        rec(
            CHAT1,
            ROOT,
            110,
            "chat",
            {A.OPERATION_NAME: "chat", **to_attributes(A.OUTPUT_MESSAGES, CALL)},
        ),
        rec(
            TOOL,
            ROOT,
            120,
            "execute_tool lookup",
            {A.OPERATION_NAME: "execute_tool", A.TOOL_CALL_ID: "c1"},
        ),
        rec(CHAT2, ROOT, 130, "chat", chat_attrs(None, ANSWER)),
    ]
    sparse[3].attributes.pop("gen_ai.request.top_p")
    sparse[3].attributes.pop("gen_ai.request.seed")
    # Optional fields no step has are not set (not a failure); those some steps have and
    # another lacks, and what a replay needs, are missing.
    not_set = ["commit", "packages", "flags", "user.id", "tenant.id", "session.id"]
    not_set += ["top_p", "seed"]
    expected = [
        "steps[1].provider",
        "steps[1].request_model",
        "steps[1].temperature",
        "steps[1].input_messages",
        # No steps[2].arguments: a tool span without them runs the model's call, whose
        # arguments are recorded (taken, unverified); no later request holds the result.
        "steps[2].result",
        "steps[3].input_messages",
    ]
    for seed in range(5):
        shuffled = list(sparse)
        random.Random(seed).shuffle(shuffled)
        kit = one(shuffled).kit
        assert kit.missing == expected and kit.not_set == not_set
        assert kit.verdict == "model-only" and not kit.replayable
        assert kit.replay_problem == "tool results not recorded"
    assert kit.problems == ["step 2 (tool lookup, span cccccccccccccccc): no result recorded"]
    tool = one(sparse).steps[2].tool
    assert tool is not None and tool.arguments_payload is not None
    assert tool.arguments_payload.status == "unverified"


def test_identity_fields_found_on_any_span_and_conversation_id_counts_as_session() -> None:
    spans = complete()
    root = root_attrs()
    del root[A.SESSION_ID], root[A.TENANT_ID]
    spans = replace(spans, ROOT, root)
    spans[2].attributes[A.TENANT_ID] = "acme"  # set on the tool span only
    spans[1].attributes[A.CONVERSATION_ID] = "conv-9"
    run = one(spans)
    assert run.fingerprint["tenant.id"] == "acme"
    assert run.kit.missing == []


def test_system_prompt_in_the_messages_counts_and_tools_unused_need_no_schema() -> None:
    system_msg = [{"role": "system", "parts": [{"type": "text", "content": "Be brief."}]}]
    attrs = chat_attrs(system_msg + ASK, ANSWER)
    for key in [k for k in attrs if k.endswith((A.SYSTEM_INSTRUCTIONS, A.TOOL_DEFINITIONS))]:
        del attrs[key]
    run = one(
        [rec(ROOT, None, 100, "invoke_agent", root_attrs()), rec(CHAT1, ROOT, 110, "chat", attrs)]
    )
    assert run.kit.missing == []
    assert run.kit.verdict == "full"

    with_tools = complete()
    for s in with_tools[1:4:2]:
        for key in [k for k in s.attributes if k.endswith(A.TOOL_DEFINITIONS)]:
            del s.attributes[key]
    assert one(with_tools).kit.missing == ["tool_definitions"]


def test_a_missing_tool_result_makes_the_run_model_only() -> None:
    run = one(replace(complete(), TOOL, tool_attrs(result=None)))
    kit = run.kit
    assert kit.verdict == "model-only" and not kit.replayable
    assert kit.missing == ["steps[2].result"]
    assert kit.problems == [f"{run.steps[2].label()}: no result recorded"]


def test_a_tool_error_is_a_recorded_outcome() -> None:
    spans = replace(complete(), TOOL, tool_attrs(result=None, **{A.ERROR_TYPE: "TimeoutError"}))
    spans[2].status_code = 2
    run = one(spans)
    assert run.steps[2].tool is not None and run.steps[2].tool.error is not None
    assert (run.kit.verdict, run.kit.replayable, run.kit.missing) == ("full", True, [])


def test_tool_calls_without_a_tool_span() -> None:
    no_tool = [s for s in complete() if s.span_id != TOOL]
    run = one(no_tool)
    kit = run.kit
    # The result in the next model input makes a derived tool step: no timing, model-only.
    derived = run.steps[2]
    assert derived.tool is not None and derived.tool.derived and not derived.timed
    assert kit.verdict == "model-only" and not kit.replayable
    assert kit.missing == ["steps[2].timestamps"]
    assert kit.problems == [
        f"{derived.label()}: no tool span; arguments and result are taken from the messages "
        "(as the model saw them, unverified) and the call has no timing"
    ]
    # The next model input does not answer it: no step to derive, no result at all.
    no_answer = replace(no_tool, CHAT2, chat_attrs(ASK, ANSWER))
    run = one(no_answer)
    assert run.kit.missing == ["steps[1].tool_calls[0].result"]
    assert run.kit.problems == [
        f"{run.steps[1].label()}: tool call lookup (id c1) has no tool span; no result was recorded"
    ]
    # A call in the last model output, with nothing after it, needed no result.
    last_only = [s for s in complete() if s.span_id in (ROOT, CHAT1)]
    assert one(last_only).kit.verdict == "full"


def test_a_tool_span_without_call_id_answers_by_name() -> None:
    attrs = tool_attrs()
    del attrs[A.TOOL_CALL_ID]
    assert one(replace(complete(), TOOL, attrs)).kit.verdict == "full"
    attrs[A.TOOL_NAME] = "other_tool"
    assert one(replace(complete(), TOOL, attrs)).kit.verdict == "model-only"


def test_derived_tool_results_are_model_only() -> None:
    run = one(complete())
    tool = run.steps[2].tool
    assert tool is not None
    tool.derived = True
    kit = check_kit(run)
    assert kit.verdict == "model-only" and not kit.replayable
    assert "taken from the messages" in kit.problems[0]


def test_a_digest_mismatch_is_never_replayable() -> None:
    # The tool result display was truncated (by an attribute length limit).
    truncated = tool_attrs(result="x" * 500)
    truncated[A.TOOL_CALL_RESULT] = truncated[A.TOOL_CALL_RESULT][:40]
    run = one(replace(complete(), TOOL, truncated))
    assert run.kit.verdict == "model-only" and not run.kit.replayable
    (problem,) = run.kit.problems
    assert problem.startswith(f"{run.steps[2].label()}: result not byte-exact: ")
    assert "truncated by an attribute length limit" in problem
    assert run.kit.missing == []  # recorded, but damaged: a problem, not a gap

    # Exact bytes altered while the display still parses: output present, still refused.
    attrs = chat_attrs(ASK + CALL + TOOL_RESULT, ANSWER)
    attrs.update(to_attributes(A.OUTPUT_MESSAGES, ANSWER, length_limit=5))
    attrs[A.BYTES + A.OUTPUT_MESSAGES] = b'[{"role":"assistant","parts":[]}]'
    run = one(replace(complete(), CHAT2, attrs))
    model = run.steps[3].model
    assert model is not None and model.output_payload is not None
    assert model.output_payload.status == "mismatch" and model.output_messages is not None
    assert not run.kit.replayable and run.kit.verdict != "full"
    assert run.kit.problems[0].startswith(f"{run.steps[3].label()}: output messages not byte-exact")

    # Damaged input messages: everything served is there, but the run does not replay.
    attrs = chat_attrs(ASK, CALL)
    attrs[A.INPUT_MESSAGES] = attrs[A.INPUT_MESSAGES][:-3]
    run = one(replace(complete(), CHAT1, attrs))
    assert run.kit.verdict == "full" and not run.kit.replayable
    assert "input messages not byte-exact" in run.kit.problems[0]


def test_a_result_recorded_as_repr_only_cannot_replay() -> None:
    run = one(replace(complete(), TOOL, tool_attrs(result=object())))
    assert run.steps[2].tool is not None
    assert run.steps[2].tool.result_payload is not None
    assert run.steps[2].tool.result_payload.type == "repr"
    assert not run.kit.replayable and run.kit.verdict == "model-only"
    assert run.kit.problems == [
        f"{run.steps[2].label()}: result recorded as repr() only; it cannot be restored"
    ]


def test_a_missing_blob_is_missing_and_a_problem() -> None:
    attrs = tool_attrs()
    attrs[A.REF + A.TOOL_CALL_RESULT] = "sha256:" + "0" * 64
    del attrs[A.TOOL_CALL_RESULT]
    run = one(replace(complete(), TOOL, attrs))
    assert run.kit.missing == ["steps[2].result"]
    assert run.kit.problems == [
        f"{run.steps[2].label()}: result missing: blob sha256:{'0' * 64} is not available"
        " (beside the trace, nor in a store allowed by --refs)"
    ]
    assert not run.kit.replayable


def test_a_failed_model_call_is_reported() -> None:
    spans = replace(complete(), CHAT2, chat_attrs(ASK + CALL + TOOL_RESULT, None))
    spans[3].status_code, spans[3].status_message = 2, "429 rate limited"
    run = one(spans)
    assert run.kit.verdict == "model-only" and not run.kit.replayable
    assert run.kit.missing == []
    assert run.kit.problems == [
        f"{run.steps[3].label()}: the call failed (429 rate limited); "
        "a failed model call has no output to serve"
    ]
    spans[3].status_code = 0
    run = one(spans)
    assert run.kit.missing == ["steps[3].output_messages"]


@pytest.mark.parametrize("case", ["no_content", "third_party_off", "no_genai"])
def test_inspect_only(case: str) -> None:
    if case == "no_content":
        # What our capture records with content off: model/usage, tool names, no I/O.
        spans = [
            rec(ROOT, None, 100, "invoke_agent", root_attrs(**{A.CONTENT: "NO_CONTENT"})),
            rec(CHAT1, ROOT, 110, "chat", {**chat_attrs(None, None), A.CONTENT: "NO_CONTENT"}),
            rec(
                TOOL,
                ROOT,
                120,
                "execute_tool lookup",
                {A.OPERATION_NAME: "execute_tool", A.TOOL_NAME: "lookup", A.CONTENT: "NO_CONTENT"},
            ),
        ]
    elif case == "third_party_off":
        spans = [
            rec(
                CHAT1,
                None,
                110,
                "chat gpt-4o",
                {A.OPERATION_NAME: "chat", A.REQUEST_MODEL: "gpt-4o"},
            )
        ]
    else:
        spans = [rec(ROOT, None, 100, "GET /orders", {"http.method": "GET"})]
    kit = one(spans).kit
    assert kit.verdict == "inspect-only" and not kit.replayable
    if case == "no_content":
        assert kit.problems[0] == (
            "content capture was off (NO_CONTENT): messages and tool I/O were not recorded"
        )
        assert kit.missing[-4:] == [
            "steps[1].input_messages",
            "steps[1].output_messages",
            "steps[2].arguments",
            "steps[2].result",
        ]
    if case == "third_party_off":
        assert "provider" in kit.missing and "steps[0].output_messages" in kit.missing


def test_content_off_for_one_span_names_that_span() -> None:
    attrs = tool_attrs(result=None, **{A.CONTENT: "NO_CONTENT"})
    del attrs[A.TOOL_CALL_ARGUMENTS], attrs[A.SHA256 + A.TOOL_CALL_ARGUMENTS]
    del attrs[A.TYPE + A.TOOL_CALL_ARGUMENTS]
    run = one(replace(complete(), TOOL, attrs))
    assert run.kit.verdict == "model-only"
    assert run.kit.problems[0] == (
        f"{run.steps[2].label()}: content capture was off for this span (NO_CONTENT)"
    )


def test_the_report_is_cached_on_the_run_and_deterministic() -> None:
    run = one(complete())
    assert run.kit is run.kit
    assert check_kit(run) == check_kit(one(list(reversed(complete()))))


def test_tools_without_any_model_call_are_not_replayable(tmp_path: Path) -> None:
    # Semantic Kernel's OpenAIResponsesAgent traces invoke_agent and execute_tool only: the
    # tools ran, what asked for them is not in the trace (a case of the conformance corpus).
    case = TESTS / "conformance" / "cases" / "semantic_kernel"
    (run,) = otel_replay.load(*(case / "responses" / n for n in ("traces.binpb", "logs.binpb")))
    assert not run.model_steps() and len(run.tool_steps()) == 3
    assert run.kit.verdict == "inspect-only"
    assert "model_calls" in run.kit.missing
    assert not run.kit.replayable
