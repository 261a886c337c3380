"""What ``otel-replay check`` says of each run: its replay kit and its anomalies.

A :class:`RunCheck` is small and picklable, so a big dump is checked a
window at a time (see :func:`~otel_replay.runs.stream.map_runs`) without
holding its runs.  A ClickHouse table is checked by ClickHouse first: the runs
it shows clean (full, replayable, nothing to warn of) are not read; the others
are read in one scan of the table, built a window at a time (see
:mod:`otel_replay.commands.clickhouse_check`).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from typing import Any

from ..otlp.errors import FormatError
from ..runs.anomalies import Config, Finding, find_anomalies
from ..runs.kit import KitReport
from ..runs.model import Run
from ..runs.pick import is_named
from ..runs.stream import map_runs
from ..runs.verdict import Outcome, RunVerdict, outcome
from ..sources import open_source
from ..sources.source import CLICKHOUSE, Kind


@dataclasses.dataclass(frozen=True)
class RunCheck:
    """One run's replay-kit report and anomalies."""

    run_id: str
    start_ns: int
    kit: KitReport
    findings: list[Finding]
    #: False for a run ClickHouse showed clean without its spans being read: its kit's
    #: optional fields (``commit``, ``steps[3].temperature``...) are not listed.
    read: bool = True
    #: How the run went (a clean run raised nothing and no call of it failed).
    outcome: Outcome = dataclasses.field(default_factory=Outcome)

    @property
    def verdict(self) -> RunVerdict:
        """The three answers every command gives of this run."""
        problem = self.kit.replay_problem
        if not self.kit.replayable and problem is None:
            problem = "reason not named"
        return RunVerdict(self.kit.verdict, problem, self.outcome)

    def to_json(self) -> dict[str, Any]:
        said = self.verdict.to_json()
        if not self.read:
            # Not read: how many calls it made is not known here (none of them failed).
            said["outcome"].update(tool_calls=None, model_calls=None)
        return {
            "run_id": self.run_id,
            "verdict": self.kit.verdict,
            "replayable": self.kit.replayable,
            "replays": said["replays"],
            "replay_problem": said["replay_problem"],
            "outcome": said["outcome"],
            "verdict_words": said["verdict_words"],
            "missing": self.kit.missing if self.read else None,
            "not_set": self.kit.not_set if self.read else None,
            "problems": self.kit.problems,
            "findings": [f.to_json() for f in self.findings],
        }


@dataclasses.dataclass(frozen=True)
class Totals:
    """What a check of many runs comes to: how many replay, why the others do not, how
    many raised or had calls fail, and how many warnings there are."""

    runs: int
    replayable: int
    #: Runs that do not replay, by reason: their verdict (``model-only``,
    #: ``inspect-only``), or ``damaged`` for a full kit whose records may be missing.
    not_replayable: dict[str, int]
    warnings: int
    runs_with_warnings: int
    #: Warnings by the kind of anomaly (``repeated_tool_call``, ``tool_error``...).
    warnings_by_kind: dict[str, int]
    #: Runs whose agent run raised.
    raised: int = 0
    #: Runs some tool or model call of which failed.
    runs_with_failed_calls: int = 0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def __str__(self) -> str:
        line = f"checked {_count(self.runs, 'run')}: {self.replayable} replay{_s(self.replayable)}"
        off = sum(self.not_replayable.values())
        if off:
            why = ", ".join(f"{n} {reason}" for reason, n in self.not_replayable.items())
            line += f", {off} {'does' if off == 1 else 'do'} not replay ({why})"
        line += f"; {self.raised} raised, {self.runs_with_failed_calls} with failed calls"
        line += f"; {_count(self.warnings, 'warning')}"
        if self.warnings:
            line += f" in {_count(self.runs_with_warnings, 'run')}"
        return line


