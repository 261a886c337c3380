"""The registry of repairs run as runs are built: one ordered list per stage, each with why."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.runs import build, repairs
from otel_replay.runs.repairs import (
    JOINED_REPAIRS,
    RUN_REPAIRS,
    TRACE_REPAIRS,
    Repair,
    Steps,
    apply_repairs,
)
from tests.fixtures.records import span_record


def test_each_repair_is_listed_once_with_its_why() -> None:
    listed = [*TRACE_REPAIRS, *JOINED_REPAIRS, *RUN_REPAIRS]
    assert len({r.name for r in listed}) == len(listed)
    for repair in listed:
        assert repair.why and "\n" not in repair.why
    # One repair of a run adds steps, the tool steps derived from messages: the order is
    # then made once.  Those after it read them from the tree (the given steps are
    # the ones before), and only rename ids.
    assert [r.name for r in RUN_REPAIRS if r.adds_steps] == ["derived_tools"]
    after = [r.name for r in RUN_REPAIRS][
        [r.name for r in RUN_REPAIRS].index("derived_tools") + 1 :
    ]
    assert after == ["made_ids", "given_ids"]


@given(changed=st.lists(st.tuples(st.integers(0, 3), st.booleans()), max_size=6))
def test_apply_repairs_runs_in_order_and_says_when_steps_were_added(
    changed: list[tuple[int, bool]],
) -> None:
    seen: list[int] = []

    def make(i: int, n: int, adds: bool) -> Repair:
        def apply(given: Steps) -> int:
            seen.append(i)
            return n

        return Repair(f"r{i}", "why", apply, adds_steps=adds)

    listed = [make(i, n, adds) for i, (n, adds) in enumerate(changed)]
    added = apply_repairs(listed, Steps([], []))
    assert seen == list(range(len(changed)))
    assert added == any(n > 0 and adds for n, adds in changed)


def _recording(into: list[list[str]]) -> Repair:
    def apply(given: Steps) -> int:
        into.append(sorted(s.span_id for s in given.steps))
        return 0

    return Repair("record", "seen", apply)


@settings(max_examples=20, deadline=None)
@given(traces=st.integers(1, 4), spans=st.integers(1, 3))
def test_build_runs_applies_both_lists_to_every_trace_and_run(traces: int, spans: int) -> None:
    """Each trace's steps go through the trace repairs, each run's through the run repairs."""
    trace_calls: list[list[str]] = []
    run_calls: list[list[str]] = []
    records = [
        span_record(f"{t + 1:032x}", f"{t * 10 + s + 1:016x}", None, 100 * t + s, f"op{s}", {})
        for t in range(traces)
        for s in range(spans)
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "TRACE_REPAIRS", (_recording(trace_calls),))
        patch.setattr(build, "RUN_REPAIRS", (_recording(run_calls),))
        runs = build.build_runs(records)
    assert len(runs) == traces
    expected = sorted(sorted(s.span_id for s in r.steps) for r in runs)
    assert sorted(trace_calls) == expected and sorted(run_calls) == expected


def test_the_builder_uses_the_registry() -> None:
    assert build.TRACE_REPAIRS is repairs.TRACE_REPAIRS
    assert build.RUN_REPAIRS is repairs.RUN_REPAIRS
