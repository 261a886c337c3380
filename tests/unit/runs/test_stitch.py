"""Client-only traces (one per model call) stitched into runs; tool steps derived from messages."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from otel_replay import attributes as A
from otel_replay.cli.render import step_line
from otel_replay.otlp.records import SpanRecord
from otel_replay.payload.attributes import to_attributes
from otel_replay.runs.build import build_runs
from otel_replay.runs.model import Run
from tests.fixtures.records import span_record

SYSTEM = "You are a support agent. Be concise."


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def call(call_id: str | None, name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "arguments": args}


def answer(call_id: str | None, response: Any, role: str = "tool") -> dict[str, Any]:
    return {
        "role": role,
        "parts": [{"type": "tool_call_response", "id": call_id, "response": response}],
    }


def chat(
    trace: int,
    start: int,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]] | None,
    *,
    process: str = "p1",
    system: str | None = None,
    **extra: Any,
) -> SpanRecord:
    """One model call in a trace of its own, as a client-only instrumentation writes it."""
    attrs: dict[str, Any] = {
        A.OPERATION_NAME: "chat",
        A.PROVIDER_NAME: "openai",
        A.REQUEST_MODEL: "gpt-4o-mini",
        A.INPUT_MESSAGES: json.dumps(inputs),
        **extra,
    }
    if outputs is not None:  # None: not recorded, as some stacks do for streams
        attrs[A.OUTPUT_MESSAGES] = json.dumps(outputs)
    if system is not None:
        attrs[A.SYSTEM_INSTRUCTIONS] = json.dumps([{"type": "text", "content": system}])
    return span_record(
        f"{trace:032x}",
        f"{trace:016x}",
        None,
        start,
        "chat gpt-4o-mini",
        attrs,
        duration=50,
        resource={"service.name": "agent", "service.instance.id": process},
    )


def conversation(
    first_trace: int, prompt: str, start: int = 1000, gap: int = 100, **kw: Any
) -> list[SpanRecord]:
    """Three calls: look up, cancel, answer; tool results sent back as role tool."""
    ask = [text("system", SYSTEM), text("user", prompt)]
    out1 = [{"role": "assistant", "parts": [call("c1", "lookup", {"id": prompt})]}]
    res1 = answer("c1", json.dumps({"status": "processing", "id": prompt}))
    out2 = [{"role": "assistant", "parts": [call("c2", "cancel", {"id": prompt})]}]
    res2 = answer("c2", json.dumps({"cancelled": True}))
    out3 = [text("assistant", f"Cancelled {prompt}.")]
    return [
        chat(first_trace, start, ask, out1, **kw),
        chat(first_trace + 1, start + gap, [*ask, *out1, res1], out2, **kw),
        chat(first_trace + 2, start + 2 * gap, [*ask, *out1, res1, *out2, res2], out3, **kw),
    ]


def shuffled(spans: list[SpanRecord], seed: int = 7) -> list[SpanRecord]:
    out = list(spans)
    random.Random(seed).shuffle(out)
    return out


def trace_ids(run: Run) -> list[int]:
    return [int(t, 16) for t in run.trace_ids]


def test_client_only_traces_become_one_run_with_derived_tool_steps() -> None:
    (run,) = build_runs(shuffled(conversation(1, "ORD-1")))
    assert run.run_id == f"{1:032x}" and trace_ids(run) == [1, 2, 3]
    kinds = [(s.kind, s.tool.tool_name if s.tool else None) for s in run.steps]
    assert kinds == [
        ("model", None),
        ("tool", "lookup"),
        ("model", None),
        ("tool", "cancel"),
        ("model", None),
    ]
    lookup, cancel = run.tool_steps()
    assert lookup.tool is not None and cancel.tool is not None
    assert (lookup.tool.call_id, lookup.tool.arguments) == ("c1", {"id": "ORD-1"})
    assert lookup.tool.result == json.dumps({"status": "processing", "id": "ORD-1"})
    assert cancel.tool.result == json.dumps({"cancelled": True})
    for step in (lookup, cancel):
        assert step.tool is not None and step.tool.derived and not step.timed
        assert step.to_json()["derived"] is True and step.to_json()["timed"] is False
    # Placed between the calls: at the end of the call that asked for it.
    first_call = run.model_steps()[0]
    assert lookup.start_ns == lookup.end_ns == first_call.end_ns
    assert all(s.timed for s in run.model_steps())
    assert run.kit.verdict == "model-only"
    assert [m for m in run.kit.missing if m.startswith("steps[")] == [
        "steps[1].timestamps",
        "steps[3].timestamps",
    ]


def test_interleaved_conversations_stay_apart() -> None:
    a = conversation(10, "ORD-1", start=1000)
    b = conversation(20, "ORD-2", start=1050)
    runs = build_runs(shuffled(a + b))
    assert [trace_ids(r) for r in runs] == [[10, 11, 12], [20, 21, 22]]
    assert all(len(r.tool_steps()) == 2 for r in runs)


@pytest.mark.parametrize("processes", [("p1", "p1"), ("p1", "p2")])
def test_identical_conversations_stay_apart(processes: tuple[str, str]) -> None:
    # The same scenario run twice: messages alike, so neither may swallow the other.
    a = conversation(10, "ORD-1", start=1000, process=processes[0])
    b = conversation(20, "ORD-1", start=1050, process=processes[1])
    runs = build_runs(shuffled(a + b))
    assert [trace_ids(r) for r in runs] == [[10, 11, 12], [20, 21, 22]]


def test_same_process_wins_among_identical_candidates() -> None:
    # Two processes run the same scenario; the second one's calls come quicker.
    a = conversation(10, "ORD-1", start=1000, gap=300, process="p1")
    b = conversation(20, "ORD-1", start=1010, gap=100, process="p2")
    runs = build_runs(a + b)
    assert sorted(trace_ids(r) for r in runs) == [[10, 11, 12], [20, 21, 22]]


def test_a_conversation_id_stitches_without_continuity() -> None:
    conv = {A.CONVERSATION_ID: "conv-1"}
    # The client dropped the history between turns: no continuity, one conversation.
    spans = [
        chat(1, 100, [text("user", "hi")], [text("assistant", "hello")], **conv),
        chat(2, 200, [text("user", "where is ORD-1?")], [text("assistant", "shipped")], **conv),
        chat(3, 300, [text("user", "hi")], [text("assistant", "hello")]),
        chat(4, 400, [text("user", "hi")], [text("assistant", "hello")], **{A.SESSION_ID: "s"}),
    ]
    runs = build_runs(shuffled(spans))
    assert [trace_ids(r) for r in runs] == [[1, 2], [3], [4]]
    # Different ids stay apart even when the messages would join them.
    other = conversation(10, "ORD-1")
    other[1].attributes[A.CONVERSATION_ID] = "conv-2"
    other[2].attributes[A.CONVERSATION_ID] = "conv-3"
    assert [trace_ids(r) for r in build_runs(other)] == [[10], [11], [12]]


def test_continuity_ignores_ids_whitespace_key_order_and_system_form() -> None:
    # Anthropic-style: system prompt given apart, tool results in a user message as blocks,
    # arguments re-sent as a JSON string, whitespace and ids changed by the client.
    ask = [text("user", "Cancel ORD-1 please")]
    out1 = [
        {
            "role": "assistant",
            "parts": [
                {"type": "text", "content": "Let me look."},
                call("t1", "lookup", {"a": 1, "b": 2}),
            ],
        }
    ]
    resent = {
        "parts": [
            {"content": "Let me look.  ", "type": "text"},
            call(None, "lookup", '{"b": 2, "a": 1}'),
        ],
        "role": "assistant",
    }
    result = [{"type": "text", "text": '{"status": "processing"}'}]
    spans = [
        chat(1, 100, ask, out1, system=SYSTEM),
        chat(
            2,
            200,
            [*ask, resent, answer("t1", result, role="user")],
            [text("assistant", "Done.")],
            system=SYSTEM,
        ),
    ]
    (run,) = build_runs(spans)
    assert trace_ids(run) == [1, 2]
    (tool,) = run.tool_steps()
    assert tool.tool is not None
    # Text blocks are the string they spell: what the agent's tool returned.
    assert (tool.tool.call_id, tool.tool.result) == ("t1", '{"status": "processing"}')
    # A changed system prompt is another conversation.
    spans[1].attributes[A.SYSTEM_INSTRUCTIONS] = json.dumps([{"type": "text", "content": "Other."}])
    assert len(build_runs(spans)) == 2


def test_system_prompt_as_message_or_apart_is_the_same_conversation() -> None:
    ask = [text("user", "hi")]
    out = [text("assistant", "hello")]
    spans = [
        chat(1, 100, [text("system", SYSTEM), *ask], out),
        chat(2, 200, [*ask, *out, text("user", "bye")], [text("assistant", "bye")], system=SYSTEM),
    ]
    assert [trace_ids(r) for r in build_runs(spans)] == [[1, 2]]


def test_a_trace_with_its_own_agent_structure_is_not_stitched() -> None:
    pieces = conversation(1, "ORD-1")
    agent_trace = f"{2:032x}"
    # The second call sits in a trace with an agent span: that trace is a run of its own.
    second = pieces[1]
    agent = span_record(
        agent_trace, "a" * 16, None, 150, "invoke_agent x", {A.OPERATION_NAME: "invoke_agent"}
    )
    second.parent_span_id = "a" * 16
    runs = build_runs([pieces[0], agent, second, pieces[2]])
    assert sorted(trace_ids(r) for r in runs) == [[1], [2], [3]]


def test_real_tool_spans_win_over_derived_ones() -> None:
    trace = f"{5:032x}"
    ask = [text("user", "ORD-1?")]
    out1 = [
        {
            "role": "assistant",
            "parts": [call("c1", "lookup", {"id": 1}), call("c2", "lookup", {"id": 2})],
        }
    ]
    results = [answer("c1", "one"), answer("c2", "two")]

    def model(span_id: str, start: int, inputs: Any, outputs: Any) -> SpanRecord:
        attrs = {
            A.OPERATION_NAME: "chat",
            A.REQUEST_MODEL: "m",
            A.INPUT_MESSAGES: json.dumps(inputs),
            A.OUTPUT_MESSAGES: json.dumps(outputs),
        }
        return span_record(trace, span_id, "a" * 16, start, "chat m", attrs)

    tool_attrs = {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: "lookup",
        A.TOOL_CALL_ID: "c1",
        **to_attributes(A.TOOL_CALL_ARGUMENTS, {"id": 1}),
        **to_attributes(A.TOOL_CALL_RESULT, "one, exactly"),
    }
    spans = [
        span_record(
            trace, "a" * 16, None, 100, "invoke_agent x", {A.OPERATION_NAME: "invoke_agent"}
        ),
        model("b" * 16, 110, ask, out1),
        span_record(trace, "c" * 16, "a" * 16, 170, "execute_tool lookup", tool_attrs),
        model("d" * 16, 200, [*ask, *out1, *results], [text("assistant", "done")]),
    ]
    (run,) = build_runs(spans)
    tools = [s.tool for s in run.tool_steps() if s.tool]
    # c1 from its span (exact result), c2 derived and placed at the end of the call.
    assert [(t.call_id, t.result, t.derived) for t in tools] == [
        ("c2", "two", True),
        ("c1", "one, exactly", False),
    ]
    assert all(s.parent_span_id == "a" * 16 for s in run.tool_steps())
    # A tool span without a call id answers a call of its tool by name.
    del spans[2].attributes[A.TOOL_CALL_ID]
    (run,) = build_runs(spans)
    got = [(t.tool.arguments, t.tool.derived) for t in run.tool_steps() if t.tool]
    assert got == [({"id": 2}, True), ({"id": 1}, False)]


def test_calls_without_ids_are_answered_in_order() -> None:
    ask = [text("user", "two lookups")]
    out1 = [
        {
            "role": "assistant",
            "parts": [call(None, "lookup", {"id": 1}), call(None, "lookup", {"id": 2})],
        }
    ]
    spans = [
        chat(1, 100, ask, out1),
        chat(
            2,
            200,
            [*ask, *out1, answer(None, "one"), answer(None, "two")],
            [text("assistant", "ok")],
        ),
    ]
    (run,) = build_runs(spans)
    got = [(t.tool.arguments, t.tool.result) for t in run.tool_steps() if t.tool]
    assert got == [({"id": 1}, "one"), ({"id": 2}, "two")]


def test_no_later_answer_no_derived_step() -> None:
    ask = [text("user", "look it up")]
    out1 = [{"role": "assistant", "parts": [call("c1", "lookup", {"id": 1})]}]
    # The agent stopped after the call: nothing shows the result.
    (run,) = build_runs([chat(1, 100, ask, out1)])
    assert run.tool_steps() == [] and run.kit.verdict == "full"


def test_each_call_continues_at_most_one_conversation() -> None:
    # A second run of the same conversation whose first call was not recorded: its second
    # call continues trace 1 as well as trace 2 does, but trace 1 is taken.
    first = conversation(1, "ORD-1")
    again = conversation(4, "ORD-1", start=5000)
    runs = build_runs([*first, again[1], again[2]])
    assert sorted(trace_ids(r) for r in runs) == [[1, 2, 3], [5, 6]]


def test_output_call_ids_no_input_answers_take_the_id_the_next_call_sent() -> None:
    """OpenLLMetry's Responses spans: the item id (fc_...) where the call id belongs."""
    ask = [text("user", "Cancel both orders")]
    both = [call("fc_1", "cancel", {"id": "A"}), call("fc_2", "cancel", '{"id": "B"}')]
    out1 = [{"role": "assistant", "parts": both}]
    sent_back = {
        "role": "assistant",
        "parts": [call("call_a", "cancel", '{"id": "A"}'), call("call_b", "cancel", {"id": "B"})],
    }
    results = [answer("call_a", "ok A"), answer("call_b", "ok B")]
    done = [text("assistant", "Both cancelled.")]
    (run,) = build_runs(
        [chat(1, 1000, ask, out1), chat(2, 2000, [*ask, sent_back, *results], done)]
    )
    first = run.model_steps()[0]
    assert first.model is not None and first.model.output_messages is not None
    assert [p["id"] for p in first.model.output_messages[0]["parts"]] == ["call_a", "call_b"]
    assert "fc_1" in first.attributes[A.OUTPUT_MESSAGES]  # the span itself is left as recorded
    tools = [(s.tool.call_id, s.tool.result) for s in run.steps if s.tool is not None]
    assert tools == [("call_a", "ok A"), ("call_b", "ok B")]


