"""Stored spans become runs: dedupe, any arrival order, missing parents, kit verdicts."""

from __future__ import annotations

import random
from typing import Any

from otel_replay import attributes as A
from otel_replay.payload_attributes import to_attributes
from otel_replay.runs.build import build_runs
from otel_replay.store.records import SpanRecord

TRACE = "0af7651916cd43dd8448eb211c80319c"


def span(span_id: str, parent: str | None, start: int, name: str, **attrs: Any) -> SpanRecord:
    return SpanRecord(
        trace_id=TRACE,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=1,
        start_ns=start,
        end_ns=start + 10,
        attributes=attrs,
        events=[],
        status_code=0,
        status_message="",
        resource={"service.name": "t"},
        scope_name="s",
        scope_version="",
        source="f.otlp",
    )


def tool_attrs(name: str, args: Any, result: Any) -> dict[str, Any]:
    return {
        A.OPERATION_NAME: "execute_tool",
        A.TOOL_NAME: name,
        **to_attributes(A.TOOL_CALL_ARGUMENTS, args),
        **to_attributes(A.TOOL_CALL_RESULT, result),
    }


def model_attrs(text: str) -> dict[str, Any]:
    return {
        A.OPERATION_NAME: "chat",
        "gen_ai.system": "openai",
        A.REQUEST_MODEL: "m",
        **to_attributes(
            A.INPUT_MESSAGES, [{"role": "user", "parts": [{"type": "text", "content": "q"}]}]
        ),
        **to_attributes(
            A.OUTPUT_MESSAGES, [{"role": "assistant", "parts": [{"type": "text", "content": text}]}]
        ),
    }


def spans() -> list[SpanRecord]:
    return [
        span(
            "a" * 16,
            None,
            100,
            "invoke_agent x",
            **{A.OPERATION_NAME: "invoke_agent", A.FP_COMMIT: "c0ffee"},
        ),
        span("b" * 16, "a" * 16, 110, "chat m", **model_attrs("calling")),
        span("c" * 16, "a" * 16, 120, "execute_tool t", **tool_attrs("t", {"x": 1}, [1, 2])),
        span("d" * 16, "c" * 16, 121, "db query"),
        span("e" * 16, "a" * 16, 130, "chat m", **model_attrs("done")),
    ]


def shape(run: Any) -> list[tuple[int, str, str, int]]:
    return [(s.index, s.kind, s.span_id[0], s.depth) for s in run.steps]


def test_tree_in_start_order_whatever_the_arrival_order() -> None:
    expected = [
        (0, "agent", "a", 0),
        (1, "model", "b", 1),
        (2, "tool", "c", 1),
        (3, "other", "d", 2),
        (4, "model", "e", 1),
    ]
    for seed in range(10):
        shuffled = spans()
        random.Random(seed).shuffle(shuffled)
        (run,) = build_runs(shuffled)
        assert shape(run) == expected
    (run,) = build_runs(spans())
    assert run.fingerprint["commit"] == "c0ffee"
    assert (
        run.steps[1].model is not None and run.steps[1].model.provider == "openai"
    )  # legacy gen_ai.system
    assert run.final_output() == "done"


def test_spans_exported_twice_count_once() -> None:
    doubled = spans() + spans()
    doubled[-1] = span("e" * 16, "a" * 16, 130, "chat m")  # a poorer duplicate loses
    (run,) = build_runs(doubled)
    assert len(run.steps) == 5
    assert run.steps[4].model is not None and run.steps[4].model.output_messages is not None


def test_missing_parent_keeps_the_orphan_as_a_root() -> None:
    orphaned = [s for s in spans() if s.span_id != "c" * 16]  # the tool span never arrived
    (run,) = build_runs(orphaned)
    assert len(run.steps) == 4
    assert [r.span_id[0] for r in run.roots] == ["a", "d"]


def test_kit_verdicts() -> None:
    (full,) = build_runs(spans())
    assert full.kit.verdict == "full" and full.replayable
    assert "tenant.id" in full.kit.missing and "commit" not in full.kit.missing

    no_result = spans()
    attrs = dict(no_result[2].attributes)
    for key in [k for k in attrs if k.endswith(A.TOOL_CALL_RESULT)]:
        del attrs[key]
    no_result[2] = span("c" * 16, "a" * 16, 120, "execute_tool t", **attrs)
    (model_only,) = build_runs(no_result)
    assert model_only.kit.verdict == "model-only" and not model_only.replayable
    assert "steps[2].result" in model_only.kit.missing

    truncated = spans()
    attrs = dict(truncated[2].attributes)
    attrs[A.TOOL_CALL_RESULT] = attrs[A.TOOL_CALL_RESULT][:3]
    truncated[2] = span("c" * 16, "a" * 16, 120, "execute_tool t", **attrs)
    (bad,) = build_runs(truncated)
    assert not bad.replayable
    assert any("step 2 (tool t" in p and "not byte-exact" in p for p in bad.kit.problems)

    cold = [
        span(
            s.span_id,
            s.parent_span_id,
            s.start_ns,
            s.name,
            **{A.CONTENT: "NO_CONTENT", A.OPERATION_NAME: s.attributes.get(A.OPERATION_NAME, "")},
        )
        for s in spans()
    ]
    (inspect_only,) = build_runs(cold)
    assert inspect_only.kit.verdict == "inspect-only" and not inspect_only.replayable


def test_two_traces_are_two_runs() -> None:
    other = [span("f" * 16, None, 50, "invoke_agent y")]
    other[0].trace_id = "1" * 32
    runs = build_runs(spans() + other)
    assert [r.run_id for r in runs] == ["1" * 32, TRACE]  # sorted by start time
