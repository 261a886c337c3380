"""The anomalies found when each tool call's arguments are encoded once are the anomalies
found when the repeats and the loops each encoded them as text of their own."""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.payload import codec as payload
from otel_replay.runs import anomalies
from otel_replay.runs.model import ModelCall, Run, Step, ToolCall, ToolError

#: Arguments that are the same call in another key order, or differ in one value or type.
ARGUMENTS: list[Any] = [
    {"q": "order", "n": 1},
    {"n": 1, "q": "order"},
    {"q": "order", "n": 1.0},
    {"q": "order", "n": True},
    {"q": "order", "n": [1, {"b": 2, "a": None}]},
    {"q": "order", "n": [1, {"a": None, "b": 2}]},
    ["order", 1],
    "order",
    None,
    {},
]


def old_signature(step: Step, arguments: Mapping[int, str] | None = None) -> tuple[str, str, str]:
    """What the repeats compared before: the arguments encoded for each comparison."""
    if step.tool is not None:
        return ("tool", step.tool.tool_name, payload.canonical(payload.plain(step.tool.arguments)))
    m = step.model
    request = payload.canonical(payload.plain(anomalies.M.normalize(m.input_messages or [])))
    return ("model", (m.request_model or "") if m else "", request)


def old_answer(step: Step, arguments: Mapping[int, str] | None = None) -> Hashable:
    """What the loops compared before: one text of the tool's name and arguments."""
    if step.tool is not None:
        return "tool " + payload.canonical(
            [step.tool.tool_name, payload.plain(step.tool.arguments)]
        )
    m = step.model
    if m is None or not m.output_messages:
        return f"model {step.name}"
    calls = [
        [c.get("name"), payload.plain(c.get("arguments"))]
        for c in anomalies.M.tool_calls(m.output_messages)
    ]
    return "model " + payload.canonical(calls or anomalies.M.last_text(m.output_messages) or "")


def _tool(i: int, name: str, args: Any, failed: bool) -> Step:
    step = Step("tool", f"execute_tool {name}", f"s{i}", "root", "t", i * 10, i * 10 + 5)
    step.tool = ToolCall(name, f"c{i}", args, {"ok": True})
    if failed:
        step.status = "ERROR"
        step.tool.error = ToolError("ValueError", "no")
    return step


def _model(i: int, calls: list[tuple[str, Any]], failed: bool) -> Step:
    step = Step("model", "chat", f"s{i}", "root", "t", i * 10, i * 10 + 5)
    parts: list[dict[str, Any]] = [
        {"type": "tool_call", "id": f"m{i}.{k}", "name": n, "arguments": a}
        for k, (n, a) in enumerate(calls)
    ] or [{"type": "text", "content": "done"}]
    step.model = ModelCall(
        request_model="m",
        input_messages=[{"role": "user", "parts": [{"type": "text", "content": "go"}]}],
        output_messages=[{"role": "assistant", "parts": parts}],
    )
    if failed:
        step.status = "ERROR"
    return step


call = st.tuples(st.sampled_from(["lookup", "refund"]), st.sampled_from(ARGUMENTS))
step = st.one_of(
    st.tuples(st.just("tool"), call, st.booleans()),
    st.tuples(st.just("model"), st.lists(call, max_size=2), st.booleans()),
)


def _run(drawn: list[tuple[str, Any, bool]]) -> Run:
    root = Step("agent", "invoke_agent a", "root", None, "t", 0, 10**6)
    steps = [root]
    for i, (kind, what, failed) in enumerate(drawn, start=1):
        made = _tool(i, *what, failed) if kind == "tool" else _model(i, what, failed)
        root.children.append(made)
        steps.append(made)
    for index, s in enumerate(steps):
        s.index = index
    return Run("t", ["t"], [root], steps)


@settings(max_examples=300, deadline=None)
@given(
    drawn=st.one_of(
        st.lists(step, max_size=14),
        # A block drawn once and repeated back to back: loops of every period.
        st.tuples(st.lists(step, min_size=1, max_size=4), st.integers(1, 4)).map(
            lambda b: b[0] * b[1]
        ),
    )
)
def test_the_findings_are_those_of_each_comparison_encoding_its_own(
    drawn: list[tuple[str, Any, bool]],
) -> None:
    run = _run(drawn)
    found = anomalies.find_anomalies(run)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(anomalies, "_signature", old_signature)
        patch.setattr(anomalies, "_answer", old_answer)
        before = anomalies.find_anomalies(run)
    assert found == before


def every_period(keys: list[Hashable], repeats: int, max_period: int) -> list[tuple[int, int, int]]:
    """The loop search by its definition: at each place, every period tried in turn, its
    repetitions counted key by key."""

    def again(i: int, period: int, reps: int) -> bool:
        start = i + reps * period
        return start + period <= len(keys) and all(
            keys[start + k] == keys[i + k] for k in range(period)
        )

    found = []
    i = 0
    while i < len(keys):
        for period in range(1, min(max_period, (len(keys) - i) // max(repeats, 2)) + 1):
            reps = 1
            while again(i, period, reps):
                reps += 1
            if reps >= repeats and period * reps >= 2 * max(period, 2):
                found.append((i, period, reps))
                i += period * reps
                break
        else:
            i += 1
    return found


#: Keys as the loop search gets them: a model's answer (text), a tool's call (a tuple).
loop_key = st.one_of(
    st.sampled_from(["model a", "model b", "model [1]"]),
    st.tuples(st.just("tool"), st.sampled_from(["lookup", "refund"]), st.sampled_from("xy")),
)


@settings(max_examples=500, deadline=None)
@given(
    keys=st.one_of(
        st.lists(loop_key, max_size=60),
        # Blocks repeated back to back, with strays between them: loops of every period,
        # some longer than the longest looked for.
        st.lists(
            st.tuples(st.lists(loop_key, min_size=1, max_size=14), st.integers(1, 5)),
            max_size=5,
        ).map(lambda blocks: [k for block, times in blocks for k in block * times]),
    ),
    repeats=st.integers(1, 4),
    max_period=st.integers(0, 13),
)
def test_the_loop_search_finds_what_trying_every_period_finds(
    keys: list[Hashable], repeats: int, max_period: int
) -> None:
    assert list(anomalies.loop_blocks(keys, repeats, max_period)) == every_period(
        keys, repeats, max_period
    )