def test_item_ids_everywhere_take_the_call_ids_of_their_results_in_order() -> None:
    """OpenLLMetry 0.62's Responses spans: item ids in the outputs and the inputs alike,
    call ids on the results only (from the conformance case openai_openllmetry/responses)."""
    ask = [text("user", "Cancel both orders")]
    both = [call("fc_1", "cancel", {"id": "A"}), call("fc_2", "cancel", {"id": "B"})]
    out1 = [{"role": "assistant", "parts": both}]
    results = [answer("call_a", "ok A"), answer("call_b", "ok B")]
    done = [text("assistant", "Both cancelled.")]
    (run,) = build_runs([chat(1, 1000, ask, out1), chat(2, 2000, [*ask, *out1, *results], done)])
    first = run.model_steps()[0]
    assert first.model is not None and first.model.output_messages is not None
    assert [p["id"] for p in first.model.output_messages[0]["parts"]] == ["call_a", "call_b"]
    tools = [(s.tool.call_id, s.tool.result) for s in run.steps if s.tool is not None]
    assert tools == [("call_a", "ok A"), ("call_b", "ok B")]
    # Two calls open and one result that answers none: nothing says which is which.
    one = [*ask, *out1, results[0]]
    (run,) = build_runs([chat(1, 1000, ask, out1), chat(2, 2000, one, done)])
    first = run.model_steps()[0]
    assert first.model is not None and first.model.output_messages is not None
    assert [p["id"] for p in first.model.output_messages[0]["parts"]] == ["fc_1", "fc_2"]


