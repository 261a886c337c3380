"""Agent frameworks' tool spans (LangChain/LangGraph, LlamaIndex) read as the model's calls.

Each test reads a trace a framework's own tracing exported (the conformance
cases), as a user would: a copy in ``tmp_path`` read with ``load()`` or the CLI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.runs.model import Step
from otel_replay.runs.tool_spans import unwrap_result
from tests.fixtures.cli import cli_process
from tests.fixtures.data import ROOT, TESTS

CASES = TESTS / "conformance" / "cases"
EXAMPLE = ROOT / "examples" / "order_support" / "recordings"

LOOKUP_SENT = {
    "order_id": "ORD-5521",
    "status": "en préparation",
    "items": [{"name": "Câble USB-C 2 m", "qty": 2}],
    "total": "24,98 €",
}
TICKET_ARGS = {"order_id": "ORD-5521", "reason": "échec du suivi du colis"}


def _copy(case: str, tmp_path: Path) -> Path:
    target = tmp_path / "traces.binpb"
    shutil.copyfile(CASES / case / "traces.binpb", target)
    return target


def _tools(path: Path) -> dict[str, Step]:
    (run,) = otel_replay.load(path)
    return {s.tool.tool_name: s for s in run.tool_steps() if s.tool is not None}


def _shown_tools(path: Path) -> dict[str, dict[str, Any]]:
    done = cli_process("show", "--json", path)
    assert done.returncode == 0, done.stderr
    (run,) = json.loads(done.stdout)["runs"]
    return {s["tool_name"]: s for s in run["steps"] if s["kind"] == "tool"}


def test_langchain_callback_input_and_tool_message_read_as_the_models_call(
    tmp_path: Path,
) -> None:
    # OpenLLMetry's LangChain tool spans: no call id, the callback's whole input
    # (input_str, tags, metadata), the serialized ToolMessage as the result.
    tools = _shown_tools(_copy("langgraph_openllmetry/sync", tmp_path))
    lookup = tools["lookup_order"]
    assert lookup["call_id"] == "call_lookup_order_5521"
    assert lookup["arguments"] == {"order_id": "ORD-5521"}
    assert json.loads(lookup["result"]) == LOOKUP_SENT
    # Taken from the messages, not proved by a digest.
    assert lookup["exact"]["arguments"] == "unverified"
    assert lookup["exact"]["result"] == "unverified"
    raised = tools["track_shipment"]
    assert raised["call_id"] == "call_track_shipment_5521"
    assert raised["result"] is None and raised["error"]["type"] == "RuntimeError"
    assert tools["open_ticket"]["arguments"] == TICKET_ARGS


def test_a_one_argument_tool_recorded_as_its_bare_value_takes_the_calls_object(
    tmp_path: Path,
) -> None:
    # OpenInference's LangChain TOOL spans: ``input.value`` is "ORD-5521" for a
    # one-argument tool, and the result the ToolMessage as {"type": "tool", "data": ...}.
    tools = _tools(_copy("langgraph_openinference/sync", tmp_path))
    lookup = tools["lookup_order"]
    assert lookup.tool is not None
    assert lookup.tool.call_id == "call_lookup_order_5521"
    assert lookup.tool.arguments == {"order_id": "ORD-5521"}
    assert json.loads(lookup.tool.result) == LOOKUP_SENT
    # The span's own attributes stay as recorded.
    assert lookup.attributes["input.value"] == "ORD-5521"
    ticket = tools["open_ticket"].tool
    assert ticket is not None
    assert ticket.arguments == TICKET_ARGS
    # Recorded as the arguments object: the span's own bytes are kept.
    span_args = tools["open_ticket"].attributes["input.value"]
    assert ticket.arguments_payload is not None
    assert ticket.arguments_payload.data == span_args.encode()


def test_llamaindex_kwargs_and_tool_output_read_as_what_the_model_was_sent(
    tmp_path: Path,
) -> None:
    tools = _tools(_copy("llamaindex_openinference/async", tmp_path))
    lookup = tools["lookup_order"].tool
    assert lookup is not None
    assert lookup.call_id == "call_lookup_order_5521"
    assert lookup.arguments == {"order_id": "ORD-5521"}
    # LlamaIndex sends the model the ToolOutput's text: str() of the tool's dict.
    assert lookup.result == str(LOOKUP_SENT)


def test_hidden_tool_input_and_output_are_missing_not_the_placeholder(tmp_path: Path) -> None:
    (run,) = otel_replay.load(_copy("langgraph_openinference/no_content", tmp_path))
    for step in run.tool_steps():
        assert step.tool is not None
        assert step.attributes["input.value"] == "__REDACTED__"
        assert step.tool.arguments is None and step.tool.result is None
        assert f"steps[{step.index}].arguments" in run.kit.missing
        if step.tool.error is None:
            assert f"steps[{step.index}].result" in run.kit.missing
    assert run.kit.verdict != "full"


def test_wrappers_unwrap_to_their_content_and_other_values_stay() -> None:
    recorded = {}
    for case, name in (
        ("langgraph_openinference/sync", "output.value"),
        ("langgraph_openllmetry/sync", "traceloop.entity.output"),
        ("llamaindex_openinference/async", "output.value"),
    ):
        (run,) = otel_replay.load(CASES / case / "traces.binpb")
        lookup = next(s for s in run.tool_steps() if s.tool and s.tool.tool_name == "lookup_order")
        recorded[case] = lookup.attributes[name]
    assert json.loads(unwrap_result(recorded["langgraph_openinference/sync"])) == LOOKUP_SENT
    assert json.loads(unwrap_result(recorded["langgraph_openllmetry/sync"])) == LOOKUP_SENT
    # LlamaIndex's block text is what str() of the tool's dict gave.
    assert "'order_id': 'ORD-5521'" in unwrap_result(recorded["llamaindex_openinference/async"])
    plain = json.dumps(LOOKUP_SENT)
    assert unwrap_result(plain) is plain


def test_a_tools_own_result_is_kept_exact(tmp_path: Path) -> None:
    # otel-replay's own capture: the span has the call id and the exact bytes.
    target = tmp_path / "wrong_order.otlp"
    shutil.copyfile(EXAMPLE / "wrong_order.otlp", target)
    (run,) = otel_replay.load(target)
    tools = [s.tool for s in run.tool_steps() if s.tool is not None]
    assert tools
    for tool in tools:
        assert tool.result_payload is not None and tool.result_payload.status == "exact"
        assert tool.arguments_payload is not None and tool.arguments_payload.status == "exact"


def test_arguments_the_agent_changed_are_the_tools_own(tmp_path: Path) -> None:
    # The fixed example agent adds user_id to the model's lookup_order call:
    # the tool ran with other arguments than the model asked for, and replay
    # must see those.
    from examples.order_support.record import record

    target = tmp_path / "fixed.otlp"
    record(target, fixed=True)
    (run,) = otel_replay.load(target)
    lookup = next(s.tool for s in run.tool_steps() if s.tool and s.tool.tool_name == "lookup_order")
    assert lookup is not None
    assert lookup.arguments == {"query": "my order", "user_id": "u_7710"}
    assert lookup.arguments_payload is not None and lookup.arguments_payload.status == "exact"


def test_responses_function_calls_recorded_as_text_read_as_tool_calls(tmp_path: Path) -> None:
    # OpenLLMetry's LangChain instrumentation with the Responses API writes each
    # function_call item as JSON in a text part, in outputs and in later inputs.
    (run,) = otel_replay.load(_copy("langgraph_openllmetry/responses", tmp_path))
    first, second, _ = [s.model for s in run.steps if s.kind == "model" and s.model]
    assert (first.output_messages or [])[0]["parts"] == [
        {
            "type": "tool_call",
            "id": "call_lookup_order_5521",
            "name": "lookup_order",
            "arguments": {"order_id": "ORD-5521"},
        },
        {
            "type": "tool_call",
            "id": "call_track_shipment_5521",
            "name": "track_shipment",
            "arguments": {"order_id": "ORD-5521"},
        },
    ]
    sent_back = second.input_messages or []
    assert [p["type"] for p in sent_back[1]["parts"]] == ["tool_call", "tool_call"]
    # The call that was also recorded as a tool_call part is there once.
    assert [p["type"] for p in (second.output_messages or [])[0]["parts"]] == ["tool_call"]


def _adk(mode: str, tmp_path: Path) -> list[Path]:
    paths = []
    for name in ("traces.binpb", "logs.binpb"):
        target = tmp_path / name
        shutil.copyfile(CASES / "google_adk" / mode / name, target)
        paths.append(target)
    return paths


def test_a_span_that_merges_parallel_calls_is_not_one_more_tool(tmp_path: Path) -> None:
    # Google ADK traces each of two parallel calls, then "(merged tools)" for both.
    for mode in ("sync", "legacy", "no_content"):
        (run,) = otel_replay.load(*_adk(mode, tmp_path))
        names = [s.tool.tool_name for s in run.tool_steps() if s.tool is not None]
        assert names == ["lookup_order", "track_shipment", "open_ticket"], mode
        (merge,) = [s for s in run.steps if s.name == "execute_tool (merged)"]
        assert merge.kind == "other" and merge.tool is None


def test_a_tool_span_without_content_runs_the_calls_arguments_and_sent_result(
    tmp_path: Path,
) -> None:
    # ADK's current schema keeps tool content off the span unless SPAN_ONLY; the call
    # and what the model was sent are in the log records: taken, marked unverified.
    (run,) = otel_replay.load(*_adk("sync", tmp_path))
    tools = {s.tool.tool_name: s.tool for s in run.tool_steps() if s.tool is not None}
    lookup, track = tools["lookup_order"], tools["track_shipment"]
    assert lookup.arguments == {"order_id": "ORD-5521"} and lookup.result == LOOKUP_SENT
    assert lookup.arguments_payload is not None and lookup.result_payload is not None
    assert (lookup.arguments_payload.status, lookup.result_payload.status) == (
        "unverified",
        "unverified",
    )
    # Failed by type alone (the error callback answered for it): the text the model got.
    assert track.error is not None and track.error.type == "TOOL_ERROR"
    assert "Colis-Express" in track.error.message
    # ... with its output: the response the model was sent for it.
    assert track.result == {"error": track.error.message}
    assert run.kit.verdict == "full"


def _tool_step(**status: str) -> Step:
    """A tool span's step, its call to be filled in."""
    return Step(
        kind="tool",
        name="execute_tool t",
        span_id="s",
        parent_span_id=None,
        trace_id="t",
        start_ns=0,
        end_ns=1,
        **status,
    )


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None)
@given(
    error=st.text(min_size=1, max_size=30),
    others=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "error"), _JSON, max_size=3),
    error_first=st.booleans(),
)
def test_a_failed_span_without_content_holds_the_response_the_model_was_sent(
    error: str, others: dict[str, Any], error_first: bool
) -> None:
    """Google ADK 2.x marks a tool failed (``error.type`` TOOL_ERROR, no exception event)
    when its response is a dict with an ``error``: returned by the tool or made by an
    on_tool_error_callback, the span cannot say which, and keeps no content of its own.
    The step is the error with its output: the whole response the model was sent
    (every key of it, in its order), not the error text alone."""
    from otel_replay.runs.model import ToolCall, ToolError
    from otel_replay.runs.tool_spans import _fill

    sent = {"error": error, **others} if error_first else {**others, "error": error}
    step = _tool_step(status="ERROR", status_message="TOOL_ERROR")
    step.tool = ToolCall(tool_name="t", call_id="c", error=ToolError("TOOL_ERROR", "TOOL_ERROR"))
    _fill(step, {"id": "c", "name": "t", "arguments": {"k": 1}}, sent)
    assert step.tool.error is not None and step.tool.error.message == error
    assert step.tool.result == sent and list(step.tool.result) == list(sent)
    assert step.tool.result_payload is not None
    assert step.tool.result_payload.status == "unverified"


