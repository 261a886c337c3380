"""A recording that names a ``BaseException`` which is not an ``Exception`` cannot end the replay.

A tool span's ``error.type`` is whatever the file says.  Raised as it is, a
recorded ``SystemExit`` ends ``otel-replay replay --agent`` with exit 0 and no
report, a ``KeyboardInterrupt`` or pytest's ``Exit`` aborts the whole test
session, pytest's ``Skipped`` turns the replaying test into a skip.  The class
of input: every exception class loaded in a real process that is not an
``Exception`` (found by walking ``BaseException.__subclasses__()`` after
importing pytest, asyncio, hypothesis and the rest), plus the ``Exception``
classes pytest obeys (``unittest.SkipTest``: skip this test; pytest's ``Exit``:
stop the session) and user classes that derive from them.  Each is recorded under a name that resolves to it, and
replayed through the Python API, ``replay --agent`` in a real process and a
pytest run using the plugin's marker.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import re
import subprocess
import sys
import unittest
from pathlib import Path
from typing import Any

import _pytest.main
import _pytest.outcomes
import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from opentelemetry import trace

import otel_replay
from otel_replay import attributes as A
from otel_replay.replay.tool_stubs import rebuild_exception
from otel_replay.runs.model import ToolError
from otel_replay.trusted_types import loaded_dotted, raised_as_is
from tests.fixtures.cli import python_process
from tests.fixtures.data import ROOT
from tests.fixtures.recording import recording

# Loaded so that their exception classes are in the walk (and resolvable by name).
LOADED = (asyncio, concurrent.futures, unittest, hypothesis, _pytest.main, _pytest.outcomes)


class UserInterrupt(BaseException):
    """A user's own control-flow exception."""


class UserKeyboardInterrupt(KeyboardInterrupt):
    """A user's subclass of a builtin one."""


class UserSkip(unittest.SkipTest):
    """A user's skip."""


