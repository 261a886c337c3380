"""``otel-replay regress``: lock a recorded run as a pytest regression test.

The test written replays the run through the ``otel_replay`` pytest marker
(tools stubbed, model pinned, clock frozen, network refused) with the user's
own agent, and asserts the recorded final answer, the recorded tool calls
(names and arguments, in order) and each user-supplied predicate
``check(answer, run) -> bool``.  The recording (and its blobs) is copied
beside the test, so the pair can be committed as it is.

The agent is called as ``otel_replay.call_agent(agent, session, QUESTION,
**AGENT_KWARGS)``, the way ``otel-replay replay --agent`` calls it: by the
names of its parameters it is given ``model``, ``base_url`` or ``client``,
else the provider variables point the clients it makes at the replay.
``QUESTION`` is the run's recorded input, ``AGENT_KWARGS`` come from
``--kwarg NAME=VALUE`` (VALUE as JSON, else as text; ``@field`` takes a field
of the recorded fingerprint, e.g. ``user_id=@user.id``).

A run that failed (an anomaly ``otel-replay check`` warns of, or an agent
that raised) is not locked in unless asked (``allow_failed``): the test would
pin the failure as the behaviour to keep.  When asked, the test's docstring
says what failed, and for an agent that raised the test expects the error it
raised (its type and message, as recorded) where another run's final answer is.

Every recorded string (run id, agent name, question, answer, tool names and
arguments) comes from a trace file, which may come from anyone: it enters the
written module only as a Python literal that is checked to read back as the
same value, never as text pasted into code.
"""

from __future__ import annotations

import ast
import json
import keyword
import os
import pprint
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..payload import codec as payload
from ..replay.options import ReplayOptions
from ..replay.servable import Unservable, needed
from ..runs.anomalies import find_anomalies
from ..runs.model import Run
from ..runs.summary import answer_of
from ..runs.verdict import outcome

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class RegressError(ValueError):
    """The test cannot be written as asked (bad reference, nothing to ask the agent)."""


class RunFailed(RegressError):
    """The run failed: a test locking it in would keep the failure."""

    def __init__(self, run_id: str, failures: Sequence[str]) -> None:
        self.run_id = run_id
        self.failures = list(failures)
        shown = self.failures[:10]
        more = len(self.failures) - len(shown)
        super().__init__(
            f"run {run_id} failed, so a test locking it in would keep the failure:\n"
            + "\n".join(f"  {line}" for line in shown)
            + (f"\n  ... and {more} more" if more else "")
            + "\nFix the agent and record a run that succeeds, then lock that one in; or pass "
            "--allow-failed to lock this run in as it is (to pin a known failure while you fix "
            "it: the test says so)."
        )


class RunRefused(RegressError):
    """The trace lacks what the test's replay needs: it would be refused every time."""

    def __init__(self, run_id: str, items: Sequence[Unservable]) -> None:
        self.run_id = run_id
        self.items = list(items)
        super().__init__(
            f"run {run_id} cannot be replayed exactly, so a test of it would be refused: the "
            f"trace lacks {len(self.items)} item(s) the replay needs:\n"
            + "\n".join(f"  {item.what}" for item in self.items)
            + "\nRecord the run again with what is missing captured (see the run's verdict: "
            "otel-replay check)."
        )


def question_of(run: Run) -> str:
    """The run's input text (:meth:`~otel_replay.runs.model.Run.question`); refused
    when it has none."""
    text = run.question()
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


def failures_of(run: Run) -> list[str]:
    """What went wrong in ``run``, one line each: the anomalies ``otel-replay check`` warns
    of, and each agent or model step that ended in error (empty: the run did not fail)."""
    found = [str(f) for f in find_anomalies(run)]
    for step in run.steps:
        if step.kind in ("agent", "model") and step.status == "ERROR":
            why = step.status_message or str(step.attributes.get("error.type") or "")
            found.append(f"{step.label()}: ended in error" + (f": {why}" if why else ""))
    return found


def _import_line(ref: str, alias: str) -> str:
    if not _REF.match(ref):
        raise RegressError(f"{ref!r} is not MODULE:NAME (e.g. myapp.agent:run_agent)")
    module, _, name = ref.partition(":")
    if "." in name:
        raise RegressError(f"{ref!r}: name a top-level function of the module")
    return f"from {module} import {name} as {alias}"


def _literal(value: Any) -> str:
    """``value`` as Python source that evaluates to an equal value, and does nothing else."""
    text = pprint.pformat(value, indent=4, width=88, sort_dicts=False)
    try:
        if _same(ast.literal_eval(text), value):
            return text
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    # NaN, infinities, anything pprint does not write as a literal: JSON text in a str literal.
    try:
        return f"json.loads({json.dumps(value, allow_nan=True)!r})"
    except (TypeError, ValueError) as exc:
        raise RegressError(f"cannot write {type(value).__name__} as a literal: {exc}") from exc


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and repr(a) == repr(b)


def _identifier(text: str) -> str:
    """``text`` cut down to the characters of a Python identifier (for a test's name)."""
    return re.sub(r"\W", "_", text, flags=re.ASCII)[:32] or "run"


