"""Replay each case with the stack's own agent, untraced, against ``otel-replay serve``.

    python -m tests.conformance.replay_agents [STACK ...] [--mode MODE]... [--write]

(from the repository root).  For every case with content: ``otel-replay serve``
(this checkout's, in a child process) serves the case's trace files; the
stack's ``agent.py`` / ``agent.mjs`` runs as it did when the case was
recorded, in the stack's own environment, with the model server's URL
replaced by the replay server's and its tracing off (``OTEL_SDK_DISABLED``;
what it exports anyway goes to a receiver that counts it).  The case replays
when the agent exits 0 with the recorded final answers.  A failure says why:
the agent's last lines of error output and the server's last log lines.

Each stack's first single-run case is also replayed in-process with the
recorded result of its first ``lookup_order`` call changed (``changed``): the
replay must diverge, naming the step, never end with a silent wrong answer.

``--write`` keeps each result in the case directory as ``replay.json``; the
conformance table shows it.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from tests.conformance.checks import Case, find_cases
from tests.conformance.generate import (
    CACHE,
    CASES,
    HERE,
    ROOT,
    GenerateError,
    alone,
    expected_answers,
    is_node,
    machine_paths,
    node_dir,
    run_agent,
    scrub_text,
    stack_config,
    venv_python,
)
from tests.conformance.receiver import OtlpReceiver
from tests.conformance.scenario import RAISED_LINE, Scenario, scenario_named

#: Where a case keeps how it replayed.
RESULT_FILE = "replay.json"
#: Seconds the replay server may take to load a case and print its URL.
SERVE_START_S = 60
#: The agent untraced: the OpenTelemetry SDKs (Python and Node) make no-op tracers.
UNTRACED = {
    "OTEL_SDK_DISABLED": "true",
    "OTEL_TRACES_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
}


@dataclass
class Replayed:
    """How one case replayed, one way (``serve`` or ``inprocess``)."""

    case: str
    how: str
    #: True: replayed to the recorded answers; False: failed; None: does not apply.
    ok: bool | None
    #: What it did, else why it failed or does not apply.
    detail: str

    def as_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "detail": self.detail}


class ReplayServer:
    """``otel-replay serve FILES`` in a child process; ``url`` once it listens; its log kept."""

    def __init__(self, files: list[Path]) -> None:
        self.files = files
        self.lines: list[str] = []

    def __enter__(self) -> ReplayServer:
        argv = [sys.executable, "-m", "otel_replay.cli.main", "serve", *map(str, self.files)]
        self.proc = subprocess.Popen(
            argv,
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "src")},
        )
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._drain = threading.Thread(target=self._keep, args=(self.proc.stderr,), daemon=True)
        self._drain.start()
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(self.proc.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(SERVE_START_S)
        if not ready or not ready[0].startswith("http"):
            self.__exit__()
            raise GenerateError("otel-replay serve did not start:\n" + self.log())
        self.url = ready[0].strip()
        return self

    def _keep(self, stream: TextIO) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def log(self, last: int = 12) -> str:
        return "\n".join(self.lines[-last:])

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._drain.join(5)


#: Said of a replay that ended in an answer where each recorded run raised.
NOT_RAISING = "not raising as the recording did"


def answered_otherwise(answers: list[str], want: list[str]) -> str:
    """What a replay's agent answered, other than the recorded ``want``; saying so where
    each recorded run raised and no replayed one did (the replay served an answer that
    does not make the framework raise: what the trace holds of the answer it raised on)."""
    said = f"the agent answered {answers!r}"
    raised = [w for w in want if w.startswith(RAISED_LINE)]
    if want and len(raised) == len(want) and not any(a.startswith(RAISED_LINE) for a in answers):
        said += f", {NOT_RAISING} ({', '.join(raised)})"
    return said


def case_mode(case: Case, python: Path) -> tuple[dict[str, Any], Path]:
    """The case's mode, with its scenario, and the Python (or node home) to run its agent
    with: a JavaScript agent's home gets the case's scenario as its ``scenario.json``."""
    meta = case.meta
    name = str(meta.get("scenario", "default"))
    mode = {**stack_config(meta["stack"])["modes"][meta["mode"]], "scenario": name}
    if is_node(meta["stack"]):
        python = node_dir(meta["stack"], scenario_named(name))
    return mode, python


def recorded_answers(case: Case, runs: int, scn: Scenario) -> list[str]:
    """The output a replay must print, sorted: the scenario's answers, and for a run that
    raised (an answer cut partway through) the very line the recording printed, the class
    raised included (the replay must raise it again); under the framework's own ending,
    what the recording printed."""
    if not case.raised and case.ending is None:
        return expected_answers(runs, scn)
    lines = (case.path / "answer.txt").read_text(encoding="utf-8").splitlines()
    return sorted(lines)


def replay_case(case: Case, python: Path) -> Replayed:
    """Run the case's agent against a replay server of its trace; did it answer as recorded?"""
    meta = case.meta
    config = stack_config(meta["stack"])
    mode, python = case_mode(case, python)
    scn = scenario_named(mode["scenario"])
    try:
        with tempfile.TemporaryDirectory(prefix="replay-") as tmp:
            with ReplayServer(case.trace_files()) as server, OtlpReceiver(Path(tmp)) as receiver:
                places = {"model_server": server.url, "otlp_receiver": receiver.url}
                try:
                    done = run_agent(meta["stack"], mode, config, python, places, UNTRACED)
                except GenerateError as e:
                    return Replayed(case.id, "serve", False, f"{e}\nserver:\n{server.log()}")
                answers = sorted(done.stdout.splitlines())
                want = recorded_answers(case, int(meta["runs"]), scn)
                if answers != want:
                    why = f"{answered_otherwise(answers, want)}\nserver:\n{server.log()}"
                    return Replayed(case.id, "serve", False, why)
                if any(": refused: " in line for line in server.lines):
                    # The agent may end as it did, with the refusal for the error it raised.
                    why = f"the server refused a step\nserver:\n{server.log()}"
                    return Replayed(case.id, "serve", False, why)
    except GenerateError as e:
        return Replayed(case.id, "serve", False, str(e))
    return Replayed(case.id, "serve", True, f"{len(answers)} run(s) answered as recorded")