def _s(n: int) -> str:
    """The verb's ending for ``n`` runs: 1 replays, 3 replay."""
    return "s" if n == 1 else ""


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def totals(checks: Sequence[RunCheck]) -> Totals:
    """The :class:`Totals` of ``checks``."""
    off: dict[str, int] = {}
    kinds: dict[str, int] = {}
    for c in checks:
        if not c.kit.replayable:
            reason = c.kit.verdict if c.kit.verdict != "full" else "damaged"
            off[reason] = off.get(reason, 0) + 1
        for f in c.findings:
            kinds[f.kind] = kinds.get(f.kind, 0) + 1
    return Totals(
        runs=len(checks),
        replayable=sum(1 for c in checks if c.kit.replayable),
        not_replayable=dict(sorted(off.items())),
        warnings=sum(kinds.values()),
        runs_with_warnings=sum(1 for c in checks if c.findings),
        warnings_by_kind=dict(sorted(kinds.items())),
        raised=sum(1 for c in checks if c.outcome.raised),
        runs_with_failed_calls=sum(
            1 for c in checks if c.outcome.tool_calls_failed or c.outcome.model_calls_failed
        ),
    )


def check_run(run: Run, config: Config | None = None) -> RunCheck:
    """The replay kit and the anomalies of ``run``."""
    return RunCheck(
        run.run_id,
        run.start_ns,
        run.kit,
        find_anomalies(run, config or Config()),
        outcome=outcome(run),
    )


def _check_picked(config: Config, prefix: str | None, run: Run) -> RunCheck | str:
    """The check of ``run``, or only its id when it is not the one asked for."""
    if not is_named(run, prefix):
        return run.run_id
    return check_run(run, config)


def check_runs(
    paths: Sequence[str],
    config: Config | None = None,
    *,
    run_id: str | None = None,
    jobs: int | None = None,
    window_bytes: int | None = None,
) -> tuple[list[RunCheck], list[str], list[FormatError]]:
    """The checks of the runs of ``paths`` whose id starts with ``run_id``, in
    start order; the ids of the other runs; and the problems met reading.

    A big dump is read a window at a time by ``jobs`` worker processes
    (default: :func:`~otel_replay.runs.stream.default_jobs`).
    """
    config = config or Config()
    # A run asked for is read alone, wherever it is.
    computed = [(p, None if run_id is not None else _computed(p)) for p in paths]
    files = [p for p, check in computed if check is None]
    found: list[RunCheck] = []
    others: list[str] = []
    problems: list[FormatError] = []
    if files:
        fn = functools.partial(_check_picked, config, run_id)
        mapped = map_runs(files, fn, jobs=jobs, window_bytes=window_bytes)
        found += [c for c in mapped.values if isinstance(c, RunCheck)]
        others += [c for c in mapped.values if isinstance(c, str)]
        problems += mapped.problems
    for name, check in computed:
        if check is not None:
            checked, faults = check(name, config, jobs)
            found += checked
            problems += faults
    found.sort(key=lambda c: (c.start_ns, c.run_id))
    return found, sorted(others), problems


def _table_checks(
    name: str, config: Config, jobs: int | None
) -> tuple[list[RunCheck], list[FormatError]]:
    """The checks of the runs of a ClickHouse table: those ClickHouse shows clean from its
    summary, the others read in one scan of the table (see
    :func:`~otel_replay.runs.stream.map_table_runs`)."""
    # ClickHouse's check only for a database (its queries, its client).
    from ..runs.stream import map_table_runs
    from .clickhouse_check import triage

    clean, left, problems = triage(name, config.max_tool_calls, config.error_phrases)
    found = [
        RunCheck(trace_id, start, KitReport("full", True, [], []), [], read=False)
        for trace_id, start in clean
    ]
    if left:
        fn = functools.partial(check_run, config=config)
        mapped = map_table_runs(name, left, fn, done={t for t, _ in clean}, jobs=jobs)
        found += mapped.values
        problems += mapped.problems
    return found, problems


#: The checks of the runs of one source, and the problems met.
CheckSource = Callable[[str, Config, int | None], tuple[list[RunCheck], list[FormatError]]]
#: The sources whose backend checks its runs itself (first, so that only the runs it
#: cannot vouch for are read), by kind; the runs of the others are read and checked.
COMPUTED_CHECKS: dict[Kind, CheckSource] = {CLICKHOUSE: _table_checks}


def _computed(name: str) -> CheckSource | None:
    """How the backend of the source ``name`` checks its runs itself, if it does."""
    return COMPUTED_CHECKS.get(open_source(name).kind)