def test_a_call_id_is_kept_when_the_next_call_sent_another_call() -> None:
    ask = [text("user", "Cancel A")]
    out1 = [{"role": "assistant", "parts": [call("fc_1", "cancel", {"id": "A"})]}]
    other = {"role": "assistant", "parts": [call("call_x", "cancel", {"id": "Z"})]}
    second = chat(2, 2000, [*ask, other, answer("call_x", "ok")], [text("assistant", "Done.")])
    runs = build_runs([chat(1, 1000, ask, out1), second])
    outputs = [s.model.output_messages for r in runs for s in r.model_steps() if s.model]
    assert outputs[0] == out1


def test_calls_whose_output_was_not_recorded_are_stitched_by_the_turn_sent_back() -> None:
    spans = conversation(1, "ORD-1") + conversation(4, "ORD-2", start=1010)
    for span in spans:
        del span.attributes[A.OUTPUT_MESSAGES]
    runs = build_runs(shuffled(spans))
    assert [trace_ids(r) for r in runs] == [[1, 2, 3], [4, 5, 6]]
    for run, prompt in zip(runs, ("ORD-1", "ORD-2"), strict=True):
        tools = [(s.tool.tool_name, s.tool.arguments) for s in run.steps if s.tool is not None]
        assert tools == [("lookup", {"id": prompt}), ("cancel", {"id": prompt})]
        assert run.kit.verdict == "model-only"
        assert "steps[4].output_messages" in run.kit.missing  # the last answer: nowhere