def _subclasses(cls: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    todo = [cls]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return found


def _name_of(cls: type) -> str | None:
    """A dotted name that resolves to ``cls`` in this process (None when none does).

    pytest gives its outcome classes ``__module__ = "builtins"``: they are
    found under the module that defines them instead.
    """
    names = [cls.__qualname__] if cls.__module__ == "builtins" else []
    names.append(f"{cls.__module__}.{cls.__qualname__}")
    names += [f"{m}.{cls.__qualname__}" for m in ("_pytest.outcomes", "_pytest.main")]
    return next((n for n in names if loaded_dotted(n) is cls), None)


def poisoning_classes() -> dict[str, type[BaseException]]:
    """Every class a replay must not raise as it is, by a recorded name that finds it."""
    obeyed = (unittest.SkipTest, _pytest.outcomes.Exit)
    every = _subclasses(BaseException) | set(obeyed)
    out: dict[str, type[BaseException]] = {}
    for cls in every:
        if issubclass(cls, Exception) and not issubclass(cls, obeyed):
            continue
        name = _name_of(cls)
        if name is not None:
            out[name] = cls
    return dict(sorted(out.items()))


CLASSES = poisoning_classes()


def test_the_walk_finds_what_a_real_process_holds() -> None:
    expected = {
        SystemExit,
        KeyboardInterrupt,
        GeneratorExit,
        asyncio.CancelledError,
        _pytest.outcomes.Failed,
        _pytest.outcomes.Skipped,
        _pytest.outcomes.Exit,
        unittest.SkipTest,
        UserInterrupt,
        UserKeyboardInterrupt,
        UserSkip,
    }
    if sys.version_info >= (3, 11):
        expected.add(BaseExceptionGroup)  # noqa: F821 (3.11+)
    assert expected <= set(CLASSES.values())
    assert all(not raised_as_is(cls) for cls in CLASSES.values())
    assert raised_as_is(ValueError) and raised_as_is(OSError)


def write_recording(path: Path, names: list[str]) -> None:
    """One run whose tool ``t<i>`` failed with the recorded type ``names[i]``."""
    with recording(path) as provider:
        tracer = provider.get_tracer("poison")
        with otel_replay.agent_run("agent", input="go") as run:
            for i, name in enumerate(names):
                with tracer.start_as_current_span(
                    f"execute_tool t{i}",
                    attributes={
                        A.OPERATION_NAME: A.OP_EXECUTE_TOOL,
                        A.TOOL_NAME: f"t{i}",
                        A.TOOL_CALL_ARGUMENTS: "{}",
                        A.ERROR_TYPE: name,
                    },
                ) as span:
                    span.set_status(trace.StatusCode.ERROR, f"recorded {name}")
            run.record("done")


def stub(name: str) -> Any:
    """Call a tool of the recorded name (the stub answers; the body never runs)."""

    @otel_replay.tool(name=name)
    def call() -> Any:
        raise AssertionError("the stub should have answered")

    return call()


def test_the_python_api_raises_a_stand_in_for_each(tmp_path: Path) -> None:
    names = list(CLASSES)
    path = tmp_path / "poison.otlp"
    write_recording(path, names)
    (run,) = otel_replay.load(path)
    with otel_replay.replay(run, require_complete=False, type_trust="imported") as session:
        for i, name in enumerate(names):
            # An Exception: what `except Exception` in an agent (and in the replay) handles.
            with pytest.raises(otel_replay.RecordedBaseException) as info:
                stub(f"t{i}")
            got = info.value
            assert isinstance(got, Exception) and not isinstance(got, CLASSES[name])
            assert got.recorded_type == name
            assert type(got).__name__ == "RecordedBaseException"
            assert str(got) == f"{name}: recorded {name}"
    notes = "\n".join(session.report().notes)
    for i, name in enumerate(names):
        assert f"tool t{i}" in notes and name in notes, notes
    assert "RecordedBaseException" in notes


# Exception classes that take neither the recorded message nor no arguments at all.
PICKY = {
    "ExceptionGroup": "ExceptionGroup",
    "UnicodeDecodeError": "UnicodeDecodeError",
    "subprocess.CalledProcessError": "CalledProcessError",
    "json.decoder.JSONDecodeError": "JSONDecodeError",
    f"{__name__}.NeedsTwo": "NeedsTwo",
}


class NeedsTwo(Exception):
    def __init__(self, a: object, b: object) -> None:
        super().__init__(a, b)

    def __new__(cls, a: object, b: object) -> NeedsTwo:
        return super().__new__(cls, a, b)


def test_a_recorded_exception_its_class_cannot_take_still_raises(tmp_path: Path) -> None:
    import json.decoder

    assert json.decoder and subprocess  # loaded: their classes are found by name
    path = tmp_path / "picky.otlp"
    write_recording(path, list(PICKY))
    (run,) = otel_replay.load(path)
    with otel_replay.replay(run):
        for i, (name, short) in enumerate(PICKY.items()):
            with pytest.raises(Exception) as info:
                stub(f"t{i}")
            assert type(info.value).__name__ == short
            assert f"recorded {name}" in str(info.value) or info.value.args == (f"recorded {name}",)


def test_an_ordinary_recorded_exception_is_raised_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "plain.otlp"
    write_recording(path, ["ValueError", "asyncio.exceptions.InvalidStateError"])
    (run,) = otel_replay.load(path)
    with otel_replay.replay(run) as session:
        with pytest.raises(ValueError):
            stub("t0")
        with pytest.raises(asyncio.InvalidStateError):
            stub("t1")
    assert not any("RecordedBaseException" in n for n in session.report().notes)


AGENT = """\
import asyncio, concurrent.futures, unittest
import hypothesis
import _pytest.main, _pytest.outcomes
import otel_replay


@otel_replay.tool(name="t0")
def t0():
    raise AssertionError("the stub should have answered")


def agent(question):
    t0()
    return "never"
"""


def cli_replay(tmp_path: Path, name: str, agent: str = AGENT) -> subprocess.CompletedProcess[str]:
    """``otel-replay replay --agent`` of a one-tool run whose tool failed with ``name``."""
    case = tmp_path / (re.sub(r"\W", "_", name) + ".otlp")
    write_recording(case, [name])
    (tmp_path / "poisoned_agent.py").write_text(agent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT / "src")])}
    return python_process(
        *("-m", "otel_replay.cli.main", "replay", case.name),
        *("--agent", "poisoned_agent:agent", "--type-trust", "imported"),
        cwd=tmp_path,
        env=env,
    )


def _check_cli(done: subprocess.CompletedProcess[str], name: str) -> None:
    # As for any recorded tool error the agent does not handle: the report, the error, exit 1.
    assert done.returncode == 1, (name, done.returncode, done.stdout, done.stderr)
    assert "1 of 1 recorded model/tool steps replayed" in done.stdout, done.stdout
    assert "the agent raised" in done.stdout and f"recorded {name}" in done.stdout
    assert "RecordedBaseException" in done.stdout
    assert "Traceback" not in done.stderr, done.stderr