@settings(max_examples=100, deadline=None)
@given(
    recorded=st.sampled_from(["null", "[]"]),
    sent=st.sampled_from(["", "null", "[]"]) | st.text(max_size=5),
)
def test_an_empty_result_recorded_as_json_is_what_the_model_was_sent(
    recorded: str, sent: str
) -> None:
    """pydantic-ai (from 1.69) sends a tool's None or [] as empty text and records it as
    ``null`` / ``[]``, as it records the text "null" / "[]" (sent as it is): what the model
    was sent tells them apart, and is what the framework sends again."""
    from otel_replay.runs.derived_tools import unverified
    from otel_replay.runs.model import ToolCall
    from otel_replay.runs.tool_spans import _fill

    value = [] if recorded == "[]" else recorded
    step = _tool_step()
    step.tool = ToolCall(
        tool_name="t",
        call_id="c",
        arguments={"k": 1},
        result=value,
        arguments_payload=unverified({"k": 1}),
        result_payload=unverified(value),
    )
    _fill(step, {"id": "c", "name": "t", "arguments": {"k": 1}}, sent)
    assert step.tool.result == ("" if sent == "" else value)


_AGENTS_TOOL = {
    # The openai-agents SDK's function span, as each bridge writes it: its arguments, its
    # result (when there is one).
    "opentelemetry.instrumentation.openai_agents": (
        {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "t"},
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    ),
    "openinference.instrumentation.openai_agents": (
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "t",
            "input.mime_type": "application/json",
        },
        "input.value",
        "output.value",
    ),
}


