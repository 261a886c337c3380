"""Readable terminal output: runs as trees, replay-kit reports."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.tree import Tree

from .. import messages as M
from ..runs.model import Run, Step

_KIND_STYLE = {"agent": "bold magenta", "model": "bold cyan", "tool": "bold yellow", "other": "dim"}


def _short(value: Any, limit: int = 90) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _when(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _model_line(step: Step) -> str:
    m = step.model
    assert m is not None
    bits: list[str] = []
    if step.kind == "model" and m.input_messages:
        last = m.input_messages[-1]
        text = M.last_text([last])
        if text is not None:
            bits.append(f"← {last.get('role')}: {_short(text, 60)!r}")
        elif any(p.get("type") == "tool_call_response" for p in last.get("parts", [])):
            bits.append("← tool results")
    if m.output_messages:
        calls = M.tool_calls(m.output_messages)
        if calls:
            bits.append(
                "→ "
                + ", ".join(f"{c.get('name')}({_short(c.get('arguments'), 50)})" for c in calls)
            )
        else:
            text = M.last_text(m.output_messages)
            if text is not None:
                bits.append(f"→ {_short(text, 70)!r}")
    if m.usage:
        bits.append(f"[{m.usage.get('input_tokens', '?')}→{m.usage.get('output_tokens', '?')} tok]")
    if m.output_payload is not None and m.output_payload.status in ("mismatch", "missing"):
        bits.append("[red](output not byte-exact)[/red]")
    return " ".join(escape(b) if not b.startswith("[red]") else b for b in bits)


def _tool_line(step: Step) -> str:
    t = step.tool
    assert t is not None
    line = escape(f"{t.tool_name}({_short(t.arguments, 60)})")
    if t.error is not None:
        return line + escape(f" ✗ {t.error.type}: {_short(t.error.message, 60)}")
    line += escape(f" → {_short(t.result, 70)}")
    p = t.result_payload
    if p is not None and p.status in ("mismatch", "missing"):
        line += " [red](not byte-exact)[/red]"
    elif p is not None and p.type not in ("str", "json"):
        line += f" [dim]({p.type})[/dim]"
    return line


def _label(step: Step) -> str:
    style = _KIND_STYLE[step.kind]
    head = f"[dim]{step.index:>3}[/dim] [{style}]{step.kind:<5}[/{style}] "
    if step.kind == "tool" and step.tool is not None:
        body = _tool_line(step)
    elif step.kind == "model" and step.model is not None:
        body = f"{escape(step.name)}  {_model_line(step)}"
    else:
        body = escape(step.name)
    tail = f"  [dim]{step.duration_ms:.1f} ms[/dim]"
    if step.status == "ERROR":
        tail += " [red]ERROR[/red]"
    return head + body + tail


def _header(run: Run) -> str:
    kit = run.kit
    fp = run.fingerprint
    colour = {"full": "green", "model-only": "yellow", "inspect-only": "red"}[kit.verdict]
    parts = [
        f"[bold]run {run.run_id}[/bold]",
        _when(run.start_ns),
        f"{(run.end_ns - run.start_ns) / 1e6:.1f} ms",
        f"[{colour}]{kit.verdict}[/{colour}]",
    ]
    commit = fp.get("commit")
    if commit:
        parts.append(f"commit {str(commit)[:12]}{'+dirty' if fp.get('dirty') else ''}")
    for key in ("user.id", "tenant.id", "session.id"):
        if key in fp:
            parts.append(f"{key}={escape(str(fp[key]))}")
    return "  ".join(parts)


def render_runs(runs: Iterable[Run], console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    for run in runs:
        tree = Tree(_header(run), guide_style="dim")
        nodes: dict[str, Tree] = {}
        for step in run.steps:
            parent = nodes.get(step.parent_span_id or "", tree)
            nodes[step.span_id] = parent.add(_label(step))
        console.print(tree)
        if run.kit.problems:
            for p in run.kit.problems:
                console.print(f"  [red]![/red] {escape(p)}")
        console.print()


def render_check(runs: Iterable[Run], console: Console | None = None) -> None:
    console = console or Console(highlight=False)
    for run in runs:
        kit = run.kit
        mark = "[green]replayable[/green]" if kit.replayable else "[red]not replayable[/red]"
        console.print(f"[bold]run {run.run_id}[/bold]: {kit.verdict}, {mark}")
        if kit.missing:
            console.print(f"  missing: {escape(', '.join(kit.missing))}")
        for p in kit.problems:
            console.print(f"  [red]![/red] {escape(p)}")
