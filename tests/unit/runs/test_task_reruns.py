"""Client-only traces of a framework's own ways: answers sent back with their calls alone,
and a task run again from its first request after a model call failed (CrewAI does both;
its async crews traced by OpenInference have no span around them).

The real trace is the corpus's ``crewai/async_stream@seed-14``; these tests draw the
class: conversations of several turns, text beside calls or not, attempts that fail at any
turn, other conversations of the same and other processes between them.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.otlp.records import SpanRecord
from otel_replay.runs.build import build_runs
from otel_replay.runs.verdict import outcome
from tests.fixtures.data import ROOT
from tests.unit.runs.test_stitch import answer, call, chat, text, trace_ids

_words = st.text("abc xyz€é", min_size=1, max_size=8)


@dataclasses.dataclass
class Drawn:
    """One conversation: per turn, the text beside its calls (None: none) and the number
    of calls; the last turn answers."""

    prompt: str
    turns: list[tuple[str | None, int]]
    calls_alone: list[bool]  # per turn: sent back with its calls alone


def _conversation(draw: st.DrawFn, prompt: str) -> Drawn:
    n = draw(st.integers(1, 3))
    turns = [(draw(st.none() | _words), draw(st.integers(1, 2))) for _ in range(n)]
    return Drawn(prompt, turns, [draw(st.booleans()) for _ in range(n)])


def _spans(
    c: Drawn,
    first_trace: int,
    start: int,
    *,
    process: str = "p1",
    fail_at: int | None = None,
    gap: int = 100,
) -> list[SpanRecord]:
    """The model calls of ``c`` (through the turn ``fail_at``, which fails), one trace each."""
    sent: list[dict[str, Any]] = [text("system", "Be brief."), text("user", c.prompt)]
    out: list[SpanRecord] = []
    for k, (said, n) in enumerate(c.turns):
        calls = [call(f"c{k}{j}", "lookup", {"id": c.prompt, "n": j}) for j in range(n)]
        parts = ([{"type": "text", "content": said}] if said else []) + calls
        reply = [{"role": "assistant", "parts": parts}]
        out.append(chat(first_trace + k, start + k * gap, list(sent), reply, process=process))
        if k == fail_at:
            return _failed(out)
        back = [{"role": "assistant", "parts": calls}] if c.calls_alone[k] else reply
        sent += [*back, *(answer(f"c{k}{j}", f"r{j}") for j in range(n))]
    last = len(c.turns)
    done = [text("assistant", "done")]
    out.append(chat(first_trace + last, start + last * gap, sent, done, process=process))
    return _failed(out) if fail_at == last else out


def _failed(spans: list[SpanRecord]) -> list[SpanRecord]:
    """``spans``, the last of them a call that failed partway (its output not recorded)."""
    spans[-1].status_code, spans[-1].status_message = 2, "peer closed connection"
    spans[-1].attributes.pop("gen_ai.output.messages", None)
    return spans


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_answers_sent_back_with_their_calls_alone_continue_their_conversation(
    data: st.DataObject,
) -> None:
    a = _conversation(data.draw, "ORD-1")
    b = _conversation(data.draw, "ORD-2")
    spans = _spans(a, 10, 1000) + _spans(b, 30, 1050)
    runs = build_runs(spans)
    assert sorted(trace_ids(r) for r in runs) == [
        list(range(10, 11 + len(a.turns))),
        list(range(30, 31 + len(b.turns))),
    ]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_a_task_run_again_after_a_failed_call_is_one_run(data: st.DataObject) -> None:
    c = _conversation(data.draw, "ORD-1")
    failures = data.draw(st.lists(st.integers(0, len(c.turns)), min_size=1, max_size=3))
    spans: list[SpanRecord] = []
    expected: list[int] = []
    start, trace = 1000, 100
    for fail_at in [*failures, None]:  # each attempt fails at a turn, the last answers
        attempt = _spans(c, trace, start, fail_at=fail_at)
        spans += attempt
        expected += [int(s.trace_id, 16) for s in attempt]
        start, trace = start + 1000, trace + 100
    # Another question in the same process, and the same one in another: apart.
    other = _spans(_conversation(data.draw, "ORD-2"), 900, 1010)
    elsewhere = _spans(c, 950, 1020, process="p2")
    runs = build_runs(data.draw(st.permutations(spans + other + elsewhere)))
    assert sorted(trace_ids(r) for r in runs) == sorted(
        [expected, [int(s.trace_id, 16) for s in other], [int(s.trace_id, 16) for s in elsewhere]]
    )
    (joined,) = [r for r in runs if trace_ids(r) == expected]
    # A first call that failed is an attempt of the rerun's first call, the same request;
    # a later one, a model call that failed.
    failed = [s for s in joined.model_steps() if s.status == "ERROR"]
    assert len(failed) == sum(1 for f in failures if f > 0)
    attempts = [s for s in joined.steps if s.retried_as is not None]
    assert len(attempts) == failures.count(0)
    assert not outcome(joined).raised


@settings(max_examples=30, deadline=None)
@given(st.data())
def test_the_same_request_again_after_an_answer_is_another_run(data: st.DataObject) -> None:
    c = _conversation(data.draw, "ORD-1")
    first = _spans(c, 100, 1000)
    again = _spans(c, 200, 2000)
    runs = build_runs(first + again)
    assert sorted(trace_ids(r) for r in runs) == [
        [int(s.trace_id, 16) for s in first],
        [int(s.trace_id, 16) for s in again],
    ]


def test_crewai_async_run_again_after_a_cut_rebuilds_as_one_run() -> None:
    """CrewAI 1.x under asyncio, traced by OpenInference (no span around the crew), its
    answer cut partway at the third model call: the task run again is the same run."""
    case = ROOT / "tests/conformance/cases/crewai/async_stream@seed-14"
    server = [json.loads(line) for line in (case / "server.jsonl").read_text("utf-8").splitlines()]
    # The requests answered, the one cut partway among them (an attempt failed before any
    # byte was retried by the SDK: the retry is the model call).
    answered = [r for r in server if not r.get("failed") or r.get("cut") in ("stream", "body")]
    (run,) = otel_replay.load(case / "traces.binpb")
    assert len(run.model_steps()) == len(answered)
    assert len(run.tool_steps()) == 6