#: Packages ``otel_replay`` needs beyond OpenTelemetry and protobuf (which every stack has).
EXTRA_PACKAGES = ("time-machine", "click", "rich", "zstandard", "uvicorn", "httpx")


def extra_site() -> Path:
    """A directory of :data:`EXTRA_PACKAGES`, for stacks whose environment lacks some."""
    site = CACHE / "conformance" / "_replay_site"
    stamp = site / "packages.txt"
    wanted = "\n".join([sys.version, *EXTRA_PACKAGES])
    with alone("_replay_site"):
        if not (stamp.exists() and stamp.read_text() == wanted):
            shutil.rmtree(site, ignore_errors=True)
            pip = [sys.executable, "-m", "pip", "install", "-q", "--target", str(site)]
            subprocess.run([*pip, *EXTRA_PACKAGES], check=True)
            stamp.write_text(wanted)
    return site


def inprocess_case(case: Case, python: Path) -> Replayed:
    """Run the case's agent inside ``otel_replay.replay(...)`` (see :mod:`.inprocess`)."""
    return _inprocess(case, python, "inprocess")


#: The tool whose recorded result :func:`changed_case` changes: every stack calls it first
#: (``changed_tool`` in ``stack.json`` names another, for an agent that does not tell the
#: model what this one returned: smolagents sends only the error of a step that had one).
CHANGED_TOOL = "lookup_order"


def changed_case(case: Case, python: Path) -> Replayed:
    """In-process, with one recorded tool result changed: the replay must diverge, naming a step."""
    return _inprocess(case, python, "changed")


def _inprocess(case: Case, python: Path, how: str) -> Replayed:
    meta = case.meta
    if is_node(meta["stack"]):
        return Replayed(case.id, how, None, "a JavaScript agent: replayed by serve")
    if int(meta["runs"]) != 1:
        return Replayed(case.id, how, None, "two runs in one process: a session replays one")
    config = stack_config(meta["stack"])
    mode, python = case_mode(case, python)
    with tempfile.TemporaryDirectory(prefix="inprocess-") as tmp:
        result_file = Path(tmp) / "result.json"
        traces = [str(p) for p in case.trace_files()]
        wrapper = [str(HERE / "inprocess.py"), str(result_file), *traces, "--"]
        env = {**UNTRACED, "OTEL_REPLAY_EXTRA_SITE": str(extra_site())}
        if config.get("tools") == "app":  # its own tool functions: @otel_replay.tool on each
            env["CONFORMANCE_DECORATE_TOOLS"] = "1"
        if how == "changed":
            changed = config.get("changed_tool", CHANGED_TOOL)
            env["CONFORMANCE_CHANGE_TOOL"] = tool_name(case, changed)
        with OtlpReceiver(Path(tmp)) as receiver:
            places = {"model_server": "{replay}", "otlp_receiver": receiver.url}
            try:
                done = run_agent(meta["stack"], mode, config, python, places, env, wrapper)
                error = None
            except GenerateError as e:
                done, error = None, str(e)
        if not result_file.exists():
            return Replayed(case.id, how, False, error or "no result")
        result = json.loads(result_file.read_text(encoding="utf-8"))
    if how == "changed":
        return _diverged(case, result)
    problems = []
    if error is not None or result.get("error"):
        problems.append(result.get("error") or error or "")
    if result.get("live_tools"):
        problems.append(f"tools ran live: {result['live_tools']}")
    answered = len(result.get("tool_calls") or [])
    if case.scenario.tool_retry is not None and answered != case.tool_runs():
        # The framework runs a raising tool again: the stubs must make it do so as it did.
        problems.append(f"{answered} tool calls answered, the agent ran {case.tool_runs()}")
    if not result.get("matched"):
        problems.append(result.get("report", ""))
        problems.append(f"tool calls: {result.get('tool_calls')}")
    answers = sorted(done.stdout.splitlines()) if done is not None else []
    want = recorded_answers(case, 1, scenario_named(mode["scenario"]))
    if done is not None and answers != want:
        problems.append(answered_otherwise(answers, want))
    if problems:
        return Replayed(case.id, how, False, "\n".join(problems))
    stubbed = sum(1 for _, kind, way in result["replayed"] if kind == "tool" and way == "stub")
    frameworks = ", ".join(result.get("frameworks") or []) or "none"
    return Replayed(
        case.id, how, True, f"{stubbed} tool call(s) stubbed (integrations: {frameworks})"
    )