@settings(max_examples=200, deadline=None)
@given(
    scope=st.sampled_from(sorted(_AGENTS_TOOL)),
    arguments=st.dictionaries(st.text(max_size=5), _JSON, max_size=3).map(json.dumps)
    | st.just("__REDACTED__")
    | st.none(),
    result=st.none() | st.text(max_size=10),
    failed=st.booleans(),
)
def test_an_agents_tool_without_a_result_returned_none(
    scope: str, arguments: str | None, result: str | None, failed: bool
) -> None:
    """The openai-agents SDK gives a function span the tool's return value as its output,
    none for None, which both bridges leave out (the model is sent "None"): a tool span
    with its arguments and no result returned None, unless it failed; without its
    arguments (content off, or hidden) nothing says so, and its result is missing."""
    from otel_replay.otlp.records import SpanRecord
    from otel_replay.runs.steps import to_step

    base, args_key, result_key = _AGENTS_TOOL[scope]
    attributes: dict[str, Any] = dict(base)
    if arguments is not None:
        attributes[args_key] = arguments
    if result is not None:
        attributes[result_key] = result
    record = SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="t",
        kind=1,
        start_ns=0,
        end_ns=1,
        attributes=attributes,
        events=[],
        status_code=2 if failed else 1,
        status_message="Error running tool" if failed else "",
        resource={},
        scope_name=scope,
        scope_version="",
    )
    tool = to_step(record).tool
    assert tool is not None and (tool.error is not None) == failed
    returned_none = arguments not in (None, "__REDACTED__") and result is None and not failed
    if returned_none:
        assert tool.result is None and tool.result_payload is not None
    elif result is None:
        assert tool.result_payload is None  # missing (or the failure), not a None result


