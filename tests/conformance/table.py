"""The conformance tables, made from the checks the conformance test runs.

    PYTHONPATH=src python -m tests.conformance.table [--check]

(from the repository root) rewrites the part of the documentation's
``docs/instrumentations.md`` between its summary markers (one row per stack, one column per
mode: rebuilt exactly or not, and the verdict) and the part of
``tests/conformance/README.md`` between its table markers: the stacks (from their ``stack.json`` and
``requirements.txt``), one row per case (stack, mode, API, agent runs,
rebuilt exactly or not, the verdict of each run, the known gap), the modes
stacks skip and why, and, for each case that is not rebuilt exactly, the
differences the check found.  With
``--check`` it only says whether the README is current (exit 1 when not).  With
``--readme`` it writes the scenarios table (one row per scenario: its stacks, modes,
cases, how many rebuild exactly or lack what the check asks for, and how many the
stacks' own agents replay) between its markers in the project's ``README.md``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

from tests.conformance.checks import Case, Outcome, check, find_cases
from tests.conformance.generate import STACKS, stack_config

README = Path(__file__).resolve().parent / "README.md"
START = "<!-- conformance-table:start (python -m tests.conformance.table) -->"
END = "<!-- conformance-table:end -->"
#: The documentation page with the summary (a stack x mode table).
MAIN_README = Path(__file__).resolve().parents[2] / "docs" / "instrumentations.md"
SUMMARY_START = "<!-- conformance-summary:start (python -m tests.conformance.table) -->"
SUMMARY_END = "<!-- conformance-summary:end -->"
#: The project's README, with the scenarios table (scenarios x stacks x modes).
ROOT_README = Path(__file__).resolve().parents[2] / "README.md"
SCENARIOS_START = (
    "<!-- conformance-scenarios:start (python -m tests.conformance.table --readme) -->"
)
SCENARIOS_END = "<!-- conformance-scenarios:end -->"
#: The row all drawn scenarios (``seed-N``) share.
DRAWN = "drawn (`seed-N`)"
#: Span ids differ at each generation and say nothing to a reader of the table.
_SPAN = re.compile(r", span [0-9a-f]+\)")
#: Differences shown per case; the test shows them all.
SHOWN_PROBLEMS = 8


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


#: How a case that is not rebuilt only for what its trace lacks is marked.
NOT_IN_TRACE = "not in the trace"


def _exact(o: Outcome, not_recorded: dict[str, str]) -> str:
    if o.exact:
        return "yes"
    return NOT_IN_TRACE if o.case.id in not_recorded else "**no**"


#: The ways the stack's own agent replays a case (``replay.json``), as the tables name them.
HOWS = {"serve": "serve", "inprocess": "in-process"}


#: The refusal a stub gives when the trace holds only the text the model was sent.
REFUSAL = "the trace holds only the text the model was sent"
#: The refusal of a model call that failed partway through a stream the trace holds nothing of.
CUT_REFUSAL = "the trace holds nothing of what streamed before the failure"
#: The refusal of a tool step whose result the trace lacks (its stub has nothing to return).
NO_RESULT_REFUSAL = "no result was recorded for this tool call"
#: The refusal of a model step whose request the trace lacks (nothing to match it by).
NO_INPUT_REFUSAL = "its request is not in the trace"


def refused(detail: object) -> bool:
    """Whether a replay's ``detail`` is a refusal by design, naming what the trace lacks."""
    return any(
        said in str(detail) for said in (REFUSAL, CUT_REFUSAL, NO_RESULT_REFUSAL, NO_INPUT_REFUSAL)
    )


#: A replay that stopped at a step by design, naming what the trace lacks.
REFUSED = "refused"


def replay_mark(case: Case, how: str) -> str:
    """``yes``, ``**no**``, ``refused`` (naming what the trace lacks), ``n/a`` or ``not run``;
    ``-`` for a case without content."""
    if not case.meta["content"]:
        return "-"
    result = case.replayed().get(how)
    if result is None:
        return "not run"
    if result["ok"] is False and refused(result.get("detail")):
        return REFUSED
    return {True: "yes", False: "**no**", None: "n/a"}[result["ok"]]


