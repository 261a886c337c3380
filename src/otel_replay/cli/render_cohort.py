"""How ``otel-replay cohort`` prints: the table of runs by candidates, the totals per
candidate, each outcome that is not ``same`` with its first divergence, and a run's
line in ``--json``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import click

from .printable import printable

if TYPE_CHECKING:
    from ..commands.cohort import Candidate, Outcome, Totals
    from ..commands.cohort_runs import Row
    from ..runs.summary import RunSummary


def row_json(s: RunSummary, outcomes: Sequence[Outcome], skipped: str | None) -> dict[str, Any]:
    return {
        "run_id": s.run_id,
        "start_ns": s.start_ns,
        "agent": s.agent,
        "recorded": {
            "steps": s.steps,
            "tool_calls": s.tool_calls,
            "input_tokens": s.input_tokens,
            "output_tokens": s.output_tokens,
            "duration_ms": s.duration_ms,
            "verdict_words": s.run_verdict.to_json()["verdict_words"],
        },
        "skipped": skipped,
        "outcomes": [o.to_json() for o in outcomes],
    }


_SHORT = {
    "same": "same",
    "other_answer": "other answer",
    "other_path": "other path",
    "new_path": "new path",
    "error": "error",
    "refused": "refused",
}


def _cell(o: Outcome) -> str:
    said = _SHORT[o.kind]
    if o.divergence is not None:
        said += f" @{o.divergence.step if o.divergence.step is not None else 'end'}"
    spent = [f"{o.tokens} tok"] if o.tokens is not None else []
    if o.cost is not None:
        spent.append(_dollars(o.cost))
    return said + (f" ({', '.join(spent)})" if spent else "")


def _dollars(cost: float) -> str:
    from ..report.cohort_page import dollars  # the page's module holds the one spelling

    return dollars(cost)


def render(rows: Sequence[Row], candidates: Sequence[Candidate], totals: Sequence[Totals]) -> None:
    from ..commands.cohort import OUTCOMES, WORDS
    from .render_workflow import _stamp

    header = ["START (UTC)", "RUN", "RECORDED", *(printable(c.label) for c in candidates)]
    table = [header]
    for s, outcomes, skipped in rows:
        recorded = f"{s.tool_calls} tools, {s.tokens} tok"
        cells = [_cell(o) for o in outcomes] if skipped is None else ["skipped"] * len(candidates)
        table.append([_stamp(s.start_ns), printable(s.run_id[:16]), recorded, *cells])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for row in table:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    click.echo("")
    for total in totals:
        counts = " · ".join(f"{total.counts[k]} {WORDS[k]}" for k in OUTCOMES if total.counts[k])
        rate = total.rate("same")
        tokens = ""
        if total.input_tokens is not None or total.output_tokens is not None:
            tokens = f"; {total.input_tokens or 0}→{total.output_tokens or 0} tok"
        took = f"; {total.latency_ms / max(total.runs, 1):.1f} ms a run" if total.runs else ""
        cost = f"; {_dollars(total.cost)}" if total.cost is not None else ""
        click.echo(
            f"{printable(total.candidate)}: {total.runs} run(s): {counts or 'none'}"
            + (f" ({rate:.0%} same)" if rate is not None else "")
            + tokens
            + cost
            + took
        )
        if len(total.slowest) > 1:
            said = ", ".join(f"{printable(r[:16])} {ms:.0f} ms" for ms, r in total.slowest)
            click.echo(f"  slowest: {said}")
        if len(total.costliest) > 1:
            said = ", ".join(f"{printable(r[:16])} {_dollars(c)}" for c, r in total.costliest)
            click.echo(f"  costliest: {said}")
        if total.diverged_at:
            steps = ", ".join(f"step {k}: {n}" for k, n in sorted(total.diverged_at.items()))
            click.echo(f"  first divergence at {steps}")
    passed = [(s, why) for s, _, why in rows if why is not None]
    if passed:
        click.echo(f"skipped {len(passed)} run(s):")
        for s, why in passed:
            click.echo(f"  {printable(s.run_id[:16])}  {printable(why)}")
    shown = [
        (s, c, o)
        for s, outcomes, why in rows
        if why is None
        for c, o in zip(candidates, outcomes, strict=True)
        if o.kind != "same"
    ]
    if shown:
        click.echo("")
    for s, c, o in shown:
        click.echo(f"{printable(s.run_id[:16])}  {printable(c.label)}: {printable(str(o))}")
        if o.divergence is not None and o.divergence.diff:
            for line in o.divergence.diff.splitlines():
                click.echo(f"    {printable(line)}")