def test_a_call_without_output_is_not_stitched_to_a_call_that_skips_a_turn() -> None:
    ask = [text("user", "Cancel A")]
    turn = {"role": "assistant", "parts": [call("c1", "cancel", {"id": "A"})]}
    other = {"role": "assistant", "parts": [text("assistant", "x")["parts"][0]]}
    later = [*ask, turn, answer("c1", "ok"), other, text("user", "and B?")]
    runs = build_runs([chat(1, 1000, ask, None), chat(2, 2000, later, [text("assistant", "B?")])])
    assert [trace_ids(r) for r in runs] == [[1], [2]]


def traced_twice(spans: list[SpanRecord]) -> list[SpanRecord]:
    """Each call also recorded by a second tracer inside the first (the Anthropic SDK's own)."""
    out = []
    for i, outer in enumerate(spans):
        attrs = {k: v for k, v in outer.attributes.items() if k != A.OUTPUT_MESSAGES}
        attrs[A.RESPONSE_ID] = f"msg_{i}"
        attrs.pop(A.REQUEST_MODEL)
        inner = span_record(
            outer.trace_id,
            f"{0xABC0 + i:016x}",
            outer.span_id,
            outer.start_ns + 5,
            "anthropic.messages.create",
            attrs,
            duration=40,
            resource=outer.resource,
        )
        out += [outer, inner]
    return out