def _row(o: Outcome, gaps: dict[str, str], not_recorded: dict[str, str]) -> str:
    meta = o.case.meta
    exact = _exact(o, not_recorded)
    verdicts = ", ".join(o.verdicts) or "no run"
    gap = gaps.get(o.case.id) or not_recorded.get(o.case.id)
    gap = gap or ("" if o.exact else "(not in KNOWN_GAPS)")
    replays = [replay_mark(o.case, how) for how in HOWS]
    cells = [meta["stack"], scenario_of(o.case), meta["mode"], meta["api"], str(meta["runs"])]
    cells += [exact, verdicts]
    cells += [*replays, gap]
    return "| " + " | ".join(_cell(c) for c in cells) + " |"


def scenario_of(case: Case) -> str:
    """The name of the scenario a case ran (``default`` for the corpus's first cases)."""
    return str(case.meta.get("scenario", "default"))


def _in_stack_order(case: Case) -> tuple[str, bool, str, int, str]:
    """Cases by stack, the default scenario's first, then by scenario, then in the order the
    stack lists its modes."""
    stack, mode, name = case.meta["stack"], case.meta["mode"], scenario_of(case)
    path = STACKS / stack / "stack.json"
    modes = list(stack_config(stack)["modes"]) if path.exists() else []
    return stack, name != "default", name, modes.index(mode) if mode in modes else len(modes), mode


def _stacks(configs: dict[str, dict[str, Any]]) -> list[str]:
    """One line per stack: what it is (its ``stack.json``) and its pinned packages."""
    if not configs:
        return []
    lines = ["Stacks (`stacks/<stack>/`):", ""]
    for stack, config in configs.items():
        pins = _pins(stack)
        lines.append(f"- `{stack}`: {config['description']} ({', '.join(pins)})")
    return lines


def _pins(stack: str) -> list[str]:
    """The stack's pinned packages: its requirements, or its ``package.json`` dependencies."""
    package = STACKS / stack / "package.json"
    if package.is_file():
        deps = json.loads(package.read_text(encoding="utf-8")).get("dependencies", {})
        return [f"{name}@{version}" for name, version in sorted(deps.items())]
    requirements = (STACKS / stack / "requirements.txt").read_text(encoding="utf-8")
    return [p for p in requirements.splitlines() if "==" in p and not p.startswith("#")]


def _count(outcomes: list[Outcome], not_recorded: dict[str, str]) -> str:
    exact = sum(o.exact for o in outcomes)
    lacking = sum(not o.exact and o.case.id in not_recorded for o in outcomes)
    return (
        f"{exact} of {len(outcomes)} cases rebuild exactly; {lacking} more lack in their "
        "trace what the check asks for (no reader could rebuild it: the verdict says what "
        "is missing)."
    )


def render(cases: list[Case], gaps: dict[str, str], not_recorded: dict[str, str]) -> str:
    """The stacks, the table, the skipped modes, and the differences of each inexact case."""
    outcomes = [check(c) for c in sorted(cases, key=_in_stack_order)]
    lines = [
        _count(outcomes, not_recorded),
        "",
        "| stack | scenario | mode | API | runs | rebuilt exactly | verdict | serve | in-process "
        "| known gap |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *(_row(o, gaps, not_recorded) for o in outcomes),
    ]
    lines += ["", *scenario_matrix(outcomes, not_recorded)]
    stacks = sorted({c.meta["stack"] for c in cases})
    configs = {st: stack_config(st) for st in stacks if (STACKS / st / "stack.json").exists()}
    skipped = [
        f"- `{stack}/{mode}`: {why}"
        for stack, config in configs.items()
        for mode, why in config.get("skipped", {}).items()
    ]
    if skipped:
        lines += ["", "Modes not recorded, and why:", "", *skipped]
    lines = [*_stacks(configs), "", *lines] if configs else lines
    lines += ["", *_replay_notes(cases, not_recorded)]
    failing = [o for o in outcomes if not o.exact]
    if failing:
        lines += ["", "What the check finds in each case that is not rebuilt exactly:", ""]
        for o in failing:
            lines.append(f"- `{o.case.id}`:")
            lines += [f"  - {_SPAN.sub(')', p)}" for p in o.problems[:SHOWN_PROBLEMS]]
            if len(o.problems) > SHOWN_PROBLEMS:
                lines.append(f"  - ... and {len(o.problems) - SHOWN_PROBLEMS} more")
    return "\n".join(lines) + "\n"


