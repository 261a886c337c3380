"""What ``otel-replay check`` says of each run: its replay kit and its anomalies.

A :class:`RunCheck` is small and picklable, so a big dump is checked a
window at a time (see :func:`~otel_replay.runs.stream.map_runs`) without
holding its runs.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from typing import Any

from ..runs.model import KitReport, Run
from ..runs.pick import is_named
from ..runs.stream import map_runs
from ..store.errors import FormatError
from .anomalies import Config, Finding, find_anomalies


@dataclasses.dataclass(frozen=True)
class RunCheck:
    """One run's replay-kit report and anomalies."""

    run_id: str
    start_ns: int
    kit: KitReport
    findings: list[Finding]

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "verdict": self.kit.verdict,
            "replayable": self.kit.replayable,
            "missing": self.kit.missing,
            "problems": self.kit.problems,
            "findings": [f.to_json() for f in self.findings],
        }


def check_run(run: Run, config: Config | None = None) -> RunCheck:
    """The replay kit and the anomalies of ``run``."""
    return RunCheck(run.run_id, run.start_ns, run.kit, find_anomalies(run, config or Config()))


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
    fn = functools.partial(_check_picked, config or Config(), run_id)
    mapped = map_runs(paths, fn, jobs=jobs, window_bytes=window_bytes)
    found = [c for c in mapped.values if isinstance(c, RunCheck)]
    found.sort(key=lambda c: (c.start_ns, c.run_id))
    others = sorted(c for c in mapped.values if isinstance(c, str))
    return found, others, mapped.problems