def test_source(
    run: Run,
    *,
    recording: str,
    agent: str,
    kwargs: Mapping[str, Any],
    checks: Sequence[str] = (),
    question: str | None = None,
    failures: Sequence[str] = (),
) -> str:
    """The text of the regression test module (``recording``: its file name, beside it).

    ``failures``: what failed in the run, when it is locked in anyway (the docstring
    says so; each line enters as a checked literal, as every recorded string does).
    """
    imports = [_import_line(agent, "agent")]
    names = []
    for i, ref in enumerate(checks):
        alias = f"check_{i + 1}"
        imports.append(_import_line(ref, alias))
        names.append((alias, ref))
    ended = outcome(run)
    answer = answer_of(run)  # None for a run whose agent raised
    agent_name = next(
        (str(r.attributes.get("gen_ai.agent.name")) for r in run.roots if r.kind == "agent"),
        "agent",
    )
    constants: dict[str, Any] = {
        "RECORDING": recording,
        "RUN_ID": run.run_id,
        "AGENT_NAME": agent_name,
        "QUESTION": question if question is not None else question_of(run),
        "AGENT_KWARGS": dict(kwargs),
        "TOOL_CALLS": tool_calls_of(run),
    }
    if answer is not None:
        constants["FINAL_ANSWER"] = answer
    if ended.raised:  # what the agent raised, as recorded (either may be missing)
        constants["RAISED_TYPE"] = ended.error_type
        constants["RAISED_MESSAGE"] = ended.error_message
    if failures:
        constants["KNOWN_FAILURES"] = list(failures)
    assignments = [f"{name} = {_literal(value)}" for name, value in constants.items()]
    uses_json = any(a.partition(" = ")[2].startswith("json.loads(") for a in assignments)
    lines = [
        '"""Regression test for the recorded run RUN_ID of the agent AGENT_NAME.',
        "",
        "Written by otel-replay regress.  It replays the recorded run (the file",
        "RECORDING, beside this one) through the otel_replay pytest",
        "marker: tools stubbed, model pinned, clock frozen, network",
        "refused.  It fails when the agent leaves the recording (the report names the",
        "step), when the final answer or the tool calls differ, or when a check fails.",
        *(
            [
                "",
                "The recorded run FAILED (see KNOWN_FAILURES) and is locked in as it is,",
                "with --allow-failed: this test pins the failing behaviour, and fails once",
                "the agent stops behaving that way.",
            ]
            if failures
            else []
        ),
        *(
            [
                "",
                "The recorded agent raised (RAISED_TYPE: RAISED_MESSAGE): the test expects",
                "it to raise the same, and asserts no final answer.",
            ]
            if ended.raised
            else []
        ),
        '"""',
        "",
        "from __future__ import annotations",
        "",
        *(["import json", ""] if uses_json else []),
        "import pytest",
        "",
        "import otel_replay",
        *imports,
        "",
        *assignments,
        "",
        "",
        "@pytest.mark.otel_replay(RECORDING, run_id=RUN_ID)",
        f"def test_run_{_identifier(run.run_id[:12])}_still_behaves(otel_replay_session):",
        "    session = otel_replay_session",
    ]
    call = "otel_replay.call_agent(agent, session, QUESTION, **AGENT_KWARGS)"
    if ended.raised:
        lines += [
            "    with pytest.raises(Exception) as raised:  # as the recorded run did",
            f"        {call}",
            "    answer = None",
            "    kind = type(raised.value)  # recorded as NAME, QUALNAME or MODULE.QUALNAME",
            "    same = f'.{RAISED_TYPE}'.endswith(f'.{kind.__qualname__}')",
            "    assert RAISED_TYPE in (None, kind.__name__) or same, raised.value",
            "    assert RAISED_MESSAGE is None or str(raised.value) == RAISED_MESSAGE",
        ]
    else:
        lines.append(f"    answer = {call}")
    if answer is not None:
        lines.append("    assert answer == FINAL_ANSWER")
    lines.append("    assert session.tool_calls == TOOL_CALLS")
    for alias, ref in names:
        lines.append(f"    assert {alias}(answer, session.run), {_literal(f'{ref} failed')}")
    source = "\n".join(lines) + "\n"
    ast.parse(source)  # a literal that broke the module would show here, not in pytest
    return source


def write_regression(
    run: Run,
    output: str | os.PathLike[str],
    *,
    agent: str,
    kwargs: Sequence[str] = (),
    checks: Sequence[str] = (),
    question: str | None = None,
    allow_failed: bool = False,
) -> tuple[Path, Path]:
    """Write the test to ``output`` and the recording beside it; returns both paths.

    Raises :class:`RunFailed` for a run that failed (:func:`failures_of`) unless
    ``allow_failed``; :class:`RunRefused` for a run whose trace lacks what the test's
    replay will need (:func:`~otel_replay.replay.servable.needed`), which no flag lets
    through: that test could never run.
    """
    # Only writing a regression needs the converter (and the SDK's span types).
    from ..export.convert import convert

    out = Path(output)
    if out.suffix != ".py":
        raise RegressError(f"{out}: the test file must end in .py")
    lacks = needed(run, ReplayOptions())  # the options of the test's marker
    if lacks:
        raise RunRefused(run.run_id, lacks)
    failures = failures_of(run)
    if failures and not allow_failed:
        raise RunFailed(run.run_id, failures)
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
        failures=failures,
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    convert(run.sources, recording)  # every span of the sources, and their blobs
    out.write_text(source, encoding="utf-8")
    return out, recording