def test_a_call_traced_by_two_tracers_is_one_model_step() -> None:
    (run,) = build_runs(shuffled(traced_twice(conversation(1, "ORD-1"))))
    models = run.model_steps()
    assert len(models) == 3
    assert [m.model.response_id for m in models if m.model] == ["msg_0", "msg_1", "msg_2"]
    assert all(m.model and m.model.request_model == "gpt-4o-mini" for m in models)
    assert all(m.name == "chat gpt-4o-mini" for m in models)  # the richer, outer span
    twins = [s for s in run.steps if s.duplicate_of]
    assert [(s.kind, s.duplicate_of) for s in twins] == [("other", m.span_id) for m in models]
    assert f"same call as span {models[0].span_id}, traced twice" in step_line(twins[0])
    assert run.to_json()["steps"][twins[0].index]["duplicate_of"] == models[0].span_id
    tools = [s.tool.tool_name for s in run.steps if s.tool is not None]
    assert tools == ["lookup", "cancel"]
    assert run.kit.verdict == "model-only"


def test_two_calls_with_different_requests_stay_two_model_steps() -> None:
    ask = [text("user", "Cancel A")]
    outer = chat(1, 1000, ask, [text("assistant", "Done.")])
    inner = span_record(
        outer.trace_id,
        "00000000000000ff",
        outer.span_id,
        1005,
        "chat",
        {**outer.attributes, A.INPUT_MESSAGES: json.dumps([text("user", "Cancel B")])},
    )
    (run,) = build_runs([outer, inner])
    assert len(run.model_steps()) == 2 and not any(s.duplicate_of for s in run.steps)
