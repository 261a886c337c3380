"""The page of one run: what the template shows, computed from the run."""

from __future__ import annotations

import dataclasses
import datetime
import difflib
import functools
import hashlib
import json
import os
import re
from collections.abc import Sequence
from typing import Any

from .. import text_diff
from ..extras import install_hint
from ..json_text import surrogates_escaped
from ..runs.anomalies import Config, Finding, find_anomalies
from ..runs.diff import Change, RunDiff
from ..runs.model import Run, Step
from ..runs.pick import is_named
from ..runs.summary import RunSummary, answer_of, summarize
from ..runs.verdict import run_verdict

#: Text longer than this is folded (a click unfolds it).
FOLD_CHARS = 600
#: Bytes shown of a binary value, as hex.
BYTES_SHOWN = 64
#: Characters of a one-line gist (a collapsed step's, the index's question and answer).
GIST_CHARS = 160


class ReportUnavailable(RuntimeError):
    """Rendering needs Jinja2, which is not installed."""


@dataclasses.dataclass(frozen=True)
class Shown:
    """A value as the page shows it: its text, and whether it is folded."""

    label: str
    text: str

    @property
    def folded(self) -> bool:
        return len(self.text) > FOLD_CHARS


def render_run(run: Run, config: Config | None = None) -> str:
    """The self-contained HTML page of ``run`` (see the package docstring)."""
    template = templates().get_template("run.html.j2")
    return surrogates_escaped(template.render(page=_page(run, config or Config())))


@dataclasses.dataclass(frozen=True)
class IndexLine:
    """A run as the index lists it: its ``ls`` line, its question and its answer."""

    summary: RunSummary
    question: str | None
    answer: str | None


def index_line(run: Run) -> IndexLine:
    """The line of ``run`` in :func:`render_index`."""
    return IndexLine(summarize(run), run.question(), answer_of(run))


def render_index(lines: Sequence[IndexLine], title: str) -> str:
    """The page listing ``lines`` (the columns of ``ls``, the question asked and the
    answer given, each on one shortened line), each linking to the page
    :func:`page_name` names; sortable and filterable in the page."""
    rows = [
        {
            "summary": line.summary,
            "page": page_name(line.summary.run_id),
            "start": datetime.datetime.fromtimestamp(
                line.summary.start_ns / 1e9, datetime.timezone.utc
            )
            .isoformat(timespec="seconds")
            .replace("+00:00", "Z"),
            "question": gist(line.question),
            "answer": gist(line.answer),
            # A run that raised before it answered: what it raised, in the answer's place.
            "raised": gist(f"raised {line.summary.run_verdict.outcome.error}")
            if line.summary.raised
            else None,
        }
        for line in lines
    ]
    template = templates().get_template("index.html.j2")
    return surrogates_escaped(template.render(title=title, rows=rows))


def render_diff(result: RunDiff, labels: tuple[str, str]) -> str:
    """The page of two runs side by side: their steps aligned as ``diff`` aligns them, the
    first divergent step highlighted, each changed field as a line diff with the changed
    words of a changed line marked."""
    first = result.first_divergence
    rows = []
    for n, pair in enumerate(result.pairs):
        rows.append(
            {
                "n": n,
                "status": pair.status,
                "first": pair is first,
                "a": _side(pair.a),
                "b": _side(pair.b),
                "changes": [_change(c) for c in pair.changes],
            }
        )
    template = templates().get_template("diff.html.j2")
    return surrogates_escaped(
        template.render(
            labels=labels,
            runs=[_diff_head(result.a), _diff_head(result.b)],
            equal=result.equal,
            first=next((r["n"] for r in rows if r["first"]), None),
            run_changes=[_change(c) for c in result.run_changes],
            rows=rows,
        )
    )


def _diff_head(run: Run) -> dict[str, Any]:
    return {"run_id": run.run_id, "verdict": run.kit.verdict, "steps": len(run.steps)}


def _side(step: Step | None) -> dict[str, Any] | None:
    if step is None:
        return None
    return {
        "index": step.index,
        "depth": step.depth,
        "kind": step.kind,
        "label": _name(step),
        "duration_ms": (step.end_ns - step.start_ns) / 1e6,
    }


def _change(change: Change) -> dict[str, Any]:
    """A changed field as lines: kept, removed (in A only), added (in B only); each line
    as pieces of text, those that changed within a changed line marked."""
    a, b = _text(change.a).splitlines(), _text(change.b).splitlines()
    lines: list[tuple[str, list[tuple[str, bool]]]] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            lines += [(" ", [(line, False)]) for line in a[i1:i2]]
            continue
        removed = [[(line, False)] for line in a[i1:i2]]
        added = [[(line, False)] for line in b[j1:j2]]
        # A removed line and the added line in its place: their changed words marked.
        for n, (old, new) in enumerate(zip(a[i1:i2], b[j1:j2], strict=False)):
            found = text_diff.pieces(old, new)
            removed[n] = [(x, kind == "change") for kind, x, _ in found if x]
            added[n] = [(y, kind == "change") for kind, _, y in found if y]
        lines += [("-", parts) for parts in removed] + [("+", parts) for parts in added]
    return {"field": change.field, "lines": lines}