def _modes_of(outcomes: list[Outcome]) -> list[str]:
    """The modes of ``outcomes``: the common ones in their order, then the others."""
    modes = [m for m in COMMON_MODES if any(o.case.meta["mode"] == m for o in outcomes)]
    for o in outcomes:
        if o.case.meta["mode"] not in modes:
            modes.append(o.case.meta["mode"])
    return modes


def scenario_matrix(outcomes: list[Outcome], not_recorded: dict[str, str]) -> list[str]:
    """Scenarios x stacks x modes: one row per stack and scenario, one column per mode, each
    cell rebuilt exactly (or not, or not in the trace) and the two replays (serve,
    in-process: yes, **no**, n/a, not run)."""
    modes = _modes_of(outcomes)
    cells: dict[tuple[str, str], dict[str, str]] = {}
    for o in outcomes:
        replays = "/".join(replay_mark(o.case, how) for how in HOWS)
        key = (o.case.meta["stack"], scenario_of(o.case))
        cells.setdefault(key, {})[o.case.meta["mode"]] = f"{_exact(o, not_recorded)}; {replays}"
    lines = [
        "Scenarios × stacks × modes (`scenario/`: the default story and the named ones; "
        "cases of a scenario other than the default are `cases/<stack>/<mode>@<scenario>/`). "
        "Each cell: rebuilt exactly; replayed by serve / in-process.",
        "",
        "| stack | scenario | " + " | ".join(modes) + " |",
        "|---|---|" + "---|" * len(modes),
    ]
    for (stack, name), row in cells.items():
        lines.append(f"| {stack} | {name} | " + " | ".join(row.get(m, "") for m in modes) + " |")
    return lines


def _replay_notes(cases: list[Case], not_recorded: dict[str, str]) -> list[str]:
    """What the replay columns mean, why a case does not apply, and each failure's first line."""
    lines = [
        "Replay columns: the stack's own agent, untraced, run again against the case's trace "
        "(`python -m tests.conformance.replay_agents`): **serve**, its model base URL pointed "
        "at `otel-replay serve`; **in-process**, inside `otel_replay.replay(...)` with its "
        "framework's tools stubbed (none may run for real). Yes: it ended with the recorded "
        "answers.",
        "",
    ]
    reasons: dict[str, list[str]] = {}
    failures = []
    for case in sorted(cases, key=_in_stack_order):
        for how, name in HOWS.items():
            result = case.replayed().get(how)
            if result is None or result["ok"] is True:
                continue
            first = str(result["detail"]).strip().splitlines()[0] if result["detail"] else ""
            if result["ok"] is None:
                reasons.setdefault(first, []).append(case.id)
            elif case.id in not_recorded:
                failures.append(f"- `{case.id}` ({name}): {NOT_IN_TRACE}: {not_recorded[case.id]}")
            else:
                failures.append(f"- `{case.id}` ({name}): {first}")
    for why, ids in reasons.items():
        lines.append(f"- n/a, {why}: {', '.join(f'`{i}`' for i in ids)}")
    if failures:
        lines += ["", "Replays that did not end with the recorded answers:", "", *failures]
    return lines


