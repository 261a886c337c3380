"""An agent whose ``model`` parameter takes a model's *name*, replayed as a newcomer does.

``def run_agent(question, model="gpt-4o-mini", base_url=None)`` is about the
commonest agent signature there is.  ``replay --agent`` (and the test
``regress`` writes) used to give such a ``model`` the pinned model, which the
agent then handed to its SDK as the model's name: the replay ended in a
``TypeError`` from the SDK's JSON encoder.  Every spelling of a name-taking
``model`` (a text default; ``str``, ``str | None``, ``Optional[str]``, as
types or as the text ``from __future__ import annotations`` leaves) meets every
way the agent reaches the model (``client=``, ``base_url=``, its own client
from the provider variables): each replays the recording.  A ``model`` with no
default is given the recorded model's name.
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import os
import sys
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from otel_replay.replay.agent_call import takes_model_name
from tests.fixtures.cli import python_process
from tests.fixtures.data import ROOT
from tests.fixtures.weather_agent import FINAL, QUESTION, import_agent, record, write_agent

pytest.importorskip("openai")

#: How a ``model`` parameter that takes a name is spelled: a text default, or an annotation.
SPELLINGS = (
    'model="gpt-4o-mini"',
    "model: str",
    'model: str = "gpt-4o-mini"',
    "model: str | None = None",
    "model: Optional[str] = None",
    "model: typing.Optional[str] = None",
    'model: "str | None" = None',
    'model: "None | str" = None',
    'model: "Optional[str]" = None',
    'model: "typing.Optional[str]" = "gpt-4o-mini"',
)
#: How the agent reaches the model, besides its ``model`` parameter.
REACHES = {
    "client": ("client", "_loop(question, client)"),
    "base_url": ("base_url", "_loop(question, _make(base_url))"),
    "own": ("", "_loop(question, _make())"),
}


def agents_module() -> tuple[str, dict[str, tuple[str, str]]]:
    """The text of a module of agents, one per spelling and reach, and each one's
    (spelling, reach) by name.  Each sends its ``model`` to the SDK as the model's name
    (``None``: the recorded module's own default), as a user's agent does."""
    lines = [
        "import typing",
        "from typing import Optional",
        "from weather_agent import _loop, _make",
        "import weather_agent",
        "",
    ]
    members = {}
    for n, (spelling, reach) in enumerate(itertools.product(SPELLINGS, REACHES)):
        extra, body = REACHES[reach]
        params = ", ".join(p for p in ("question", extra, spelling) if p)
        name = f"agent_{n}"
        members[name] = (spelling, reach)
        lines += [
            f"def {name}({params}):",
            "    weather_agent.MODEL = model or 'gpt-4o-mini'",
            f"    return {body}",
            "",
        ]
    return "\n".join(lines), members


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A newcomer's agent recorded through RecordingTransport, and the agents module
    beside it: the directory and the module's members."""
    directory = tmp_path_factory.mktemp("named")
    module = import_agent(write_agent(directory, "openai"))
    assert record(directory / "runs.otlp", module, "openai") == FINAL
    text, members = agents_module()
    (directory / "named_agents.py").write_text(text, encoding="utf-8")
    return directory, members


def test_every_spelling_is_a_model_name() -> None:
    """The spellings above, and none of the ones that take a model to call."""
    namespace: dict[str, Any] = {}
    text, members = agents_module()
    for future in (True, False):
        source = ("from __future__ import annotations\n" if future else "") + text
        source = source.replace("from weather_agent import _loop, _make", "")
        source = source.replace("import weather_agent", "")
        exec(compile(source, "<agents>", "exec"), namespace)  # the test's own text
        for name in members:
            param = inspect.signature(namespace[name]).parameters["model"]
            assert takes_model_name(param), (name, members[name], future)
    for other in ("model", "model=None", "model: Any = None", "model: Callable", "model: int"):
        exec(f"from typing import Any, Callable\ndef f(question, {other}): pass", namespace)
        assert not takes_model_name(inspect.signature(namespace["f"]).parameters["model"])


@pytest.mark.parametrize("reach", list(REACHES))
def test_every_spelling_replays_through_call_agent(
    recorded: tuple[Path, dict[str, Any]], reach: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory, members = recorded
    monkeypatch.syspath_prepend(str(directory))
    for stale in ("named_agents", "weather_agent"):  # another test's modules of these names
        monkeypatch.delitem(sys.modules, stale, raising=False)
    importlib.invalidate_caches()
    agents = importlib.import_module("named_agents")
    for name, (spelling, how) in members.items():
        if how != reach:
            continue
        with otel_replay.replay(directory / "runs.otlp") as session:
            answer = otel_replay.call_agent(getattr(agents, name), session, QUESTION)
        assert answer == FINAL, (spelling, reach)
        assert session.report().matched, (spelling, reach, session.report())


def otel_replay_cli(cwd: Path, *args: str | Path) -> Any:
    """The command as a user runs it in their project directory (no provider key)."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "src")])
    return python_process("-m", "otel_replay.cli.main", *args, cwd=cwd, env=env)


@pytest.mark.parametrize(
    "spelling", [SPELLINGS[0], pytest.param(SPELLINGS[1], marks=pytest.mark.slow)]
)
def test_replay_agent_and_the_regress_test(
    recorded: tuple[Path, dict[str, Any]], spelling: str, tmp_path: Path
) -> None:
    """``replay --agent`` matches, and the test ``regress`` writes passes, for the newcomer's
    own signature (a text default, and a bare ``str`` given the recorded name)."""
    directory, members = recorded
    name = next(n for n, (s, r) in members.items() if s == spelling and r == "base_url")
    done = otel_replay_cli(directory, "replay", "runs.otlp", "--agent", f"named_agents:{name}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "MATCHED" in done.stdout and "TypeError" not in done.stdout + done.stderr
    test = tmp_path / "test_named.py"
    wrote = otel_replay_cli(
        directory, "regress", "runs.otlp", "-o", test, "--agent", f"named_agents:{name}"
    )
    assert wrote.returncode == 0, wrote.stderr
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(directory), str(ROOT), str(ROOT / "src")])
    passed = python_process(
        "-m", "pytest", "-q", "-p", "no:cacheprovider", test, cwd=tmp_path, env=env
    )
    assert passed.returncode == 0, passed.stdout + passed.stderr
