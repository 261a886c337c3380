"""The page of a cohort: what each candidate would have changed, over every run.

Rendered from the document ``otel-replay cohort --json`` prints (one idea of a
cohort's result, whichever way it is shown): per candidate its counts and
rates, a histogram of the steps at which runs first left the recording, its
slowest and costliest runs; then every run with each candidate's outcome, the
first divergence and its diff folded under it, and a link to the side-by-side
page of the recording and the replay where one was written.  Those pages are
written as the cohort replays each run (:class:`SideBySide`), while it holds the
recording and the replay, so that drawing the page holds no run.
"""

from __future__ import annotations

import dataclasses
import datetime
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..json_text import surrogates_escaped
from ..runs.diff import diff_runs
from ..runs.model import Run
from ..safe_files import replace_atomically
from .page import gist, page_name, render_diff, templates

#: How each outcome reads, and its colour on the page (the report's: good, warn, bad).
OUTCOME_WORDS: dict[str, tuple[str, str]] = {
    "same": ("same", "good"),
    "other_answer": ("same tools, other answer", "warn"),
    "other_path": ("other path", "bad"),
    "new_path": ("new path", "bad"),
    "error": ("error", "bad"),
    "refused": ("refused", "muted"),
}


@dataclasses.dataclass(frozen=True)
class DiffPage:
    """A run's recording beside one candidate's replay of it: the page's file name."""

    run_id: str
    candidate: int
    name: str


def render_cohort(doc: Mapping[str, Any], diffs: Sequence[DiffPage] = ()) -> str:
    """The self-contained HTML page of the cohort ``doc`` (the ``--json`` document),
    each outcome linking to its page in ``diffs`` where there is one."""
    linked = {(d.run_id, d.candidate): d.name for d in diffs}
    given = doc.get("cohort") or {}
    cohort = {k: given.get(k) for k in ("id", "sources", "sample", "seed", "limit", "compare")}
    cohort["judge"] = given.get("judge")
    candidates = list(given.get("candidates") or [])
    totals = [_total(t) for t in doc.get("totals") or []]
    rows = [_row(r, linked) for r in doc.get("runs") or []]
    template = templates().get_template("cohort.html.j2")
    return surrogates_escaped(
        template.render(
            cohort=cohort,
            candidates=candidates,
            totals=totals,
            rows=rows,
            skipped=sum(1 for r in rows if r["skipped"]),
            not_run=sum(1 for r in rows if r["not_run"]),
            words=OUTCOME_WORDS,
        )
    )


def diff_page_name(run_id: str, candidate: int, replay_id: str) -> str:
    """The file name of the side-by-side page of a run and candidate ``candidate``'s (from
    1) replay ``replay_id`` of it: another replay of the run is another page."""
    run = page_name(run_id).removeprefix("run-").removesuffix(".html")
    replay = page_name(replay_id).removeprefix("run-").removesuffix(".html")[:16]
    return f"diff-{candidate}-{run}-{replay}.html"


class SideBySide:
    """The side-by-side pages beside the cohort's page at ``path``, each of a run's
    recording and a candidate's replay of it: written as the cohort replays the run,
    while both are in memory, so that the page need not read them again (memory stays
    that of one run however many there are).  Each page is written whole or not at all
    (a cohort killed while writing one leaves none)."""

    def __init__(self, path: str, labels: Sequence[str]) -> None:
        templates()  # no Jinja2 is said before any run is replayed
        self.directory = os.path.dirname(os.path.abspath(path))
        self.labels = list(labels)
        #: The first page that could not be written: written again by the page, or its error.
        self.failed: OSError | None = None

    def write(self, run: Run, candidate: int, replay: Run) -> DiffPage | None:
        """The page of ``run`` beside candidate ``candidate``'s (from 1) ``replay``, written;
        None when it could not be (the page tries again, and says why)."""
        name = diff_page_name(run.run_id, candidate, replay.run_id)
        n = candidate - 1
        label = self.labels[n] if 0 <= n < len(self.labels) else f"candidate {candidate}"
        html = render_diff(diff_runs(run, replay), ("recorded", f"replayed: {label}"))
        try:
            replace_atomically(os.path.join(self.directory, name), html.encode("utf-8"))
        except OSError as exc:
            self.failed = self.failed or exc
            return None
        return DiffPage(run.run_id, candidate, name)

    def found(self, doc: Mapping[str, Any]) -> tuple[list[DiffPage], list[Wanted]]:
        """For each outcome of ``doc`` whose replay was written: its page where it is
        already beside the cohort's page (written as it was replayed, by this call or an
        earlier one), else what it wants."""
        pages: list[DiffPage] = []
        wanted: list[Wanted] = []
        for row in doc.get("runs") or []:
            run_id = str(row.get("run_id"))
            for n, outcome in enumerate(row.get("outcomes") or [], start=1):
                replay_id = outcome.get("replay_run_id")
                if not isinstance(replay_id, str) or not replay_id:
                    continue
                name = diff_page_name(run_id, n, replay_id)
                if os.path.isfile(os.path.join(self.directory, name)):
                    pages.append(DiffPage(run_id, n, name))
                else:
                    wanted.append(Wanted(run_id, n, replay_id))
        return pages, wanted