def page_name(run_id: str) -> str:
    """The file name of a run's page beside the index: its id when that is plain hex,
    else a digest of it."""
    if re.fullmatch(r"[0-9a-f]{1,64}", run_id):
        return f"run-{run_id}.html"
    return f"run-{hashlib.sha256(run_id.encode('utf-8', 'surrogatepass')).hexdigest()}.html"


def write_run_page(
    directory: str, config: Config, run_id: str | None, run: Run
) -> IndexLine | None:
    """Write ``run``'s page into ``directory`` (as :func:`page_name` names it) when
    ``run_id`` names it (see :func:`~otel_replay.runs.pick.is_named`); its line in the
    index (None when not named)."""
    if not is_named(run, run_id):
        return None
    path = os.path.join(directory, page_name(run.run_id))
    with open(path, "w", encoding="utf-8") as f:
        f.write(render_run(run, config))
    return index_line(run)


def require() -> None:
    """Raise :class:`ReportUnavailable` unless the pages can be rendered (Jinja2)."""
    templates()


@functools.cache
def templates() -> Any:
    """The pages' Jinja2 environment: the package's templates, every value escaped."""
    try:
        # optional: the report extra
        import jinja2
    except ImportError:
        raise ReportUnavailable(f"an HTML report needs Jinja2: {install_hint('report')}") from None
    return jinja2.Environment(
        loader=jinja2.PackageLoader("otel_replay.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def _page(run: Run, config: Config) -> dict[str, Any]:
    line = summarize(run)
    findings = find_anomalies(run, config)
    by_step: dict[int, list[Finding]] = {}
    for f in findings:
        by_step.setdefault(f.step, []).append(f)
    start, end = run.start_ns, max(run.end_ns, run.start_ns + 1)
    kit = run.kit
    return {
        "run_id": run.run_id,
        "trace_ids": run.trace_ids,
        "agent": line.agent,
        "ids": [
            (name, value)
            for name, value in (
                ("user", line.user_id),
                ("tenant", line.tenant_id),
                ("session", line.session_id),
            )
            if value
        ],
        "models": line.models,
        "duration_ms": line.duration_ms,
        "tokens": (line.input_tokens, line.output_tokens),
        "counts": (line.steps, line.model_calls, line.tool_calls, line.errors),
        "verdict": kit.verdict,
        "replayable": kit.replayable,
        # Recorded, replays, outcome: each (words, meaning), as every command says them.
        "said": run_verdict(run).parts(),
        "missing": kit.missing,
        "not_set": kit.not_set,
        "problems": kit.problems,
        "fingerprint": [(k, _text(v)) for k, v in sorted(run.fingerprint.items())],
        "final_output": answer_of(run),  # none when the agent raised
        "findings": findings,
        "steps": [
            _step(s, start, end, by_step.get(s.index, []), _earlier(run, s)) for s in run.steps
        ],
    }


def _earlier(run: Run, step: Step) -> tuple[int, int] | None:
    """The model step before ``step`` whose whole input opens ``step``'s input, and how
    many messages that is: the page shows only what is new (a conversation resends its
    history, which would make a long run's page grow with the square of its length)."""
    m = step.model
    if step.kind != "model" or m is None or not m.input_messages:
        return None
    before = [s for s in run.steps if s.kind == "model" and s.start_ns < step.start_ns]
    for prior in reversed(before):
        inputs = prior.model.input_messages if prior.model is not None else None
        if inputs and len(inputs) < len(m.input_messages):
            if m.input_messages[: len(inputs)] == inputs:
                return prior.index, len(inputs)
            return None
    return None


def _step(
    step: Step, start: int, end: int, findings: list[Finding], earlier: tuple[int, int] | None
) -> dict[str, Any]:
    span = end - start
    left = 100.0 * (step.start_ns - start) / span
    width = max(100.0 * (step.end_ns - step.start_ns) / span, 0.3)
    shown: list[Shown] = []
    marks: list[float] = []
    exact: list[tuple[str, str]] = []
    m, t = step.model, step.tool
    if m is not None:
        if m.system_instructions:
            shown.append(Shown("system instructions", _parts(m.system_instructions)))
        inputs = m.input_messages or []
        if earlier is not None:
            index, seen = earlier
            what = f"{seen} message{'s' if seen != 1 else ''}"
            shown.append(Shown("input", f"step {index}'s input ({what}), then:"))
            inputs = inputs[seen:]
        for label, messages in (("input", inputs), ("output", m.output_messages)):
            if messages:
                shown.extend(_messages(label, messages))
        if m.tool_definitions:
            shown.append(Shown("tool definitions", _text(m.tool_definitions)))
        if m.params:
            shown.append(Shown("parameters", _text(m.params)))
        if m.usage:
            shown.append(Shown("usage", _text(m.usage)))
        for label, p in (("input", m.input_payload), ("output", m.output_payload)):
            if p is not None:
                exact.append((f"{label} messages", p.status))
        if m.raw is not None and m.raw.chunk_offsets_ms:
            # The first chunk of a streamed answer, on the run's time axis.
            first = step.start_ns + int(m.raw.chunk_offsets_ms[0] * 1e6)
            marks.append(100.0 * (first - start) / span)
    if t is not None:
        shown.append(Shown("arguments", _text(t.arguments)))
        if t.error is not None:
            shown.append(Shown("raised", f"{t.error.type}: {t.error.message}"))
        else:
            shown.append(Shown("result", _text(t.result)))
        for label, p in (("arguments", t.arguments_payload), ("result", t.result_payload)):
            if p is not None:
                exact.append((label, p.status))
    for snap in step.snapshots:
        shown.append(Shown(f"snapshot {snap.name}", _text(snap.to_json()["state"])))
    return {
        "gist": _step_gist(step),
        "index": step.index,
        "depth": step.depth,
        "kind": step.kind,
        "label": _name(step),
        "model": _model_name(step),
        "duration_ms": (step.end_ns - step.start_ns) / 1e6,
        "failed": step.status == "ERROR" or (t is not None and t.error is not None),
        "status_message": step.status_message,
        "timed": step.timed,
        "left": round(left, 3),
        "width": round(min(width, 100.0 - left), 3),
        "marks": [round(x, 3) for x in marks],
        "shown": shown,
        "exact": exact,
        "findings": findings,
    }


def gist(text: str | None, limit: int = GIST_CHARS) -> str | None:
    """``text`` on one line (each run of whitespace one space), cut to ``limit``
    characters with an ellipsis: what a collapsed step or a row of the index shows."""
    if text is None:
        return None
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def _step_gist(step: Step) -> str | None:
    """What a step was given and gave, on one line: a tool's arguments and result (or
    error); a model call's last message in and its text or calls out."""
    t, m = step.tool, step.model
    if t is not None:
        out = f"raised {t.error.type}: {t.error.message}" if t.error else _compact(t.result)
        return gist(f"{_compact(t.arguments)} → {out}")
    if m is not None and (m.input_messages or m.output_messages):
        said = _said(m.input_messages[-1]) if m.input_messages else "(no input recorded)"
        if m.output_messages:
            answer = " ".join(_said(message, role=False) for message in m.output_messages)
        else:
            answer = (
                f"failed: {step.status_message or 'no output'}"
                if step.status == "ERROR"
                else "(no output recorded)"
            )
        half = GIST_CHARS // 2
        return gist(f"{gist(said, half)} → {answer}")
    return gist(step.status_message) if step.status == "ERROR" else None


def _said(message: dict[str, Any], *, role: bool = True) -> str:
    """A message on one line: its text, its tool calls as ``name(arguments)``, the
    results it carries; its role first when ``role``."""
    parts = message.get("parts")
    pieces = []
    for p in parts if isinstance(parts, list) else [message]:
        kind = p.get("type") if isinstance(p, dict) else None
        if kind == "text" and isinstance(p.get("content"), str):
            pieces.append(p["content"])
        elif kind == "tool_call":
            pieces.append(f"{p.get('name')}({_compact(p.get('arguments'))})")
        elif kind == "tool_call_response":
            pieces.append(_compact(p.get("response", p.get("result"))))
        else:
            pieces.append(_compact(p))
    text = " ".join(pieces)
    return f"{message.get('role', '?')}: {text}" if role else text


def _compact(value: Any) -> str:
    """A value on one line: a string as it is, the rest as compact JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        return _text(value)
    try:
        return json.dumps(value, ensure_ascii=False, default=_unknown)
    except (TypeError, ValueError):
        return repr(value)


def _name(step: Step) -> str:
    """What a step is called on a page: its tool, else its span's name."""
    return step.tool.tool_name if step.tool is not None else step.name


def _model_name(step: Step) -> str | None:
    """The model a step called, when its name does not say it already."""
    m = step.model
    name = (m.response_model or m.request_model) if m is not None else None
    return None if name is None or name in step.name else name


def _messages(label: str, messages: list[dict[str, Any]]) -> list[Shown]:
    """One block per message: its role, then its parts (text as text, the rest as JSON)."""
    out = []
    for message in messages:
        role = str(message.get("role", "?"))
        parts = message.get("parts")
        shown = _parts(parts) if isinstance(parts, list) else _text(message)
        out.append(Shown(f"{label}: {role}", shown))
    return out


def _parts(parts: list[Any]) -> str:
    """Message parts: a text part as its text, any other as JSON."""
    return "\n\n".join(
        p["content"]
        if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("content"), str)
        else _text(p)
        for p in parts
    )


def _text(value: Any) -> str:
    """A value as text: strings as they are, bytes as their size and first bytes in hex,
    the rest as indented JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray)):
        head = bytes(value[:BYTES_SHOWN]).hex(" ")
        more = " …" if len(value) > BYTES_SHOWN else ""
        return f"{len(value)} bytes: {head}{more}"
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=_unknown)
    except (TypeError, ValueError):
        return repr(value)


def _unknown(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray)):
        return _text(value)
    return f"<{type(value).__name__}>"