# A few in the default tier; every one in the slow tier (a process each).
QUICK = ["SystemExit", "KeyboardInterrupt", "_pytest.outcomes.Skipped", "_pytest.outcomes.Exit"]


@pytest.mark.parametrize("name", QUICK)
def test_replay_agent_reports_and_exits_1(tmp_path: Path, name: str) -> None:
    assert name in CLASSES
    _check_cli(cli_replay(tmp_path, name), name)


def test_replay_agent_keeps_an_ordinary_tool_error_as_it_was(tmp_path: Path) -> None:
    done = cli_replay(tmp_path, "ValueError")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the agent raised ValueError('recorded ValueError')" in done.stdout
    assert "RecordedBaseException" not in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in CLASSES if n not in QUICK])
def test_replay_agent_reports_and_exits_1_for_every_class(tmp_path: Path, name: str) -> None:
    (tmp_path / "user_classes.py").write_text(
        "import unittest\n"
        "class UserInterrupt(BaseException): pass\n"
        "class UserKeyboardInterrupt(KeyboardInterrupt): pass\n"
        "class UserSkip(unittest.SkipTest): pass\n"
    )
    recorded = name.replace(f"{__name__}.", "user_classes.")
    with_user = AGENT.replace("import otel_replay\n", "import otel_replay\nimport user_classes\n")
    _check_cli(cli_replay(tmp_path, recorded, with_user), recorded)


PYTEST_FILE = """\
import asyncio, concurrent.futures, unittest
import hypothesis
import _pytest.main, _pytest.outcomes
import pytest
import otel_replay

NAMES = {names!r}


@pytest.mark.parametrize("i", range(len(NAMES)))
@pytest.mark.otel_replay("poison.otlp", require_complete=False)
def test_tool(otel_replay_session, i):
    @otel_replay.tool(name=f"t{{i}}")
    def call():
        raise AssertionError("the stub should have answered")

    call()


def test_after():
    pass
"""


def test_a_pytest_session_replaying_them_fails_each_test_and_goes_on(tmp_path: Path) -> None:
    # Classes of modules the test file imports (a user's own class is not there).
    names = [n for n in CLASSES if not n.startswith(f"{__name__}.")]
    write_recording(tmp_path / "poison.otlp", names)
    (tmp_path / "test_poisoned.py").write_text(PYTEST_FILE.format(names=names))
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = python_process(
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "test_poisoned.py"),
        cwd=tmp_path,
        env=env,
    )
    # Every replaying test fails (none skipped, none aborts the session) and the rest runs.
    assert f"{len(names)} failed, 1 passed" in done.stdout, done.stdout[-3000:]
    assert done.returncode == 1
    assert "RecordedBaseException" in done.stdout


#: Text a recorded type name may hold that a class name may not: NUL, lone surrogates.
_ODD_NAMES = st.lists(
    st.characters() | st.sampled_from(["\x00", "\ud800", "\udfff", ".", "\x1b", "é"]),
    max_size=12,
).map("".join)


@settings(max_examples=200, deadline=None)
@given(name=_ODD_NAMES, message=st.text(max_size=8))
def test_any_recorded_type_name_rebuilds_an_exception_of_that_name(name: str, message: str) -> None:
    """The stand-in for a type that is not loaded is named as the recording says, whatever
    text that is (``type()`` refuses a NUL or a lone surrogate: they are spelled as escapes)."""
    exc = rebuild_exception(ToolError(name, message))
    assert isinstance(exc, Exception)
    str(exc), repr(exc)
    if loaded_dotted(name) is None:
        spelled = name.encode("utf-8", "backslashreplace").decode().replace("\x00", "\\x00")
        module, _, qualname = spelled.rpartition(".")
        assert type(exc).__qualname__ == (qualname or spelled)
        assert type(exc).__module__ == (module or "builtins")
        assert exc.args == (message,)


def test_a_recorded_type_name_holding_a_nul_is_raised_under_its_name(tmp_path: Path) -> None:
    """Through a recording the real SDK wrote: the agent gets the recorded error, not the
    replay's own ValueError."""
    names = ["a\x00b", "pkg.\x00", "\x00"]
    path = tmp_path / "nul.otlp"
    write_recording(path, names)
    (run,) = otel_replay.load(path)
    with otel_replay.replay(run):
        for i, name in enumerate(names):
            with pytest.raises(Exception) as info:
                stub(f"t{i}")
            spelled = name.replace("\x00", "\\x00")
            assert type(info.value).__qualname__ == spelled.rpartition(".")[2]
            assert info.value.args == (f"recorded {name}",)
