"""Terminal output of ``ls``, ``show --timeline``, ``show --step`` and ``diff``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from rich.console import Console

from ..commands.timeline import draw, timeline
from ..payload import codec as payload
from ..runs.anomalies import Finding
from ..runs.diff import Pair, RunDiff, describe, show_change
from ..runs.model import Run, Step
from ..runs.summary import RunSummary
from .printable import printable
from .render import (
    _KIND_STYLE,
    COLOUR_LINES,
    ERROR_SHOWN,
    console,
    error_text,
    esc,
    run_header,
    verdict_markup,
)

# --- ls ---------------------------------------------------------------------------


def _stamp(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _ms(ms: float) -> str:
    if ms >= 60_000:
        return f"{ms / 60_000:.1f}m"
    if ms >= 1000:
        return f"{ms / 1000:.1f}s"
    if ms >= 10:
        return f"{ms:.0f}ms"
    return f"{ms:.1f}ms" if ms >= 1 else f"{ms:.2f}ms"


LS_COLUMNS = (
    "START (UTC)",
    "RUN",
    "AGENT",
    "USER",
    "SESSION",
    "MODELS",
    "STEPS",
    "TOOLS",
    "ERRORS",
    "DURATION",
    "TOKENS",
    "VERDICT",
)


def _warnings(s: RunSummary) -> str:
    """`` (2 warnings)`` after the verdict, '' when there is none."""
    if not s.anomalies:
        return ""
    possible = "possible " if s.candidates else ""
    return f" ({s.anomalies} {possible}warning{'s' if s.anomalies > 1 else ''})"


def ls_row(s: RunSummary) -> list[str]:
    verdict = printable(s.run_verdict.words(ERROR_SHOWN)) + _warnings(s)
    return [
        _stamp(s.start_ns),
        printable(s.run_id[:16]),
        printable(s.agent or "-"),
        printable(s.user_id or "-"),
        printable(s.session_id or "-"),
        printable(",".join(s.models) or "-"),
        str(s.steps),
        str(s.tool_calls),
        str(s.errors),
        _ms(s.duration_ms),
        str(s.tokens),
        verdict,
    ]


def ls_lines(summaries: Sequence[RunSummary]) -> list[list[str]]:
    """The header and one row per run, each cell padded to its column's width."""
    rows = [list(LS_COLUMNS)] + [ls_row(s) for s in summaries]
    widths = [max(len(r[i]) for r in rows) for i in range(len(LS_COLUMNS))]
    numeric = {"STEPS", "TOOLS", "ERRORS", "DURATION", "TOKENS"}
    return [
        [
            cell.rjust(widths[i]) if LS_COLUMNS[i] in numeric else cell.ljust(widths[i])
            for i, cell in enumerate(row)
        ]
        for row in rows
    ]


def render_ls(summaries: Sequence[RunSummary], out: Console | None = None) -> None:
    """A header and one line per run, columns aligned (numbers to the right).

    Piped, or long, the listing is written as plain text in one go: tens of
    thousands of runs print in a fraction of a second.
    """
    out = out or console()
    rows = ls_lines(summaries)
    if not out.is_terminal or len(rows) > COLOUR_LINES:
        out.file.write("".join("  ".join(r).rstrip() + "\n" for r in rows))
        out.file.flush()
        return
    for n, row in enumerate(rows):
        cells = []
        for i, cell in enumerate(row):
            text = esc(cell.rstrip() if i == len(row) - 1 else cell)
            if n == 0:
                text = f"[bold]{text}[/bold]"
            elif LS_COLUMNS[i] == "ERRORS" and cell.strip() != "0":
                text = f"[red]{text}[/red]"
            elif LS_COLUMNS[i] == "VERDICT":
                # The last column: each answer coloured by its meaning, then the warnings.
                s = summaries[n - 1]
                text = verdict_markup(s.run_verdict, ERROR_SHOWN) + esc(_warnings(s))
            cells.append(text)
        out.print("  ".join(cells))


# --- show --timeline ---------------------------------------------------------------


def render_timeline(runs: Sequence[Run], width: int = 50, out: Console | None = None) -> None:
    """Per run: each step's offset and duration as a bar on the run's time axis."""
    out = out or console()
    for run in runs:
        out.print(run_header(run))
        total = (run.end_ns - run.start_ns) / 1e6
        bars = timeline(run)
        names = [
            "  " * b.step.depth + printable(b.step.tool.tool_name if b.step.tool else b.step.name)
            for b in bars
        ]
        name_w = min(max((len(n) for n in names), default=4), 40)
        out.print(
            f"[dim]{'':>3} {'kind':<5} {'step':<{name_w}} {'start':>9} {'took':>9}  "
            f"|0{'':<{width - 2 - len(_ms(total))}}{esc(_ms(total))}|[/dim]"
        )
        for bar, name in zip(bars, names, strict=True):
            s = bar.step
            style = _KIND_STYLE[s.kind]
            label = esc(name[:name_w].ljust(name_w))  # already printable: cut, then escaped
            if not s.timed:
                line = f"{'':>9} {'untimed':>9}  [dim]derived from messages[/dim]"
            else:
                drawn = esc(draw(bar, total, width))
                colour = "red" if s.status == "ERROR" else style.replace("bold ", "")
                line = (
                    f"{_ms(bar.offset_ms):>9} {_ms(bar.duration_ms):>9}  "
                    f"|[{colour}]{drawn.ljust(width)}[/{colour}]|"
                )
                if bar.ttft_ms is not None:
                    line += f" [dim]first token {_ms(bar.ttft_ms)}[/dim]"
            out.print(f"[dim]{s.index:>3}[/dim] [{style}]{s.kind:<5}[/{style}] {label} {line}")
        out.print()


