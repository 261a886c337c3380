"""Which model siblings overlap a model step in time: the only ones that may record its call
a second time (see :mod:`otel_replay.runs.double_spans`)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from otel_replay.runs.double_spans import _Overlapping
from otel_replay.runs.model import Step

#: (start, duration, is a model step): small numbers, so that equal starts and ends,
#: zero-length spans and spans that touch without overlapping are all common.
CHILDREN = st.lists(
    st.tuples(st.integers(0, 12), st.integers(0, 6), st.booleans()), min_size=1, max_size=12
)


def _step(kind: str, start: int, end: int, n: int) -> Step:
    return Step(kind, "s", f"{n:016x}", "p" * 16, "t" * 32, start, end)  # type: ignore[arg-type]


@given(CHILDREN)
def test_the_siblings_a_step_overlaps_are_those_whose_time_it_shares(
    children: list[tuple[int, int, bool]],
) -> None:
    """Children that run one after another (each starts once all before it ended) are told
    apart without a search; any other order is searched.  Both give every model sibling
    whose time overlaps the step's, and no other."""
    parent = _step("agent", 0, 100, 999)
    parent.children = [
        _step("model" if model else "tool", start, start + length, n)
        for n, (start, length, model) in enumerate(children)
    ]
    siblings = _Overlapping()
    models = [c for c in parent.children if c.kind == "model"]
    for step in models:
        found = [c for c in siblings.of(parent, step) if c is not step]
        expected = [
            c
            for c in models
            if c is not step and c.start_ns < step.end_ns and c.end_ns > step.start_ns
        ]
        assert sorted(map(id, found)) == sorted(map(id, expected))
