"""``otel-replay regress``: lock a recorded run as a pytest regression test.

The test written replays the run through the ``otel_replay`` pytest marker
(tools stubbed, model pinned, clock frozen, network refused) with the user's
own agent, and asserts the recorded final answer, the recorded tool calls
(names and arguments, in order) and each user-supplied predicate
``check(answer, run) -> bool``.  The recording (and its blobs) is copied
beside the test, so the pair can be committed as it is.

The agent is called as ``agent(QUESTION, model=session.model, **AGENT_KWARGS)``:
``QUESTION`` is the run's recorded input, ``AGENT_KWARGS`` come from
``--kwarg NAME=VALUE`` (VALUE as JSON, else as text; ``@field`` takes a field
of the recorded fingerprint, e.g. ``user_id=@user.id``).
"""

from __future__ import annotations

import json
import keyword
import os
import pprint
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .. import messages as M
from .. import payload
from ..runs.model import Run

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class RegressError(ValueError):
    """The test cannot be written as asked (bad reference, nothing to ask the agent)."""


def question_of(run: Run) -> str:
    """The run's input text: the root agent's recorded input, else the first user message."""
    for root in run.roots:
        if root.model is not None and root.model.input_messages:
            text = M.last_text(root.model.input_messages)
            if text is not None:
                return text
    for step in run.model_steps():
        for message in (step.model.input_messages or []) if step.model else []:
            if message.get("role") == "user":
                text = M.last_text([message])
                if text is not None:
                    return text
    raise RegressError(f"run {run.run_id} has no recorded input text to ask the agent")


def tool_calls_of(run: Run) -> list[tuple[str, Any]]:
    """``(tool name, arguments)`` of each recorded tool call, in order, as plain values."""
    return [
        (s.tool.tool_name, payload.plain(s.tool.arguments))
        for s in run.tool_steps()
        if s.tool is not None and not s.tool.derived
    ]


def agent_kwargs(run: Run, pairs: Sequence[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs: VALUE as JSON, else text; ``@field`` from the fingerprint."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name.isidentifier() or keyword.iskeyword(name):
            raise RegressError(f"--kwarg {pair!r}: expected NAME=VALUE")
        if raw.startswith("@"):
            field = raw[1:]
            if field not in run.fingerprint:
                known = ", ".join(sorted(run.fingerprint)) or "none"
                raise RegressError(f"--kwarg {pair!r}: the run recorded no {field} ({known})")
            out[name] = run.fingerprint[field]
            continue
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


def _import_line(ref: str, alias: str) -> str:
    if not _REF.match(ref):
        raise RegressError(f"{ref!r} is not MODULE:NAME (e.g. myapp.agent:run_agent)")
    module, _, name = ref.partition(":")
    if "." in name:
        raise RegressError(f"{ref!r}: name a top-level function of the module")
    return f"from {module} import {name} as {alias}"


def _literal(value: Any) -> str:
    return pprint.pformat(value, indent=4, width=88, sort_dicts=False)


def test_source(
    run: Run,
    *,
    recording: str,
    agent: str,
    kwargs: Mapping[str, Any],
    checks: Sequence[str] = (),
    question: str | None = None,
) -> str:
    """The text of the regression test module (``recording``: its file name, beside it)."""
    imports = [_import_line(agent, "agent")]
    names = []
    for i, ref in enumerate(checks):
        alias = f"check_{i + 1}"
        imports.append(_import_line(ref, alias))
        names.append((alias, ref))
    answer = run.final_output()
    agent_name = next(
        (str(r.attributes.get("gen_ai.agent.name")) for r in run.roots if r.kind == "agent"),
        "agent",
    )
    lines = [
        f'"""Regression test for run {run.run_id} ({agent_name}).',
        "",
        "Written by otel-replay regress.  It replays the recorded run (the file",
        f"{recording}, beside this one) through the otel_replay pytest",
        "marker: tools stubbed, model pinned, clock frozen, network",
        "refused.  It fails when the agent leaves the recording (the report names the",
        "step), when the final answer or the tool calls differ, or when a check fails.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import pytest",
        "",
        *imports,
        "",
        f"RECORDING = {recording!r}",
        f"RUN_ID = {run.run_id!r}",
        f"QUESTION = {_literal(question if question is not None else question_of(run))}",
        f"AGENT_KWARGS = {_literal(dict(kwargs))}",
        f"FINAL_ANSWER = {_literal(answer)}",
        f"TOOL_CALLS = {_literal(tool_calls_of(run))}",
        "",
        "",
        "@pytest.mark.otel_replay(RECORDING, run_id=RUN_ID)",
        f"def test_run_{run.run_id[:12]}_still_behaves(otel_replay_session):",
        "    session = otel_replay_session",
        "    answer = agent(QUESTION, model=session.model, **AGENT_KWARGS)",
    ]
    if answer is not None:
        lines.append("    assert answer == FINAL_ANSWER")
    lines.append("    assert session.tool_calls == TOOL_CALLS")
    for alias, ref in names:
        lines.append(f"    assert {alias}(answer, session.run), {f'{ref} failed'!r}")
    return "\n".join(lines) + "\n"


def write_regression(
    run: Run,
    output: str | os.PathLike[str],
    *,
    agent: str,
    kwargs: Sequence[str] = (),
    checks: Sequence[str] = (),
    question: str | None = None,
) -> tuple[Path, Path]:
    """Write the test to ``output`` and the recording beside it; returns both paths."""
    from ..export.convert import convert

    out = Path(output)
    if out.suffix != ".py":
        raise RegressError(f"{out}: the test file must end in .py")
    if not run.sources or any(s == "-" or "://" in s for s in run.sources):
        raise RegressError(f"run {run.run_id}: its recording is not a file to copy")
    recording = out.with_name(out.stem + ".otlp")
    source = test_source(
        run,
        recording=recording.name,
        agent=agent,
        kwargs=agent_kwargs(run, kwargs),
        checks=checks,
        question=question,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    convert(run.sources, recording)  # every span of the sources, and their blobs
    out.write_text(source, encoding="utf-8")
    return out, recording