def tool_name(case: Case, scenario_name: str) -> str:
    """The name the case's trace gives the scenario's tool (a framework may prefix it)."""
    from tests.conformance.checks import check
    from tests.conformance.scenario import tool_of

    for run in check(case).runs:
        for step in run.steps:
            if step.tool is not None and tool_of(step.tool.tool_name) == scenario_name:
                return step.tool.tool_name
    return scenario_name


def _diverged(case: Case, result: dict[str, Any]) -> Replayed:
    """A replay with a changed tool result: did it diverge, naming the step?"""
    divergence = result.get("divergence")
    if result.get("live_tools"):
        return Replayed(case.id, "changed", False, f"tools ran live: {result['live_tools']}")
    if result.get("matched") or not divergence or " at step " not in divergence:
        why = f"the replay did not diverge at a step: {result.get('report')}"
        return Replayed(case.id, "changed", False, why)
    return Replayed(case.id, "changed", True, divergence)


#: The ways a case is replayed, each a function of the case and the stack's Python.
HOWS = {"serve": replay_case, "inprocess": inprocess_case, "changed": changed_case}


def sample_cases(cases: list[Case]) -> list[Case]:
    """Each stack's first case with content and one run, in its ``stack.json`` order (of the
    default scenario)."""
    chosen: dict[str, Case] = {}
    for case in cases:
        meta = case.meta
        if not meta["content"] or int(meta["runs"]) != 1 or "scenario" in meta:
            continue
        modes = list(stack_config(meta["stack"])["modes"])
        known = chosen.get(meta["stack"])
        if known is None or modes.index(meta["mode"]) < modes.index(known.meta["mode"]):
            chosen[meta["stack"]] = case
    return sorted(chosen.values(), key=lambda c: c.id)


def hows_of(case: Case, sample: list[Case]) -> list[str]:
    """How a case is replayed: serve and in-process; also ``changed`` for a stack's sample."""
    return ["serve", "inprocess", *(["changed"] if case in sample else [])]


def stack_python(stack: str) -> Path:
    """The stack's virtualenv's Python (or node home), made when missing."""
    return node_dir(stack) if is_node(stack) else venv_python(stack)


def content_cases(
    stacks: list[str], modes: list[str], scenarios: list[str] | None = None
) -> list[Case]:
    """The cases with content of ``stacks``, ``modes`` and ``scenarios`` (all when empty)."""
    cases = [c for c in find_cases() if c.meta["content"]]
    if scenarios:
        cases = [c for c in cases if c.meta.get("scenario", "default") in scenarios]
    if stacks:
        cases = [c for c in cases if c.meta["stack"] in stacks]
    if modes:
        cases = [c for c in cases if c.meta["mode"] in modes]
    return cases


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.conformance.replay_agents",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("stacks", nargs="*")
    ap.add_argument("--mode", action="append", default=[], help="only these modes (repeatable)")
    ap.add_argument(
        "--scenario", action="append", default=[], help="only these scenarios (repeatable)"
    )
    ap.add_argument("--write", action="store_true", help=f"keep results as cases/*/*/{RESULT_FILE}")
    ap.add_argument(
        "--how",
        choices=HOWS,
        action="append",
        help="only these of the ways each case is replayed: serve, inprocess, and changed "
        "(a stack's first single-run case only)",
    )
    a = ap.parse_args(argv)
    failed = 0
    pythons: dict[str, Path] = {}
    sample = sample_cases(find_cases())
    for case in content_cases(a.stacks, a.mode, a.scenario):
        stack = case.meta["stack"]
        if stack not in pythons:
            pythons[stack] = stack_python(stack)
        path = CASES / case.id / RESULT_FILE
        kept = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        for how in [h for h in hows_of(case, sample) if not a.how or h in a.how]:
            result = HOWS[how](case, pythons[stack])
            failed += result.ok is False
            state = {True: "", False: "FAILED: ", None: "n/a: "}[result.ok]
            print(f"[{case.id} {how}] {state}{result.detail}", flush=True)
            kept[how] = result.as_json()
        if a.write:  # this machine's paths (in error output) made relative, as in the cases
            text = scrub_text(json.dumps(kept, indent=1, ensure_ascii=False), machine_paths())
            path.write_text(text + "\n", encoding="utf-8")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
