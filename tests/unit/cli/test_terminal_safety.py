"""Recorded text never drives the terminal: ``show``, ``ls``, ``check`` and ``diff`` print it escaped.

The dump is recorded with the SDK and our exporter, every name and message
carrying escape sequences (colour, window title, clear screen, the one-byte
C1 CSI), a bell, a carriage return, newlines, a bidi override and rich
markup.  Each command runs as a user runs it, piped and with colour forced
on: the output holds none of those bytes, shows them escaped, and prints the
markup literally.
"""

from __future__ import annotations

import contextlib
import json
import re
import subprocess
from pathlib import Path

import pytest

import otel_replay
from tests.fixtures.agent import identity
from tests.fixtures.cli import cli_process
from tests.fixtures.data import ROOT
from tests.fixtures.recording import recording

HOSTILE = "\x1b[31mRED\x1b[0m\x1b]0;pwned\x07\x9b2J\r\x08\u202eevil"
MARKUP = "[bold red]markup[/bold red]"
NAME = f"look{HOSTILE}{MARKUP}\nforged line"

#: What must never reach the terminal from a recording: ESC, BEL, backspace, CR,
#: C1 controls (U+009B is CSI on its own) and the bidi override.
RAW = re.compile("[\x07\x08\r\x9b\u202e]|\x1b[\\]P^_]|\x1b\\[[0-9;]*[A-HJKSTf]")


@otel_replay.tool(name=NAME)
def lookup(query: str) -> str:
    return f"result {HOSTILE}{MARKUP}\nsecond line"


@otel_replay.tool(name=f"fail{HOSTILE}")
def failing() -> None:
    raise ValueError(f"boom {HOSTILE}{MARKUP}\nforged line")


def record(path: Path, answer: str) -> None:
    with recording(path), identity(f"u{HOSTILE}{MARKUP}", f"s{HOSTILE}\nx"):
        with otel_replay.agent_run(f"agent{HOSTILE}{MARKUP}\nforged", input=f"q{HOSTILE}") as run:
            messages = [
                {"role": "user", "parts": [{"type": "text", "content": f"hi{HOSTILE}{MARKUP}"}]}
            ]
            with otel_replay.model_call(
                provider=f"p{HOSTILE}", model=f"gpt{HOSTILE}{MARKUP}", messages=messages
            ) as call:
                asked = {"type": "tool_call", "id": f"c1{HOSTILE}", "name": NAME}
                asked["arguments"] = {"query": f"x{HOSTILE}"}
                call.record(
                    {"role": "assistant", "parts": [asked]}, input_tokens=1, output_tokens=1
                )
            with otel_replay.tool_call_id(f"c1{HOSTILE}"):
                lookup(query=f"x{HOSTILE}")
            with contextlib.suppress(ValueError):
                failing()  # check names its error among the anomalies
            run.record(answer)


@pytest.fixture(scope="module")
def dumps(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("hostile")
    a, b = base / "a.otlp", base / "b.otlp"
    record(a, f"answer {HOSTILE}{MARKUP}")
    record(b, f"another answer {HOSTILE}\n{MARKUP}")
    return a, b


def coloured(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The CLI as on a terminal: colour forced on."""
    return cli_process(*args, env={"FORCE_COLOR": "1", "COLUMNS": "250"})


COMMANDS = [
    ("show",),
    ("show", "--step", "2"),
    ("show", "--step", "2", "--raw"),
    ("show", "--timeline"),
    ("ls", "--no-cache"),
    ("check",),
]


def assert_safe(output: str) -> None:
    assert not RAW.search(output), repr(RAW.search(output))
    assert not re.search(r"^\W*forged", output, re.M)  # a newline in a name forges no line


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
@pytest.mark.parametrize("run", [cli_process, coloured], ids=["piped", "terminal"])
def test_recorded_text_is_printed_escaped(
    dumps: tuple[Path, Path], command: tuple[str, ...], run: object
) -> None:
    a, _ = dumps
    done = run(*command, a)  # type: ignore[operator]
    assert done.returncode in (0, 1), done.stderr
    assert_safe(done.stdout + done.stderr)
    plain = re.sub("\x1b\\[[0-9;]*m", "", done.stdout)  # our own colours
    assert "\\x1b[31mRED" in plain  # shown, escaped
    assert MARKUP in plain  # literally: not taken for rich markup


@pytest.mark.parametrize("run", [cli_process, coloured], ids=["piped", "terminal"])
def test_diff_prints_both_runs_escaped(dumps: tuple[Path, Path], run: object) -> None:
    a, b = dumps
    done = run("diff", a, b)  # type: ignore[operator]
    assert done.returncode == 1, done.stderr
    assert_safe(done.stdout + done.stderr)
    plain = re.sub("\x1b\\[[0-9;]*m", "", done.stdout)
    assert MARKUP in plain and "final answer:" in plain


def test_json_output_keeps_the_text_as_recorded(dumps: tuple[Path, Path]) -> None:
    a, _ = dumps
    done = cli_process("ls", "--json", "--no-cache", a)
    (run,) = json.loads(done.stdout)["runs"]
    assert run["agent"] == f"agent{HOSTILE}{MARKUP}\nforged"
    assert "\x1b" not in done.stdout  # json.dumps writes it as \u001b
    # C1 and bidi controls too, which json.dumps(ensure_ascii=False) would leave raw.
    shown = cli_process("show", "--json", a)
    assert json.loads(shown.stdout)["runs"][0]["steps"]
    assert not RAW.search(done.stdout) and not RAW.search(shown.stdout)


def test_error_lines_name_a_hostile_file_escaped(tmp_path: Path) -> None:
    evil = tmp_path / "evil\x1b]0;pwned\x07\nforged.otlp"
    evil.write_bytes(b"\x00\x00\x10\x00torn")
    done = cli_process("show", tmp_path)
    assert done.returncode == 2
    assert not RAW.search(done.stderr) and "\x1b" not in done.stderr
    assert "evil\\x1b]0;pwned\\x07\\nforged.otlp" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_serve_logs_recorded_and_requested_text_escaped(dumps: tuple[Path, Path]) -> None:
    """``serve``'s log names the steps it serves (their recorded names), the tool calls it
    re-spells and where a request diverged (its text): on a terminal, escaped."""
    import os
    import sys
    import urllib.error
    import urllib.request

    a, _ = dumps
    src = ROOT / "src"
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_replay.cli.main", "serve", "--mcp", "--port", "0", str(a)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(src), "FORCE_COLOR": "1"},
    )
    assert proc.stdout is not None
    try:
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr and proc.stderr.read()
        for text in (f"hi{HOSTILE}{MARKUP}", f"diverged{HOSTILE}\nforged line"):
            body = {"model": "m", "messages": [{"role": "user", "content": text}]}
            request = urllib.request.Request(
                url + "/v1/chat/completions",
                data=json.dumps(body).encode(),
                headers={"Content-Type": "application/json"},
            )
            with contextlib.suppress(urllib.error.HTTPError):
                urllib.request.urlopen(request, timeout=10).read()
    finally:
        proc.terminate()
        _, log = proc.communicate(timeout=20)
    assert "served" in log and "diverged" in log, log
    assert_safe(log)
    assert "\\x1b[31mRED" in log
