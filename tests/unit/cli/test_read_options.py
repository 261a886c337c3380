"""The options every reading command shares, written where a newcomer writes them.

- ``-H 'NAME: VALUE'`` (or ``NAME=VALUE``) sends a header with every URL read, given
  before the command or after it, on every command that reads URLs (``export``,
  whose ``--header`` is its endpoint's, takes ``--read-header``): a newcomer wrote
  ``otel-replay ls URL -H ...`` and got "no such option".
- ``--verbose`` lists each file and folder a folder or pattern held that was not read,
  with why, where one line counts them otherwise.
- ``-o`` is where a command writes what it makes, on every command that has it;
  ``replay``'s old ``--record-to`` still works.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.cli.main import cli
from otel_replay.sources import download
from tests.fixtures.data import ROOT
from tests.fixtures.http import serving

EXAMPLE = ROOT / "examples/order_support/recordings/wrong_order.otlp"
AGENT = "examples.order_support.agent:run_agent"

#: Each command that reads URLs: its words before the URL's, and after, in a folder.
COMMANDS: dict[str, Callable[[str, Path], list[str]]] = {
    "show": lambda url, d: ["show", url],
    "check": lambda url, d: ["check", url],
    "ls": lambda url, d: ["ls", url],
    "diff": lambda url, d: ["diff", f"{url}#a", f"{url}#b"],
    "report": lambda url, d: ["report", url, "-o", str(d / "run.html")],
    "regress": lambda url, d: ["regress", url, "-o", str(d / "t.py"), "--agent", "m:f"],
    "replay": lambda url, d: ["replay", url, "--agent", "m:f"],
    "serve": lambda url, d: ["serve", url],
    "convert": lambda url, d: ["convert", url, "-o", str(d / "out.otlp")],
    "export": lambda url, d: ["export", url, "--endpoint", "http://127.0.0.1:9/v1/traces"],
}
NAMES = st.from_regex(r"X-[A-Za-z0-9][A-Za-z0-9-]{0,11}", fullmatch=True)
#: A value with what a token holds: spaces inside, ':' and '=' too.
VALUES = st.from_regex(r"[!-~][ -~]{6,24}[!-~]", fullmatch=True)


@pytest.fixture(scope="module")
def backend() -> Iterator[tuple[str, list[dict[str, str]]]]:
    """A trace backend refusing every read (HTTP 401), and the headers of each request."""
    seen: list[dict[str, str]] = []

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        seen.append({k.lower(): v for k, v in request.headers.items()})
        return 401, "text/plain", b"who are you?"

    with serving(answer) as base:
        yield base, seen


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    headers=st.lists(
        st.tuples(NAMES, VALUES), min_size=1, max_size=3, unique_by=lambda h: h[0].lower()
    ),
    spellings=st.lists(st.sampled_from(["{}: {}", "{}={}", "{} : {}"]), min_size=3, max_size=3),
    after=st.lists(st.booleans(), min_size=3, max_size=3),
    command=st.sampled_from(sorted(COMMANDS)),
)
def test_a_header_given_before_or_after_the_command_in_either_spelling_is_sent(
    tmp_path: Path,
    backend: tuple[str, list[dict[str, str]]],
    headers: list[tuple[str, str]],
    spellings: list[str],
    after: list[bool],
    command: str,
) -> None:
    base, seen = backend
    seen.clear()
    option = "--read-header" if command == "export" else "-H"
    before_words: list[str] = []
    after_words: list[str] = []
    for (name, value), spelling, later in zip(headers, spellings, after, strict=False):
        given_as = spelling.format(name, value)
        if later:
            after_words += [option, given_as]
        else:
            before_words += ["-H", given_as]
    words = COMMANDS[command](f"{base}/api/traces/{'ab' * 16}", tmp_path)
    try:
        done = CliRunner().invoke(cli, [*before_words, *words, *after_words])
    finally:
        download.use_headers(None)  # in-process: the next command starts with none
    assert "no such option" not in done.output, done.output
    assert seen, done.output
    for name, value in headers:
        assert all(got.get(name.lower()) == value for got in seen), (name, value, seen)
        assert value not in done.output  # never printed
    assert done.exit_code == 2  # the backend refused: unreadable input


def test_a_header_without_a_name_is_refused_after_the_command_too() -> None:
    done = CliRunner().invoke(cli, ["ls", "x", "-H", "no separator"])
    assert done.exit_code == 2 and "NAME: VALUE" in done.output
    assert "no separator" not in done.output  # it may be a secret


#: Files a project folder holds that are not read by their names, and what a walk says.
BY_NAME = {"README.md": ".md", "notes.txt": ".txt", "agent.py": ".py", "logo.png": ".png"}
#: Folders never looked into, as tools make them.
FOLDERS = {".venv": "hidden", "node_modules": "installed", "env": "virtualenv"}


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    named=st.sets(st.sampled_from(sorted(BY_NAME)), max_size=4),
    folders=st.sets(st.sampled_from(sorted(FOLDERS)), max_size=3),
    others=st.sets(st.from_regex(r"[a-z]{1,8}(\.csv|\.dat)?", fullmatch=True), max_size=4),
    command=st.sampled_from(["ls", "check", "show", "convert"]),
)
def test_verbose_lists_each_file_and_folder_passed_over_with_why(
    tmp_path_factory: pytest.TempPathFactory,
    named: set[str],
    folders: set[str],
    others: set[str],
    command: str,
) -> None:
    root = tmp_path_factory.mktemp("project")
    shutil.copy(EXAMPLE, root / "run.otlp")
    for name in named:
        (root / name).write_text("not a trace\n")
    for folder in folders:
        (root / folder).mkdir()
        (root / folder / "data.otlp").write_bytes(b"\x00\x00\x00\x05junk!")
        if folder == "env":
            (root / folder / "pyvenv.cfg").write_text("home = /usr/bin\n")
    others -= {"run", *folders}
    for name in others:
        (root / name).write_text("a,b\n1,2\n")
    extra = ["-o", str(root.parent / f"{root.name}.otlp")] if command == "convert" else []
    quiet = CliRunner().invoke(cli, [command, str(root), *extra])
    loud = CliRunner().invoke(cli, [command, str(root), "--verbose", *extra])
    assert quiet.exit_code == loud.exit_code == (0 if command != "check" else quiet.exit_code)
    passed = [
        line for line in loud.output.splitlines() if line.startswith("otel-replay: passed over ")
    ]
    for name in named:
        (line,) = [p for p in passed if f"{root / name}:" in p]
        assert f"a {BY_NAME[name]} file" in line
    for folder in folders:
        (line,) = [p for p in passed if f"{root / folder}/:" in p]
        assert FOLDERS[folder] in line
    for name in others:
        (line,) = [p for p in passed if f"{root / name}:" in p]
        assert "not an OTLP trace" in line
    assert not any("data.otlp" in p for p in passed)  # inside a folder not looked into
    if others:
        assert f"passed over {len(others)} file(s) holding no trace data" in quiet.output
        assert "--verbose" in quiet.output
    assert not any(str(root / n) in quiet.output for n in [*named, *folders])


def test_o_is_where_each_command_writes_and_replay_keeps_record_to() -> None:
    for command, meaning in {
        "report": "page",
        "convert": "file to write",
        "regress": "test file",
        "diff": "HTML page",
        "replay": "Where the replay is written",
    }.items():
        shown = CliRunner().invoke(cli, [command, "--help"], terminal_width=200).output
        (line,) = [line for line in shown.splitlines() if line.strip().startswith("-o")]
        assert meaning in " ".join(shown[shown.index(line) :].split()[:20]), command
    replay = " ".join(CliRunner().invoke(cli, ["replay", "--help"]).output.split())
    assert (
        "-o, --output, --record-to FILE" in replay
        and "--record-to, its old name, works too" in replay
    )


@pytest.mark.parametrize("spelling", ["-o", "--output", "--record-to"])
def test_replay_writes_the_replayed_run_where_o_says(tmp_path: Path, spelling: str) -> None:
    """The example agent replayed with each spelling: the replayed run is in the file."""
    out = tmp_path / "replayed.otlp"
    done = CliRunner().invoke(
        cli,
        [
            "replay",
            str(EXAMPLE),
            "--agent",
            AGENT,
            "--kwarg",
            "user_id=@user.id",
            spelling,
            str(out),
        ],
    )
    assert done.exit_code == 0, done.output
    (recorded,), (replayed,) = otel_replay.load(EXAMPLE), otel_replay.load(out)
    assert replayed.final_output() == recorded.final_output()