@dataclasses.dataclass(frozen=True)
class Wanted:
    """A side-by-side page not written yet: the run, the candidate (from 1), its replay."""

    run_id: str
    candidate: int
    replay_id: str


def write_cohort_page(doc: Mapping[str, Any], path: str, diffs: Sequence[DiffPage]) -> None:
    """Write the cohort's page to ``path`` (whole or not at all), each outcome linking to
    its side-by-side page in ``diffs`` where there is one."""
    replace_atomically(path, render_cohort(doc, diffs).encode("utf-8"))


def _total(t: Mapping[str, Any]) -> dict[str, Any]:
    counts = dict(t.get("counts") or {})
    runs = int(t.get("runs") or 0)
    steps = dict(t.get("first_divergence_steps") or {})
    order = sorted(steps, key=lambda k: (k == "end", int(k) if k.isdigit() else 0))
    most = max(steps.values(), default=0)
    return {
        "candidate": t.get("candidate"),
        "runs": runs,
        "counts": [
            (kind, n, n / runs if runs else 0.0)
            for kind in OUTCOME_WORDS
            if (n := int(counts.get(kind) or 0))
        ],
        "same_rate": t.get("same_rate"),
        "not_run": t.get("not_run") or 0,
        "tokens": (t.get("input_tokens"), t.get("output_tokens")),
        "latency_ms_per_run": t.get("latency_ms_per_run"),
        "cost": _dollars(t.get("cost")),
        "histogram": [
            ("after the recording" if k == "end" else f"step {k}", steps[k], steps[k] / most)
            for k in order
        ],
        "slowest": t.get("slowest") or [],
        "costliest": [
            {"run_id": c.get("run_id"), "cost": _dollars(c.get("cost"))}
            for c in t.get("costliest") or []
        ],
    }


def _row(r: Mapping[str, Any], linked: Mapping[tuple[str, int], str]) -> dict[str, Any]:
    run_id = str(r.get("run_id"))
    given = r.get("recorded") or {}
    recorded = {k: given.get(k) for k in ("steps", "tool_calls")}
    outcomes = []
    for n, o in enumerate(r.get("outcomes") or [], start=1):
        divergence = o.get("divergence") or {}
        outcomes.append(
            {
                "kind": o.get("outcome"),
                "words": o.get("words") or "",
                "diff": divergence.get("diff") or "",
                "answer": gist(o.get("answer")),
                "tokens": o.get("tokens"),
                "cost": _dollars(o.get("cost")),
                "latency_ms": o.get("latency_ms"),
                "page": linked.get((run_id, n)),
            }
        )
    return {
        "run_id": run_id,
        "start": _stamp(r.get("start_ns")),
        "agent": r.get("agent"),
        "recorded": recorded,
        "skipped": r.get("skipped"),
        "not_run": r.get("not_run"),
        "outcomes": outcomes,
    }


def _stamp(start_ns: Any) -> str:
    if not isinstance(start_ns, int):
        return "-"
    when = datetime.datetime.fromtimestamp(start_ns / 1e9, datetime.timezone.utc)
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def dollars(cost: float) -> str:
    """A cost as dollars, to the cent, or to four significant digits under a cent."""
    return f"${cost:.2f}" if cost >= 0.01 or cost == 0 else f"${cost:.4g}"


def _dollars(cost: Any) -> str | None:
    return dollars(cost) if isinstance(cost, (int, float)) else None
