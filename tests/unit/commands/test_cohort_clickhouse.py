"""``otel-replay cohort`` over a ClickHouse table, in embedded ClickHouse (chdb).

The table holds the order-support agent's runs (``test_cohort``'s fixture)
beside another stack's traces, as the Collector's clickhouseexporter writes
them.  The cohort a table gives, for each filter (computed in ClickHouse) and
for a seeded sample, is the cohort a file of the same spans gives, with the
same outcomes; the candidates are the example agent and its fix, against the
pinned model.  The chdb tier: ``pytest -m chdb`` in the environment with chdb.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from unittest.mock import patch

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.commands.clickhouse_summary import drawn_summaries, sql_summaries
from otel_replay.commands.draw import Draw, drawn
from otel_replay.commands.listing import COMPUTED_DRAWS, drawn_listing, listed, run_filter
from otel_replay.runs.summary import Filter, RunSummary, select
from otel_replay.sources.reader import RecordReader
from otel_replay.sources.source import CLICKHOUSE
from tests.conformance.checks import find_cases
from tests.fixtures.cli import cli_process
from tests.fixtures.clickhouse import fill
from tests.unit.commands.test_cohort import QUESTIONS, cohort, cohort_cli
from tests.unit.sources.test_clickhouse import _random_runs

pytestmark = pytest.mark.chdb
__all__ = ["cohort"]  # the recorded runs, a fixture shared with test_cohort

AGENTS = (
    *("--agent", "examples.order_support.agent:run_agent"),
    *("--agent", "tests.fixtures.cohort_agents:fixed_agent"),
    *("--kwarg", "user_id=@user.id"),
)


@pytest.fixture(scope="module")
def table(cohort: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """The table, and a file of the spans it holds (as ``convert`` reads them back)."""
    other = next(c for c in find_cases() if c.id == "openai_agents_otel/two_runs")
    files = [cohort, *other.trace_files()]
    where = tmp_path_factory.mktemp("cohort-table")
    name = fill(where / "db", [r for f in files for r in RecordReader(str(f))])
    dump = where / "same.binpb"
    assert cli_process("convert", name, "-o", str(dump)).returncode == 0
    return name, dump


@pytest.fixture(scope="module")
def mixed(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A table of 60 random runs of every shape ``check`` tells apart (some summarized by
    ClickHouse, some left to the reader), beside another stack's traces (the reader's)."""
    other = next(c for c in find_cases() if c.id == "openai_agents_otel/two_runs")
    records = [
        *_random_runs(5, 60),
        *(r for f in other.trace_files() for r in RecordReader(str(f))),
    ]
    return fill(tmp_path_factory.mktemp("draw-table") / "db", records)


def _cohort(*args: str | Path) -> dict[str, Any]:
    code, out, err = cohort_cli(*args, "--json")
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out)
    return doc


def _said(doc: dict[str, Any]) -> list[Any]:
    """Each run and what each candidate did with it, times and trace ids aside."""
    return [
        (
            r["run_id"],
            r["skipped"],
            [(o["outcome"], o["detail"], o["divergence"], o["answer"]) for o in r["outcomes"]],
        )
        for r in doc["runs"]
    ]


@pytest.mark.parametrize(
    "filters",
    [
        [],
        ["--agent-name", "order"],
        ["--error"],
        ["--tool", "lookup_order"],
        ["--replayable"],
        ["--since", "1h"],
        ["--sample", "3", "--seed", "11"],
        ["--replayable", "--sample", "2", "--seed", "3", "--limit", "1"],
    ],
)
def test_a_table_gives_the_cohort_and_outcomes_a_file_of_its_spans_gives(
    filters: list[str], table: tuple[str, Path]
) -> None:
    name, dump = table
    from_table = _cohort(name, *AGENTS, *filters)
    assert _said(from_table) == _said(_cohort(dump, *AGENTS, *filters))
    assert from_table["cohort"]["sources"] == [name]
    if filters[:1] in ([], ["--agent-name"], ["--replayable"], ["--tool"]) and len(filters) < 3:
        runs = [r for r in from_table["runs"] if r["agent"] == "order_support"]
        replayed = [r for r in runs if not r["skipped"]]
        assert len(replayed) == len(QUESTIONS)
        for run in replayed:
            unchanged, fixed = run["outcomes"]
            assert unchanged["outcome"] == "same"
            assert fixed["outcome"] == "other_path" and fixed["divergence"]["step"] == 2
    if "--sample" in filters:
        assert from_table["cohort"]["seed"] is not None


