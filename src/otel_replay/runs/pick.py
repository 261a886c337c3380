"""Pick a run: by a prefix of its id, or the only one there is.

One definition for every place that takes a run id: the library
(``replay(run_id=...)``, the replay engine) and every command (``--run``,
``PATH#RUN_ID``).  A prefix that names no run or several, or no prefix where
there are several runs, is refused with the runs there are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .model import Run


class RunNotPicked(LookupError):
    """No run, or several, answer to what was asked; the message lists the runs."""


def is_named(run: Run, run_id: str | None) -> bool:
    """True when ``run_id`` (a prefix of a run id, or None: any) names ``run``."""
    return run_id is None or run.run_id.startswith(run_id)


def named(runs: Iterable[Run], run_id: str | None) -> list[Run]:
    """The runs ``run_id`` names (all of them when None)."""
    return [r for r in runs if is_named(r, run_id)]


def pick_run(runs: Sequence[Run], run_id: str | None, *, where: str, how: str) -> Run:
    """The one run of ``runs`` that ``run_id`` names, or the only run when it is None.

    ``where`` says where the runs come from (a file), ``how`` how to pick one
    (``--run ID``, ``run_id=``); both go into the :class:`RunNotPicked` message.
    """
    found = named(runs, run_id)
    if len(found) == 1:
        return found[0]
    if not runs:
        raise RunNotPicked(f"no runs in {where}")
    known = ", ".join(r.run_id for r in runs)
    if run_id is not None:
        many = "several runs" if found else "no run"
        raise RunNotPicked(f"{where}: {many} {run_id!r} (runs: {known})")
    raise RunNotPicked(f"{where} holds {len(runs)} runs; pick one with {how} (runs: {known})")
