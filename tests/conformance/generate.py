"""Record a stack's conformance cases: its agent, its own tracing, the fake model server.

    python -m tests.conformance.generate STACK [--mode MODE]... [--scenario NAME | --seed N]
    python -m tests.conformance.generate STACK --list

(from the repository root).  For each mode of ``stacks/STACK/stack.json``
(all unless ``--mode`` names some): start the fake model server
(:mod:`.server`) and the OTLP receiver (:mod:`.receiver`) on free ports of
127.0.0.1, run ``stacks/STACK/agent.py`` in the stack's own virtualenv with
the environment the mode needs, check that every run reached the scripted
answer (or ended as its framework's ending says, :mod:`.endings`), and write ``cases/STACK/MODE/`` (``cases/STACK/MODE@SCENARIO/`` for
a scenario other than the default: a named one, ``--scenario NAME``, or a
drawn one, ``--seed N``, which is ``seed-N``; see :mod:`.scenario`):

- ``traces.binpb`` (and/or ``traces.jsonl``; ``logs.*`` when the stack sends
  log records): what the stack exported, as it was sent;
- ``server.jsonl``: every request the model server received and what it answered;
- ``answer.txt``: the agent's output, one final answer per run;
- ``versions.txt``: Python and the versions of the stack's packages;
- ``case.json``: stack, mode, API, runs, whether content was captured, the
  command and the environment (ports as ``{model_server}`` / ``{otlp_receiver}``).

The virtualenv lives in ``.cache/conformance/STACK/venv`` and is made again
when ``requirements.txt`` (or the Python running this) changes, by ``uv``
(seconds, where pip takes minutes; its own cache, outside the repository).  A JavaScript stack has ``package.json``,
``package-lock.json`` and ``agent.mjs`` instead: ``npm ci`` installs it in
``.cache/conformance/STACK/node`` (again when the lock file or Node
changes; npm's own cache), and its agent reads the scenario
from the ``scenario.json`` written beside it.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from tests.conformance import scenario
from tests.conformance.endings import ANSWERS_OTHERWISE, RAISES, STOPS_EARLY, Ending, ending_of
from tests.conformance.receiver import TRACE_FILES, OtlpReceiver
from tests.conformance.server import ModelServer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STACKS = HERE / "stacks"
CASES = HERE / "cases"
# Resolved: .cache may be a link to environments kept outside the checkout (CI keeps them
# between runs), and what is made there must name where it lies, not the checkout's link.
CACHE = (ROOT / ".cache").resolve()
#: An agent that has not finished by then is stuck (a retry loop, a wrong URL).
AGENT_TIMEOUT_S = float(os.environ.get("OTEL_REPLAY_CONFORMANCE_TIMEOUT_S", "600"))
#: Environment of every agent; the mode's own variables are added on top.
BASE_ENV = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": "{otlp_receiver}",
    "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
    "OTEL_METRICS_EXPORTER": "none",
    "OPENAI_API_KEY": "sk-conformance-dummy",
    "ANTHROPIC_API_KEY": "sk-ant-conformance-dummy",
    "NO_PROXY": "127.0.0.1,localhost",
    "PYTHONHASHSEED": "0",
    "PYTHONUTF8": "1",
    "TZ": "UTC",
}
#: The agents' import path: ``scenario`` and the agent code stacks share.
AGENT_PATH = os.pathsep.join([str(HERE), str(STACKS / "_shared")])
#: Taken from this process's environment into the agent's (nothing else leaks in).
PASSED_ENV = ("PATH", "HOME", "LANG", "TMPDIR")
#: Distributions reported in versions.txt besides the requirements: the stack's tracing and clients.
RELEVANT = re.compile(
    r"^(opentelemetry|openinference|langchain|langgraph|litellm|openai|anthropic|httpx|"
    r"aiohttp|pydantic|llama|smolagents|traceloop)",
    re.IGNORECASE,
)


class GenerateError(Exception):
    """A mode could not be recorded; the message says why."""


def stack_config(stack: str) -> dict[str, Any]:
    """``stacks/STACK/stack.json``: its description, modes and skipped modes.

    A mode has ``args`` (for ``agent.py``), ``env``, ``api`` (``chat``,
    ``responses``, ``anthropic``), ``runs`` and ``content`` (false when the
    mode turns content capture off); the stack has ``env`` for every mode and
    ``tool_spans`` (false when its tracing records no span per tool call) and
    ``history`` (``text`` when the agent tells the model what its tools did in
    plain text, not in tool messages) and ``tools`` (``app`` when the agent
    calls its tool functions itself: no framework runs them, so its in-process
    replay puts ``@otel_replay.tool`` on each, as documented for such agents)
    and ``changed_tool`` (the tool whose recorded result the replay test changes,
    when the model is not told what ``lookup_order`` returned) and ``tool_retry`` (true when
    its agent has the framework run a raising tool again as a scenario's
    :class:`~scenario.ToolRetry` asks).
    """
    path = STACKS / stack / "stack.json"
    if not path.is_file():
        known = ", ".join(sorted(p.parent.name for p in STACKS.glob("*/stack.json"))) or "none"
        raise GenerateError(f"no stack {stack!r} ({path} not found); stacks: {known}")
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return config


def is_node(stack: str) -> bool:
    """A JavaScript stack: ``package.json`` and ``agent.mjs`` instead of requirements and agent.py."""
    return (STACKS / stack / "package.json").is_file()


def case_dir(stack: str, mode: str, scenario_name: str = "default") -> Path:
    """Where the case of ``stack``, ``mode`` and scenario is kept: ``cases/STACK/MODE/`` for
    the default scenario (the corpus's first cases stay where they are),
    ``cases/STACK/MODE@SCENARIO/`` for another."""
    return CASES / stack / (mode if scenario_name == "default" else f"{mode}@{scenario_name}")


@contextlib.contextmanager
def alone(stack: str) -> Iterator[None]:
    """One process at a time checks or makes ``stack``'s environment: parallel test workers
    share the cache, and two making one virtualenv at once would break it."""
    lock = CACHE / "conformance" / f".{stack}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        yield


def node_dir(stack: str, scn: scenario.Scenario = scenario.DEFAULT) -> Path:
    """The stack's ``node_modules`` home, installed (again) from its lock file when it changed.

    The agent runs from there (``agent.mjs`` and ``scenario.json`` are copied in),
    so that its imports resolve.
    """
    with alone(stack):
        here = STACKS / stack
        home = CACHE / "conformance" / stack / "node"
        stamp = home / "lock.sha256"
        node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
        digest = hashlib.sha256(
            (here / "package.json").read_bytes()
            + (here / "package-lock.json").read_bytes()
            + node.stdout.encode()
        ).hexdigest()
        if not (stamp.exists() and stamp.read_text() == digest):
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            print(f"[{stack}] installing .cache/conformance/{stack}/node", flush=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copy(here / name, home / name)
            npm = ["npm", "ci", "--no-audit", "--no-fund"]
            subprocess.run(npm, cwd=home, check=True)
            stamp.write_text(digest)
        shutil.copy(here / "agent.mjs", home / "agent.mjs")
        (home / "scenario.json").write_text(
            json.dumps(scenario.as_json(scn), ensure_ascii=False, indent=1), encoding="utf-8"
        )
        return home


def node_versions(home: Path) -> str:
    """Node's version and the versions npm installed of the stack's own packages."""
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True)
    listed = subprocess.run(
        ["npm", "ls", "--depth=0", "--json"], cwd=home, capture_output=True, text=True, check=False
    )
    deps = json.loads(listed.stdout or "{}").get("dependencies", {})
    lines = [f"{name}=={info.get('version')}" for name, info in sorted(deps.items())]
    return "\n".join([f"node=={node.stdout.strip().lstrip('v')}", *lines]) + "\n"


def venv_python(stack: str) -> Path:
    """The stack's virtualenv, made (again) when its requirements or this Python changed."""
    with alone(stack):
        requirements = STACKS / stack / "requirements.txt"
        venv = CACHE / "conformance" / stack / "venv"
        python = venv / "bin" / "python"
        stamp = venv / "requirements.sha256"
        digest = hashlib.sha256(requirements.read_bytes() + sys.version.encode()).hexdigest()
        if python.exists() and stamp.exists() and stamp.read_text() == digest:
            return python
        shutil.rmtree(venv, ignore_errors=True)
        print(f"[{stack}] making .cache/conformance/{stack}/venv", flush=True)
        uv = shutil.which("uv", path=str(Path(sys.executable).parent)) or shutil.which("uv")
        if uv is not None:
            # --seed: pip in the virtualenv, for versions.txt (``pip freeze``).
            subprocess.run(
                [uv, "venv", "-q", "--seed", "--python", sys.executable, str(venv)], check=True
            )
            install = [uv, "pip", "install", "-q", "--python", str(python)]
        else:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            install = [str(python), "-m", "pip", "install", "-q"]
        subprocess.run([*install, "-r", str(requirements)], check=True)
        stamp.write_text(digest)
        return python


def versions(python: Path, stack: str) -> str:
    """Python's version and the ``pip freeze`` lines of the stack's packages."""
    required = {
        re.split(r"[=<>\[; ]", line, maxsplit=1)[0].lower().replace("_", "-")
        for line in (STACKS / stack / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    frozen = subprocess.run(
        [str(python), "-m", "pip", "freeze"], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    keep = [
        line
        for line in frozen
        if RELEVANT.match(line) or line.split("==")[0].lower().replace("_", "-") in required
    ]
    version = subprocess.run(
        [str(python), "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return "\n".join([f"python=={version}", *sorted(keep, key=str.lower)]) + "\n"


def command_of(stack: str, mode: dict[str, Any]) -> list[str]:
    """The agent's command line, the model server's URL as ``{model_server}``."""
    # Anthropic's clients and Bedrock's (an endpoint URL) add the API's path themselves.
    base = "{model_server}" if mode.get("api") in ("anthropic", "converse") else "{model_server}/v1"
    runs = str(mode.get("runs", 1))
    if is_node(stack):
        agent = (STACKS / stack / "agent.mjs").relative_to(ROOT).as_posix()
        return ["node", agent, "--base-url", base, "--runs", runs, *mode.get("args", [])]
    agent = (STACKS / stack / "agent.py").relative_to(ROOT).as_posix()
    return ["python", agent, "--base-url", base, "--runs", runs, *mode.get("args", [])]


def env_of(
    stack: str, config: dict[str, Any], mode: dict[str, Any], scenario_name: str = "default"
) -> dict[str, str]:
    """The variables the mode sets (ports as placeholders), and the scenario's name when it is
    not the default (with :data:`scenario.TOOL_RETRY_ENV` when the scenario has the framework
    run a raising tool again and the stack's does: ``tool_retry`` in its ``stack.json``)."""
    named = {} if scenario_name == "default" else {scenario.SCENARIO_ENV: scenario_name}
    if config.get("tool_retry") and scenario.scenario_named(scenario_name).tool_retry:
        named[scenario.TOOL_RETRY_ENV] = "1"
    return {
        **BASE_ENV,
        "OTEL_SERVICE_NAME": f"conformance-{stack}",
        **config.get("env", {}),
        **mode.get("env", {}),
        **named,
    }


def machine_paths() -> dict[str, str]:
    """Paths of this machine and what a committed case says instead (longest first).

    Exceptions' stack traces name the files of the agent, its virtualenv and
    Python; the cases keep them relative to the repository root.
    """
    paths = {
        f"{ROOT}/": "",
        # The cache may be a link to another checkout's (a second work tree): the stack's
        # files are then named by where the link leads.
        f"{CACHE.resolve()}/": ".cache/",
        f"{Path(sys.base_prefix).resolve()}/": "{python}/",
        f"{Path.home()}/": "~/",
    }
    return dict(sorted(paths.items(), key=lambda kv: -len(kv[0])))


def scrub_text(text: str, paths: dict[str, str]) -> str:
    for path, instead in paths.items():
        text = text.replace(path, instead)
    return text


def _scrub_message(msg: Any, paths: dict[str, str]) -> None:
    """Every string field of a protobuf message, recursively, without this machine's paths."""
    for field, val in msg.ListFields():
        repeated = (
            field.is_repeated  # protobuf >= 5.28; older ones only have `label`
            if hasattr(field, "is_repeated")
            else field.label == field.LABEL_REPEATED
        )
        if field.type == field.TYPE_STRING:
            if repeated:
                val[:] = [scrub_text(v, paths) for v in val]
            else:
                setattr(msg, field.name, scrub_text(val, paths))
        elif field.type == field.TYPE_MESSAGE:
            for sub in val if repeated else [val]:
                _scrub_message(sub, paths)


def _scrub_json(node: Any, paths: dict[str, str]) -> Any:
    if isinstance(node, str):
        return scrub_text(node, paths)
    if isinstance(node, list):
        return [_scrub_json(v, paths) for v in node]
    if isinstance(node, dict):
        return {k: _scrub_json(v, paths) for k, v in node.items()}
    return node


def scrub(src: Path, dst: Path) -> None:
    """Copy an exported file, with this machine's paths made relative (see :func:`machine_paths`).

    Records are re-encoded only when they changed.
    """
    from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    paths = machine_paths()
    data = src.read_bytes()
    if src.suffix == ".jsonl":
        lines = []
        for line in data.decode().split("\n"):  # not splitlines: U+2028 stays in a line
            if not line:
                continue
            if any(p in line for p in paths):
                line = json.dumps(_scrub_json(json.loads(line), paths), ensure_ascii=False)
            lines.append(line + "\n")
        dst.write_text("".join(lines), encoding="utf-8")
        return
    request = ExportLogsServiceRequest if src.name.startswith("logs") else ExportTraceServiceRequest
    out, at = bytearray(), 0
    while at < len(data):
        (size,) = struct.unpack(">I", data[at : at + 4])
        body = data[at + 4 : at + 4 + size]
        at += 4 + size
        if any(p.encode() in body for p in paths):
            msg = request.FromString(body)
            _scrub_message(msg, paths)
            body = msg.SerializeToString()
        out += struct.pack(">I", len(body)) + body
    dst.write_bytes(bytes(out))


def check_ground_truth(log: Path, runs: int, ending: Ending | None = None) -> list[str]:
    """The server's log, checked: every request answered, every run reached its answer or
    ended at an answer the server cut partway through (the client raised it: those runs'
    order ids are returned), every other request the server failed on purpose retried.
    Under an ``ending`` of the framework's own, a run may stop before its answer, and one
    that raises may end at a request the server failed (the log is what it did)."""
    if not log.exists():
        raise GenerateError("the model server got no request")
    # One record a line; split on "\n" alone (JSON text escapes it): str.splitlines would also
    # split at a U+2028 or U+0085 a record holds as it is.
    text = log.read_text(encoding="utf-8")
    records = [json.loads(line) for line in text.split("\n") if line]
    posts = [r for r in records if r["method"] == "POST"]
    bad = [r for r in posts if "conversation" not in r]
    if bad:
        raise GenerateError(f"the server could not answer {bad[0]['path']}: {bad[0]['body_raw']}")
    conversations = list(dict.fromkeys(r["conversation"] for r in posts))
    if len(conversations) != runs:
        raise GenerateError(f"{runs} runs expected, the server saw {conversations}")
    raised: list[str] = []
    for order in conversations:
        turns = [r["turn"] for r in posts if r["conversation"] == order]
        last = [r for r in posts if r["conversation"] == order][-1]
        if last.get("cut") == "stream":
            raised.append(order)  # an answer cut partway through, not retried: the run raised
        elif not last["final"] and ending is None:
            raise GenerateError(f"the run about {order} stopped at turn {turns[-1]} ({turns})")
    for n, failed in enumerate(posts):
        # A request the server failed on purpose was retried: a later one at its turn got the
        # answer (an agent that gave up, or went on without it, is not what was scripted).
        if failed.get("conversation") in raised and n == max(
            i for i, r in enumerate(posts) if r["conversation"] == failed["conversation"]
        ):
            continue  # the cut that ended the run
        if ending is not None and RAISES in ending.kinds:
            continue  # the framework's own error may be the failure it did not retry
        if ending is not None and ending.keeps_cut and failed.get("cut") == "stream":
            continue  # it kept what streamed of the cut answer and went on from it
        if failed.get("failed") and not any(
            not r.get("failed")
            and (r["conversation"], r["turn"]) == (failed["conversation"], failed["turn"])
            for r in posts[n + 1 :]
        ):
            how = f"cut ({failed['cut']})" if failed.get("cut") else f"HTTP {failed['status']}"
            raise GenerateError(
                f"the agent did not retry the request the server failed with {how} "
                f"(run about {failed['conversation']}, turn {failed['turn']})"
            )
    return raised


def run_agent(
    stack: str,
    mode: dict[str, Any],
    config: dict[str, Any],
    python: Path,
    places: dict[str, str],
    extra_env: dict[str, str] | None = None,
    wrapper: list[str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run the agent of ``stack`` in ``mode``; its exit status is checked, its output returned.

    ``places`` fills the command's and environment's placeholders
    (``{model_server}``, ``{otlp_receiver}``); ``extra_env`` goes on top.
    ``wrapper``: a Python script (and its arguments) that runs the agent's script.
    """
    command = command_of(stack, mode)
    env = env_of(stack, config, mode, str(mode.get("scenario", "default")))

    def fill(text: str) -> str:
        for name, url in places.items():
            text = text.replace("{" + name + "}", url)
        return text

    real_env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ}
    real_env.update({k: fill(v) for k, v in env.items()})
    real_env.update(extra_env or {})
    real_env["PYTHONPATH"] = AGENT_PATH
    args = [fill(a) for a in command[2:]]
    if is_node(stack):  # ``python`` is the stack's node home
        argv, cwd = ["node", str(python / "agent.mjs"), *args], python
    else:
        argv, cwd = [str(python), *(wrapper or []), command[1], *args], ROOT
    # A home of its own: frameworks keep state there (CrewAI's task outputs in SQLite),
    # which agents run at the same time would share.
    with tempfile.TemporaryDirectory(prefix=f"home-{stack}-") as home:
        real_env["HOME"] = home
        try:
            done = subprocess.run(
                argv,
                cwd=cwd,
                env=real_env,
                capture_output=True,
                text=True,
                timeout=AGENT_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise GenerateError(f"the agent ran past {AGENT_TIMEOUT_S:.0f} s") from e
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-30:])
        raise GenerateError(f"the agent exited with {done.returncode}:\n{tail}")
    return done


def expected_answers(
    runs: int, scn: scenario.Scenario = scenario.DEFAULT, raised: Sequence[str] = ()
) -> list[str]:
    """The final answers of the scenario's first ``runs`` questions, sorted; a run about an
    order of ``raised`` ended in an error instead (its line starts :data:`scenario.RAISED_LINE`,
    compared without the class, which is the client's)."""
    orders = [scenario.order_in(q) for q in scn.questions[:runs]]
    return sorted(scenario.RAISED_LINE if o in raised else scn.final_answer(o) for o in orders)


def record_mode(
    stack: str,
    name: str,
    config: dict[str, Any],
    python: Path,
    scn: scenario.Scenario = scenario.DEFAULT,
    out: Path | None = None,
) -> Path:
    """Run the agent in mode ``name`` of scenario ``scn``; write and return its case directory
    (``out``, else :func:`case_dir`)."""
    mode = {**config["modes"][name], "scenario": scn.name}
    runs = int(mode.get("runs", 1))
    with tempfile.TemporaryDirectory(prefix=f"conformance-{stack}-") as tmp:
        work = Path(tmp)
        log = work / "server.jsonl"
        with ModelServer(log, scn=scn) as server, OtlpReceiver(work) as receiver:
            places = {"model_server": server.url, "otlp_receiver": receiver.url}
            done = run_agent(stack, mode, config, python, places)
            exports = receiver.requests
        ending = ending_of(stack, scn, mode)
        if ending is not None and not ending.recordable:
            raise GenerateError(f"not recordable: {ending.why}")
        raised = check_ground_truth(log, runs, ending)
        if not exports:
            raise GenerateError("the stack exported nothing to the OTLP receiver")
        answers = done.stdout.splitlines()
        said = [scenario.RAISED_LINE if a.startswith(scenario.RAISED_LINE) else a for a in answers]
        want = expected_answers(runs, scn, raised)
        if ending is not None and not _ended_own_way(ending, log, said, raised, scn.final_answer):
            ending = None  # the framework ended the runs as scripted after all
        if ending is None and sorted(said) != want:
            raise GenerateError(f"the agent answered {answers!r}, not {want!r}")
        case = {
            "stack": stack,
            "mode": name,
            **({} if scn.name == "default" else {"scenario": scn.name}),
            "api": mode.get("api", "chat"),
            "runs": runs,
            "content": mode.get("content", True),
            "tool_spans": config.get("tool_spans", True),
            "history": config.get("history", "messages"),
            # Runs that ended in an error (an answer cut partway through): their order ids.
            **({"raised": raised} if raised else {}),
            # How the framework ended its runs its own way (the agent's output is their answer).
            **({"ending": ending.to_json()} if ending is not None else {}),
            "command": command_of(stack, mode),
            "env": env_of(stack, config, mode, scn.name),
            "python": platform.python_version(),
        }
        out = write_case(out or case_dir(stack, name, scn.name), work, done.stdout, case)
    found = node_versions(python) if is_node(stack) else versions(python, stack)
    (out / "versions.txt").write_text(found, encoding="utf-8")
    return out


def _ended_own_way(
    ending: Ending,
    log: Path,
    said: list[str],
    raised: Sequence[str],
    final_answer: Callable[[str], str],
) -> bool:
    """Whether the framework ended runs its own way, as its ``ending`` says (its kinds):
    a run that raised, stopped before its final turn (not at an answer cut partway, which
    ends a run as scripted), or answered another text must each be one of them."""
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").split("\n") if line]
    posts = [r for r in records if r["method"] == "POST" and "conversation" in r]
    orders = list(dict.fromkeys(r["conversation"] for r in posts))
    seen = set()
    if said.count(scenario.RAISED_LINE) > len(raised):
        seen.add(RAISES)
    lasts = {o: [r for r in posts if r["conversation"] == o][-1] for o in orders}
    if any(not last["final"] and o not in raised for o, last in lasts.items()):
        seen.add(STOPS_EARLY)
    scripted = {final_answer(o) for o in orders}
    if any(a != scenario.RAISED_LINE and a not in scripted for a in said):
        seen.add(ANSWERS_OTHERWISE)
    # A run that raised stopped before its answer too: it is told as raising.
    unsaid = seen - set(ending.kinds) - ({STOPS_EARLY} if RAISES in ending.kinds else set())
    if unsaid:
        raise GenerateError(
            f"the framework's runs {' and '.join(sorted(unsaid))}, which its ending "
            f"({', '.join(ending.kinds)}) does not say: {said!r}"
        )
    return bool(seen)


def write_case(out: Path, work: Path, answers: str, case: dict[str, Any]) -> Path:
    """Make ``out`` the case recorded in ``work`` (the receiver's files and ``server.jsonl``)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    for name in TRACE_FILES:
        if (work / name).exists():
            scrub(work / name, out / name)
    shutil.copy(work / "server.jsonl", out / "server.jsonl")
    (out / "answer.txt").write_text(answers, encoding="utf-8")
    (out / "case.json").write_text(json.dumps(case, indent=2) + "\n", encoding="utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m tests.conformance.generate",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("stack")
    ap.add_argument("--mode", action="append", help="a mode of the stack (repeatable; all if none)")
    ap.add_argument("--list", action="store_true", help="list the stack's modes and stop")
    which = ap.add_mutually_exclusive_group()
    which.add_argument(
        "--scenario",
        default="default",
        help=f"the scenario: default, {', '.join(scenario.NAMED)}, or seed-N",
    )
    which.add_argument("--seed", type=int, help="a scenario drawn from this seed (seed-N)")
    a = ap.parse_args(argv)
    try:
        scn = scenario.scenario_named(f"seed-{a.seed}" if a.seed is not None else a.scenario)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    try:
        config = stack_config(a.stack)
        if a.list:
            for name, mode in config["modes"].items():
                print(name, " ".join(command_of(a.stack, mode)))
            for name, why in config.get("skipped", {}).items():
                print(f"{name} (skipped: {why})")
            return 0
        names = a.mode or list(config["modes"])
        unknown = [n for n in names if n not in config["modes"]]
        if unknown:
            raise GenerateError(f"unknown modes {unknown}; {a.stack} has {list(config['modes'])}")
        python = node_dir(a.stack, scn) if is_node(a.stack) else venv_python(a.stack)
    except GenerateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    failed = 0
    for name in names:
        try:
            out = record_mode(a.stack, name, config, python, scn)
        except GenerateError as e:
            where = name if scn.name == "default" else f"{name}@{scn.name}"
            print(f"[{a.stack}/{where}] FAILED: {e}", file=sys.stderr, flush=True)
            failed += 1
            continue
        sizes = ", ".join(f"{p.name} {p.stat().st_size} B" for p in sorted(out.iterdir()))
        print(f"[{a.stack}/{name}] {out.relative_to(ROOT)}: {sizes}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