# --- the draw, in ClickHouse's query -------------------------------------------------------

#: The filters ``cohort`` takes, as ``ls`` options: (agent, since, error, tools, replayable).
_FILTERS = [
    run_filter(None, None, False, (), False),
    run_filter(None, None, True, (), False),
    run_filter("supp", None, False, (), False),
    run_filter(None, None, False, ("lookup",), False),
    run_filter(None, None, False, (), True),
    run_filter(None, "1h", False, (), False),
]


def _run_id(summary: RunSummary) -> str:
    return summary.run_id


#: The listing of ``mixed`` by filter, and the runs of it ClickHouse summarizes.
_LISTED: dict[Filter, tuple[list[RunSummary], list[RunSummary]]] = {}


def _listed(name: str, flt: Filter) -> tuple[list[RunSummary], list[RunSummary]]:
    if flt not in _LISTED:
        every, problems = listed((name,), flt)
        assert not problems
        _LISTED[flt] = select(every, flt, "start"), sql_summaries(name, flt)[0]
    return _LISTED[flt]


@settings(max_examples=20, deadline=None)
@given(
    sample=st.none() | st.integers(1, 80),
    seed=st.none() | st.integers(-(2**63), 2**64),
    limit=st.none() | st.integers(1, 80),
    flt=st.sampled_from(_FILTERS),
)
def test_a_table_draws_in_its_query_what_a_draw_of_its_whole_listing_draws(
    mixed: str, sample: int | None, seed: int | None, limit: int | None, flt: Filter
) -> None:
    """For any sample, seed, limit and filter, the runs the table draws are those drawn from
    every run it lists, and it counts every run the filters keep; the runs ClickHouse
    summarizes and does not draw never leave it."""
    kept, plain = _listed(mixed, flt)
    draw = Draw(sample, seed, limit)
    sent: list[tuple[list[RunSummary], int]] = []

    def drawing(name: str, flt: Filter, draw: Draw) -> Any:
        found, left_out, problems = drawn_summaries(name, flt, draw)
        sent.append((found, left_out))
        return found, left_out, problems

    with patch.dict(COMPUTED_DRAWS, {CLICKHOUSE: drawing}):
        got = drawn_listing((mixed,), flt, draw)
    assert not got.problems
    assert got.kept == len(kept)
    assert got.runs == drawn(kept, sample, seed, limit, _run_id)
    # What left ClickHouse: the runs it summarizes, as many as the draw can take; the
    # runs it leaves to the reader, all of them.
    ((found, left_out),) = sent
    size = sample if sample is not None else limit
    taken = len(plain) if size is None else min(size, len(plain))
    assert left_out == len(plain) - taken
    assert len(select(found, flt, "start")) == len(kept) - left_out


def test_the_same_seed_draws_the_same_runs_and_another_seed_others(mixed: str) -> None:
    flt = Filter()
    every = select(listed((mixed,), flt)[0], flt, "start")
    assert len(every) > 30
    samples = {}
    for seed in range(12):
        once = drawn_listing((mixed,), flt, Draw(4, seed, None))
        assert len(once.runs) == 4 and once.kept == len(every)
        if seed < 2:
            assert drawn_listing((mixed,), flt, Draw(4, seed, None)) == once
        samples[seed] = tuple(_run_id(s) for s in once.runs)
    assert len(set(samples.values())) >= 10  # 12 draws of 4 of 60: nearly always all apart
    everything = drawn_listing((mixed,), flt, Draw(len(every) + 5, 3, None))
    assert everything.runs == every


def test_the_sample_message_counts_every_run_the_filters_keep(table: tuple[str, Path]) -> None:
    name, dump = table
    for source in (name, dump):
        code, out, err = cohort_cli(source, *AGENTS, "--sample", "2", "--seed", "9", "--json")
        kept = json.loads(out)["cohort"]["runs_kept_by_filters"]
        assert code in (0, 1) and kept > 2 and f"sampled 2 of {kept} runs (seed 9;" in err
    assert _cohort(name, *AGENTS, "--sample", "50")["cohort"]["seed"] is None  # none drawn