# --- show --step -------------------------------------------------------------------


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(payload.plain(value), ensure_ascii=False, indent=2, default=str)


def _section(out: Console, title: str, value: Any) -> None:
    out.print(f"[bold]{esc(title)}[/bold]")
    for line in printable(_pretty(value), lines=True).split("\n"):
        out.print("  " + esc(line), soft_wrap=True)


def render_step(run: Run, step: Step, raw: bool, out: Console | None = None) -> None:
    """Everything one step recorded: timing, the model's request and answer, or the tool call."""
    out = out or console()
    out.print(f"[bold]run {esc(run.run_id)}[/bold]  {esc(step.label())}")
    when = f"{_stamp(step.start_ns)} UTC, {step.duration_ms:.1f} ms" if step.timed else "untimed"
    out.print(f"  when: {esc(when)}   status: {esc(step.status)}")
    error = error_text(step)
    if error is not None:
        out.print(f"  [red]error: {esc(error)}[/red]")
    if step.status_message:
        out.print(f"  status message: {esc(step.status_message)}")
    if step.parent_span_id:
        out.print(f"  parent span: {esc(step.parent_span_id)}")
    m = step.model
    if m is not None:
        out.print(
            "  "
            + esc(
                f"provider: {m.provider or '-'}   request model: {m.request_model or '-'}   "
                f"response model: {m.response_model or '-'}   response id: {m.response_id or '-'}"
            )
        )
        if m.finish_reasons:
            out.print("  finish reasons: " + esc(", ".join(m.finish_reasons)))
        if m.usage:
            out.print("  usage: " + esc(", ".join(f"{k}={v}" for k, v in m.usage.items())))
        _section(out, "params", m.params)
        if m.system_instructions is not None:
            _section(out, "system instructions", m.system_instructions)
        if m.tool_definitions is not None:
            _section(out, "tool definitions", m.tool_definitions)
        _section(out, "input messages", m.input_messages)
        _section(out, "output messages", m.output_messages)
    t = step.tool
    if t is not None:
        out.print("  " + esc(f"tool: {t.tool_name}   call id: {t.call_id or '-'}"))
        if t.derived:
            out.print("  [dim]derived from the messages: no tool span recorded[/dim]")
        _section(out, "arguments", t.arguments)
        if t.error is not None:
            _section(out, "error", {"type": t.error.type, "message": t.error.message})
        else:
            _section(out, "result", t.result)
    try:
        before = run.snapshot_at(step.index)
    except (KeyError, IndexError):
        before = None
    if before is not None and before not in step.snapshots:
        owner = next((s for s in run.steps if s.span_id == before.span_id), None)
        where = owner.label() if owner is not None else f"span {before.span_id}"
        out.print("  " + esc(f"state before this step: snapshot {before.name} (on {where})"))
    for snap in step.snapshots:
        p = snap.payload
        what = f"{p.type}, {p.status}" if p is not None else "no content"
        try:
            state: Any = snap.plain()
        except ValueError as exc:
            state = f"(cannot be restored: {exc})"
        _section(out, f"snapshot {snap.name} ({what}, at {_stamp(snap.time_ns)} UTC)", state)
    if raw:
        _section(out, "attributes", step.attributes)
        if step.events:
            _section(out, "events", step.events)


# --- diff --------------------------------------------------------------------------

_MARK = {"equal": ("=", "dim"), "changed": ("~", "yellow"), "added": ("+", "green")}
_MARK["removed"] = ("-", "red")


def _pair_name(p: Pair) -> str:
    s = p.a or p.b
    assert s is not None
    name = s.tool.tool_name if s.tool is not None else s.name
    ia = str(p.a.index) if p.a is not None else "-"
    ib = str(p.b.index) if p.b is not None else "-"
    return f"{ia:>3} {ib:>3}  {s.kind:<5} {'  ' * s.depth}{name}"


def render_diff(d: RunDiff, names: tuple[str, str], out: Console | None = None) -> None:
    out = out or console()
    out.print(f"[bold]A[/bold] run {esc(d.a.run_id)}  ({esc(names[0])})")
    out.print(f"[bold]B[/bold] run {esc(d.b.run_id)}  ({esc(names[1])})")
    first = d.first_divergence
    if d.equal:
        out.print("[green]the runs are equal[/green] (step by step, and the final answer)")
    elif first is not None:
        out.print(f"[red]first divergence:[/red] {esc(first.label())}")
    else:
        out.print("[red]the runs differ[/red] in their final answer only")
    out.print("[dim]      A   B[/dim]")
    for p in d.pairs:
        mark, colour = _MARK[p.status]
        line = f"[{colour}]{mark}[/{colour}] {esc(_pair_name(p))}"
        if p.status == "added":
            line += "  [green]only in B[/green]"
        elif p.status == "removed":
            line += "  [red]only in A[/red]"
        out.print(line)
        for c in p.changes:
            out.print(f"        [yellow]{esc(c.field)}[/yellow]: {esc(describe(c))}")
    for c in d.run_changes:
        out.print(f"{_RUN_CHANGE.get(c.field, c.field)}: {esc(show_change(c.a, c.b))}")


#: How ``diff`` names a run-level change.
_RUN_CHANGE = {"final_output": "final answer", "raised": "raised"}


# --- check: findings --------------------------------------------------------------


def finding_lines(findings: Sequence[Finding]) -> list[str]:
    """A run's anomalies, one line each with its step: lines of rich markup."""
    if not findings:
        return ["  anomalies: none"]
    return [f"  anomalies: {len(findings)}"] + [
        f"  [yellow]~[/yellow] step {f.step} (span {esc(f.span_id)}) "
        f"[yellow]{esc(f.kind)}[/yellow]: {esc(f.message)}"
        for f in findings
    ]
