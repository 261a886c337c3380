"""How ``otel-replay cohort`` prints: the live progress line, the table of runs by
candidates, the totals per candidate, each outcome that is not ``same`` with its first
divergence, and a run's line in ``--json``."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

import click

from .printable import printable

if TYPE_CHECKING:
    from ..commands.cohort import Candidate, Outcome, Totals
    from ..commands.cohort_runs import Row


def row_json(row: Row) -> dict[str, Any]:
    s = row.summary
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
        "skipped": row.skipped,
        "not_run": row.not_run,
        "outcomes": [o.to_json() for o in row.outcomes],
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
    # lazy: `otel-replay --help` imports no command's code
    from ..commands.cohort import OUTCOMES, WORDS
    from .render_workflow import _stamp

    header = ["START (UTC)", "RUN", "RECORDED", *(printable(c.label) for c in candidates)]
    table = [header]
    for row in rows:
        s = row.summary
        recorded = f"{s.tool_calls} tools, {s.tokens} tok"
        cells = [_cell(o) for o in row.outcomes] or [
            "skipped" if row.skipped is not None else "not run"
        ] * len(candidates)
        table.append([_stamp(s.start_ns), printable(s.run_id[:16]), recorded, *cells])
    widths = [max(len(r[i]) for r in table) for i in range(len(header))]
    for line in table:
        click.echo("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
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
        if total.not_run:
            click.echo(f"  {total.not_run} run(s) not run")
    passed = [(r.summary, r.skipped) for r in rows if r.skipped is not None]
    if passed:
        click.echo(f"skipped {len(passed)} run(s):")
        for s, why in passed:
            click.echo(f"  {printable(s.run_id[:16])}  {printable(why)}")
    left = [r for r in rows if r.not_run is not None]
    if left:
        click.echo(f"not run: {len(left)} run(s): {printable(str(left[0].not_run))}:")
        for r in left:
            click.echo(f"  {printable(r.summary.run_id[:16])}")
    shown = [
        (r.summary, c, o)
        for r in rows
        for c, o in zip(candidates, r.outcomes, strict=False)
        if o.kind != "same"
    ]
    if shown:
        click.echo("")
    for s, c, o in shown:
        click.echo(f"{printable(s.run_id[:16])}  {printable(c.label)}: {printable(str(o))}")
        if o.divergence is not None and o.divergence.diff:
            for said in o.divergence.diff.splitlines():
                click.echo(f"    {printable(said)}")


class Progress:
    """The live progress line on stderr, while the runs replay: runs done of the total,
    the outcomes so far (over all candidates), runs skipped and not run, time elapsed.
    Drawn only when ``shown`` (stderr is a terminal, and no ``--json``), at most
    :data:`EVERY` seconds apart; gone when closed."""

    #: Seconds between redraws: a fast cohort does not spend its time drawing.
    EVERY = 0.1

    def __init__(self, total: int, shown: bool, stream: TextIO | None = None) -> None:
        self.total = total
        self.shown = shown
        self.stream = stream if stream is not None else sys.stderr
        self.done = 0
        self.counts: dict[str, int] = {}
        self.began = time.monotonic()
        self._drawn = 0.0
        self._width = 0

    def __call__(self, row: Row) -> None:
        self.done += 1
        kinds: list[str] = [o.kind for o in row.outcomes]
        if row.skipped is not None:
            kinds = ["skipped"]
        elif row.not_run is not None:
            kinds = ["not run"]
        for kind in kinds:
            self.counts[kind] = self.counts.get(kind, 0) + 1
        now = time.monotonic()
        if self.shown and (now - self._drawn >= self.EVERY or self.done == self.total):
            self._drawn = now
            self._draw(self.line(now))

    def line(self, now: float | None = None) -> str:
        # lazy: `otel-replay --help` imports no command's code
        from ..commands.cohort import OUTCOMES, WORDS

        took = (now if now is not None else time.monotonic()) - self.began
        order = [*OUTCOMES, "skipped", "not run"]
        said = [f"{self.counts[k]} {WORDS.get(k, k)}" for k in order if self.counts.get(k)]
        return " · ".join([f"cohort: {self.done}/{self.total} runs", *said, f"{took:.1f} s"])

    def _draw(self, line: str) -> None:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns or 80  # 0: unknown
        except (OSError, ValueError, AttributeError):
            columns = 80
        line = line[: max(columns - 1, 20)]  # a line wrapped would stay on the screen
        pad = max(self._width - len(line), 0)
        self._width = len(line)
        self.stream.write("\r" + line + " " * pad)
        self.stream.flush()

    def close(self) -> None:
        """Clear the line, when one was drawn."""
        if self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0
