"""An ``ls`` line's verdict, made without the kit's run-wide lists, is the kit's: on every
recorded trace we hold and on damaged copies of them (cut, bytes changed, a digest off)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.payload.attributes import Payload
from otel_replay.runs.derived_tools import unverified
from otel_replay.runs.kit import kit_verdict
from otel_replay.runs.load import read_runs
from otel_replay.runs.model import ModelCall, Run, Step, ToolCall
from tests.fixtures.data import DATA, TESTS, found

#: The trace files of JSON lines in the test data (others hold logs, or what servers got).
TRACE_LINES = found(DATA, "**/*trace*.jsonl")
#: Every trace file of the test data and of the conformance cases.
TRACES = [
    *found(DATA, "**/*.binpb"),
    *TRACE_LINES,
    *found(TESTS / "conformance" / "cases", "**/*.binpb"),
]


def _verdicts(
    path: Path,
) -> list[tuple[tuple[str, bool, str | None], tuple[str, bool, str | None]]]:
    """Each run's verdict made alone, then the whole kit's."""
    out = []
    for run in read_runs([str(path)]):
        alone = kit_verdict(run)
        assert run.checked_kit is None  # nothing partial is kept as the run's kit
        out.append((alone, (run.kit.verdict, run.kit.replayable, run.kit.replay_problem)))
        assert kit_verdict(run) == out[-1][1]  # once checked, the kit's own
    return out


def _damaged(data: bytes, how: str, at: float, byte: int) -> bytes:
    where = int(at * len(data))
    if how == "cut":
        return data[:where]
    if how == "byte":
        return data[:where] + bytes([byte]) + data[where + 1 :]
    # A digest or other hex text off by one character: the content no longer matches it.
    hexdigits = b"0123456789abcdef"
    for i in range(where, len(data)):
        if data[i] in hexdigits:
            other = hexdigits[(hexdigits.index(data[i]) + 1) % 16]
            return data[:i] + bytes([other]) + data[i + 1 :]
    return data


def test_every_recorded_trace() -> None:
    for path in TRACES:
        for alone, whole in _verdicts(path):
            assert alone == whole, path


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    path=st.sampled_from(TRACES),
    how=st.sampled_from(["cut", "byte", "hex"]),
    at=st.floats(0, 1, exclude_max=True),
    byte=st.integers(0, 255),
)
def test_damaged_copies(tmp_path: Path, path: Path, how: str, at: float, byte: int) -> None:
    copy = Path(tempfile.mkdtemp(dir=tmp_path)) / path.name
    copy.write_bytes(_damaged(path.read_bytes(), how, at, byte))
    for alone, whole in _verdicts(copy):
        assert alone == whole


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    paths=st.lists(st.sampled_from(TRACE_LINES), min_size=1, max_size=3),
    at=st.floats(0, 1, exclude_max=True),
    keep=st.floats(0.05, 0.95),
)
def test_a_line_cut_short_among_runs(
    tmp_path: Path, paths: list[Path], at: float, keep: float
) -> None:
    """Every run of the file is blamed for the records the cut line held."""
    lines = [line.rstrip(b"\n") + b"\n" for p in paths for line in p.read_bytes().splitlines()]
    i = int(at * len(lines))
    cut = lines[i][: max(1, int(keep * len(lines[i])) - 1)] + b"\n"
    copy = Path(tempfile.mkdtemp(dir=tmp_path)) / "runs.jsonl"
    copy.write_bytes(b"".join([*lines[:i], cut, *lines[i:]]))
    verdicts = _verdicts(copy)
    assert verdicts  # the whole lines give their runs
    for alone, whole in verdicts:
        assert alone == whole


def _payload(value: Any, state: str) -> Payload | None:
    if state == "none":
        return None
    p = unverified(value)
    return p if state == "ok" else Payload(p.type, None, "0" * 64, "missing", "gone")


text = st.sampled_from(["go", "", "<replaced>", "__REDACTED__"])
tool_step = st.tuples(
    st.just("tool"),
    st.sampled_from(["c0", "c1", "c2", None]),  # the call it answers
    st.sampled_from(["ok", "none", "missing"]),  # its arguments
    st.sampled_from(["ok", "none", "missing"]),  # its result
    st.booleans(),  # failed
)
model_step = st.tuples(
    st.just("model"),
    st.lists(st.sampled_from(["c0", "c1", "c2"]), max_size=2),  # the calls it makes
    text,  # its input's text
    st.sampled_from(["ok", "none", "missing", "nothing"]),  # its output
    st.booleans(),  # failed
)


def _step(i: int, drawn: tuple[Any, ...]) -> Step:
    kind = drawn[0]
    step = Step(kind, kind, f"s{i}", "root", "t", i * 10, i * 10 + 5)
    if drawn[-1]:
        step.status = "ERROR"
    if kind == "tool":
        _, call, args, result, _ = drawn
        value = {"q": "<replaced>"} if call == "c2" else {"q": 1}
        step.tool = ToolCall("lookup", call, value, value)
        step.tool.arguments_payload = _payload(value, args)
        step.tool.result_payload = _payload(value, result)
        return step
    _, calls, said, output, _ = drawn
    inputs = [{"role": "user", "parts": [{"type": "text", "content": said}]}]
    parts = [{"type": "tool_call", "id": c, "name": "lookup", "arguments": {"q": 1}} for c in calls]
    answer = [{"role": "assistant", "parts": parts or [{"type": "text", "content": "done"}]}]
    step.model = ModelCall(
        provider="p",
        request_model="m",
        input_messages=inputs,
        output_messages=None if output in ("none", "missing") else answer,
        input_payload=unverified(inputs),
        output_payload=None if output == "none" else _payload(answer, output),
    )
    if output == "nothing":
        step.model.output_messages = [{"role": "assistant", "parts": []}]
    return step


@settings(max_examples=300, deadline=None)
@given(drawn=st.lists(st.one_of(tool_step, model_step), max_size=8))
def test_drawn_runs(drawn: list[tuple[Any, ...]]) -> None:
    """Runs of model calls and tool steps, each call answered or not, each payload there,
    absent or missing, content left out, calls failed: the kit's verdict, each time."""
    root = Step("agent", "invoke_agent a", "root", None, "t", 0, 10**6)
    steps = [root, *(_step(i, d) for i, d in enumerate(drawn, start=1))]
    root.children = steps[1:]
    for index, s in enumerate(steps):
        s.index = index
    run = Run("t", ["t"], [root], steps)
    alone = kit_verdict(run)
    assert run.checked_kit is None
    assert alone == (run.kit.verdict, run.kit.replayable, run.kit.replay_problem)
