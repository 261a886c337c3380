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

import pytest

from otel_replay.sources.reader import RecordReader
from tests.conformance.checks import find_cases
from tests.fixtures.cli import cli_process
from tests.fixtures.clickhouse import fill
from tests.unit.commands.test_cohort import QUESTIONS, cohort, cohort_cli

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