def replay_summary(cases: list[Case], not_recorded: dict[str, str]) -> str:
    """Stack: how many of its content cases its own agent replays, each way (a case whose
    trace lacks what replay needs counted apart)."""
    rows: dict[str, dict[str, list[str]]] = {}
    for case in sorted(cases, key=_in_stack_order):
        if not case.meta["content"]:
            continue
        for how in HOWS:
            mark = replay_mark(case, how)
            if mark == "**no**" and case.id in not_recorded:
                mark = NOT_IN_TRACE
            rows.setdefault(case.meta["stack"], {}).setdefault(how, []).append(mark)
    changed: dict[str, str] = {}
    for case in cases:
        result = case.replayed().get("changed")
        if result is not None:
            changed[case.meta["stack"]] = {True: "diverges", False: "**no**", None: "n/a"}[
                result["ok"]
            ]
    lines = [
        "| stack | " + " | ".join(HOWS.values()) + " | a tool result changed |",
        "|---|" + "---|" * (len(HOWS) + 1),
    ]
    for stack, marks in rows.items():
        cells = []
        for how in HOWS:
            got = marks.get(how, [])
            applies = [m for m in got if m not in ("n/a", NOT_IN_TRACE, REFUSED)]
            cell = f"{applies.count('yes')} of {len(applies)}" if applies else ""
            apart = [f"{got.count(m)} {m}" for m in (NOT_IN_TRACE, REFUSED, "n/a") if got.count(m)]
            if apart and applies:
                cell += f" ({', '.join(apart)})"
            elif not applies:
                cell = ", ".join(m for m in apart if not m.endswith(" n/a")) or "n/a"
            cells.append(cell)
        cells.append(changed.get(stack, "not run"))
        lines.append(f"| {stack} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


#: The summary's first columns, in this order; a stack's own modes follow.
COMMON_MODES = (
    "sync",
    "async",
    "stream",
    "async_stream",
    "responses",
    "responses_stream",
    "anthropic",
    "anthropic_stream",
    "no_content",
    "two_runs",
    "two_runs_concurrent",
)


def summary(cases: list[Case], not_recorded: dict[str, str]) -> str:
    """Stack x mode: rebuilt exactly or not (or not in the trace), with the verdicts (the
    default scenario's cases; the README's table has the others)."""
    cases = [c for c in cases if scenario_of(c) == "default"]
    outcomes = [check(c) for c in sorted(cases, key=_in_stack_order)]
    modes = _modes_of(outcomes)
    cells: dict[str, dict[str, str]] = {}
    for o in outcomes:
        verdicts = ", ".join(sorted(set(o.verdicts))) or "no run"
        mark = _exact(o, not_recorded)
        cells.setdefault(o.case.meta["stack"], {})[o.case.meta["mode"]] = f"{mark} ({verdicts})"
    lines = [
        _count(outcomes, not_recorded),
        "Per case: rebuilt exactly, and the verdict; a blank cell is a mode the stack does not "
        "have or that is not recorded.",
        "",
        "| stack | " + " | ".join(modes) + " |",
        "|---|" + "---|" * len(modes),
    ]
    for stack, row in cells.items():
        lines.append(f"| {stack} | " + " | ".join(row.get(m, "") for m in modes) + " |")
    lines += [
        "",
        "Replayed by the stack's own agent, unchanged and untraced, from the trace of each "
        "case with content: through `otel-replay serve`, and in-process inside "
        "`otel_replay.replay(...)` with its framework's tools stubbed (an agent that calls its "
        "tool functions itself gets `@otel_replay.tool` on each, as documented; n/a: a "
        "JavaScript agent, or two runs in one process). "
        "With one recorded tool result changed, the in-process replay of the stack's first "
        "case diverges, naming the step. Refused: the replay stops at the step whose value "
        "the trace does not hold, naming it (a LiteLLM loop's raising tool: a client-only "
        "trace keeps only the error text the loop made, not the exception).",
        "",
        replay_summary(cases, not_recorded).rstrip("\n"),
    ]
    return "\n".join(lines) + "\n"


def _scenario_row(name: str) -> str:
    return DRAWN if name.startswith("seed-") else name


def _replays(cases: list[Case], how: str, not_recorded: dict[str, str]) -> str:
    """``X of Y`` content cases the stack's agent replays ``how`` (those it applies to), with
    the ones refused by design or lacking in their trace what replay needs counted apart."""
    marks = []
    for case in cases:
        mark = replay_mark(case, how)
        marks.append(NOT_IN_TRACE if mark == "**no**" and case.id in not_recorded else mark)
    applies = [m for m in marks if m not in ("n/a", NOT_IN_TRACE, REFUSED)]
    cell = f"{applies.count('yes')} of {len(applies)}"
    apart = [f"{marks.count(m)} {m}" for m in (REFUSED, NOT_IN_TRACE) if marks.count(m)]
    return f"{cell} ({', '.join(apart)})" if apart else cell


def scenarios_table(cases: list[Case], not_recorded: dict[str, str]) -> str:
    """Scenarios x stacks x modes, one row per scenario (the drawn ones together): how many
    stacks and modes ran it, its cases, how many rebuild exactly and how many lack in their
    trace what the check asks for, and how many its stacks' own agents replay through
    ``serve`` and in process (of the cases with content each way applies to)."""
    rows: dict[str, list[Outcome]] = {}
    for case in sorted(cases, key=_in_stack_order):
        rows.setdefault(_scenario_row(scenario_of(case)), []).append(check(case))
    lines = [
        "| scenario | stacks | modes | cases | rebuilt exactly | not in the trace "
        "| serve replays | in-process replays |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, outcomes in rows.items():
        content = [o.case for o in outcomes if o.case.meta["content"]]
        cells = [
            name,
            str(len({o.case.meta["stack"] for o in outcomes})),
            str(len({o.case.meta["mode"] for o in outcomes})),
            str(len(outcomes)),
            str(sum(o.exact for o in outcomes)),
            str(sum(not o.exact and o.case.id in not_recorded for o in outcomes)),
            *(_replays(content, how, not_recorded) for how in HOWS),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def table_in(readme: str, start_mark: str = START, end_mark: str = END) -> str:
    """The table part of the README text (between the markers)."""
    start, end = readme.index(start_mark) + len(start_mark), readme.index(end_mark)
    return readme[start:end].strip("\n") + "\n"


def _replaced(text: str, start_mark: str, end_mark: str, table: str) -> str:
    start, end = text.index(start_mark) + len(start_mark), text.index(end_mark)
    return text[:start] + "\n" + table + text[end:]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.conformance.table", description=__doc__)
    ap.add_argument("--check", action="store_true", help="only check that the README is current")
    ap.add_argument(
        "--readme",
        action="store_true",
        help="write the scenarios table between its markers in the project's README.md",
    )
    a = ap.parse_args(argv)
    from tests.conformance.test_conformance import KNOWN_GAPS, NOT_RECORDED

    cases = find_cases()
    if a.readme:
        block = scenarios_table(cases, NOT_RECORDED)
        root = ROOT_README.read_text(encoding="utf-8")
        if SCENARIOS_START not in root or SCENARIOS_END not in root:
            print(f"README.md has no {SCENARIOS_START} ... {SCENARIOS_END}; the table:\n")
            print(block, end="")
            return 1
        ROOT_README.write_text(
            _replaced(root, SCENARIOS_START, SCENARIOS_END, block), encoding="utf-8"
        )
        print("wrote the scenarios table of README.md")
        return 0
    text = README.read_text(encoding="utf-8")
    main_text = MAIN_README.read_text(encoding="utf-8")
    table, short = render(cases, KNOWN_GAPS, NOT_RECORDED), summary(cases, NOT_RECORDED)
    if a.check:
        current = table_in(text) == table and (
            table_in(main_text, SUMMARY_START, SUMMARY_END) == short
        )
        print("README tables are current" if current else "README tables are stale")
        return 0 if current else 1
    README.write_text(_replaced(text, START, END, table), encoding="utf-8")
    MAIN_README.write_text(
        _replaced(main_text, SUMMARY_START, SUMMARY_END, short), encoding="utf-8"
    )
    print(f"wrote the tables of {README.name} and of docs/{MAIN_README.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