@pytest.mark.parametrize("stack", ["openai_agents_openinference", "openai_agents_otel"])
def test_an_agents_tool_that_returned_none_in_a_real_trace(stack: str) -> None:
    # The plain_text scenario's open_ticket returns None; the model was sent "None".
    (run,) = otel_replay.load(CASES / stack / "sync@plain_text" / "traces.binpb")
    tools = {s.tool.tool_name: s.tool for s in run.tool_steps() if s.tool is not None}
    assert tools["open_ticket"].result is None
    assert tools["open_ticket"].result_payload is not None
    assert run.kit.verdict == "full"


@settings(max_examples=200, deadline=None)
@given(
    shape=st.sampled_from(["openinference", "pydantic_ai_v1"]),
    text=st.just("") | st.text(max_size=8),
)
def test_a_tool_that_returned_empty_text_has_that_result(shape: str, text: str) -> None:
    """Empty text is a result: OpenInference's ``output.value`` (CrewAI, LlamaIndex...) and
    pydantic-ai 1.x's ``tool_response`` of ""; it was read as none (a missing result, the
    run model-only, the replay refused)."""
    from otel_replay.otlp.records import SpanRecord
    from otel_replay.runs.steps import to_step

    if shape == "openinference":
        scope = "openinference.instrumentation.crewai"
        attributes: dict[str, Any] = {
            "openinference.span.kind": "TOOL",
            "tool.name": "t",
            "input.value": '{"order_id": "x"}',
            "output.value": text,
            "output.mime_type": "text/plain",
        }
    else:
        scope = "pydantic-ai"
        attributes = {
            "gen_ai.tool.name": "t",
            "tool_arguments": '{"order_id": "x"}',
            "tool_response": text,
        }
    record = SpanRecord(
        trace_id="1" * 32,
        span_id="2" * 16,
        parent_span_id=None,
        name="running tool",
        kind=1,
        start_ns=0,
        end_ns=1,
        attributes=attributes,
        events=[],
        status_code=1,
        status_message="",
        resource={},
        scope_name=scope,
        scope_version="",
    )
    tool = to_step(record).tool
    assert tool is not None and tool.result_payload is not None
    if text == "":
        assert tool.result == ""


_CONTENT = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    content=_CONTENT,
    form=st.sampled_from(["constructor", "dict", "callback"]),
    as_text=st.booleans(),
)
def test_a_langchain_tool_message_gives_its_content(content: Any, form: str, as_text: bool) -> None:
    """Any content, in each form a LangChain ToolMessage is recorded in (serialized, as
    ``message_to_dict`` writes it, or under a callback's ``output``), is what the model got."""
    from otel_replay.dialects.langchain_serialized import tool_message_content

    message: dict[str, Any] = (
        {"type": "tool", "data": {"content": content, "tool_call_id": "c1"}}
        if form == "dict"
        else {
            "lc": 1,
            "type": "constructor",
            "id": ["langchain", "schema", "messages", "ToolMessage"],
            "kwargs": {"content": content, "tool_call_id": "c1"},
        }
    )
    recorded: dict[str, Any] = {"output": message, "kwargs": {}} if form == "callback" else message
    assert unwrap_result(json.dumps(recorded) if as_text else recorded) == content
    if form != "callback":
        assert tool_message_content(message) == (content,)
    assert tool_message_content({"content": content}) is None  # no message: kept as it is
