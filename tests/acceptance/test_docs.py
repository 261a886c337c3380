"""Every code block of README.md and of the documentation site runs as written.

Each page's blocks run in order, as a reader following the page would run
them, in a directory of the page's own that stands for the repository root:
``examples/``, ``collector-config/``, ``tests/data/`` and the virtualenv are
reachable there as in a checkout, and the virtualenv's ``bin`` is first on
``PATH`` (as after ``source .venv/bin/activate``).

- ``python``: run as a script of its own; right after ``<!-- file: NAME -->``
  it is written to ``NAME`` for the blocks after it instead.
- ``bash``: run command by command.  ``otel-replay`` may exit 1 (a verdict:
  diverged, not replayable, different), never 2 (bad usage, unreadable input);
  anything else must exit 0.  ``otel-replay serve`` is started, its base URL
  awaited, and stopped.
- ``text``: output shown, not code.
- A block that cannot run here (a remote backend, a Collector binary, an
  install) follows ``<!-- not run: REASON -->``.
- A block that takes seconds of its own (``opentelemetry-instrument`` loads
  every instrumentation installed) follows ``<!-- slow: REASON -->``: the
  default tier runs a page's blocks up to it, the slow tier the whole page.  A code block with neither a
  run nor a reason fails the test, so no block goes untested unnoticed.

The model the blocks call is a scripted OpenAI Chat Completions server on
127.0.0.1 (``OPENAI_BASE_URL``), and the OTLP exporters' backend a sink on
127.0.0.1 (``OTEL_EXPORTER_OTLP_ENDPOINT``).
"""

from __future__ import annotations

import json
import os
import re
import selectors
import shlex
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.data import ROOT
from tests.fixtures.http import serving_handler

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: What a checkout holds that the pages' blocks read (linked into each page's directory).
LINKED = ("examples", "collector-config")
#: Fenced code blocks are told by their language; these are the ones there are.
CODE = {"python", "bash"}
OUTPUT = {"text"}
FENCE = re.compile(r"^```(\S*)\s*$")
MARKER = re.compile(r"^<!-- (not run|file|slow): (.+?) -->$")
#: The commands whose exit status 1 is a verdict, not a failure.
OTEL_REPLAY = {"otel-replay", ".venv/bin/otel-replay"}
TIMEOUT = 120


@dataclass
class Block:
    page: Path
    line: int
    language: str
    code: str
    marker: tuple[str, str] | None

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The page's fenced blocks, each with the marker on the line before it."""
    lines = page.read_text(encoding="utf-8").split("\n")
    found: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if opened is None:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i] != "```":
            i += 1
        assert i < len(lines), f"{page.name}:{start + 1}: a code block is never closed"
        before = MARKER.match(lines[start - 1]) if start else None
        marker = (before.group(1), before.group(2)) if before else None
        code = "\n".join(lines[start + 1 : i]) + "\n"
        found.append(Block(page, start + 1, opened.group(1), code, marker))
        i += 1
    return found


def commands(script: str) -> Iterator[str]:
    """The block's commands: continuation lines joined, comment-only lines left out."""
    pending = ""
    for line in script.split("\n"):
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    assert not pending, f"a command ends in a continuation: {pending!r}"


def program(command: str) -> list[str]:
    """The command's words after its environment assignments (``NAME=VALUE``)."""
    words = shlex.split(command, comments=True)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words.pop(0)
    return words


def scripted_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A Chat Completions answer: call the first tool offered, then answer in text."""
    messages = body.get("messages") or []
    tools = body.get("tools") or []
    if tools and messages and messages[-1].get("role") == "user":
        function = tools[0].get("function", tools[0])
        required = function.get("parameters", {}).get("required", [])
        arguments = json.dumps({name: "4430" for name in required})
        call = {
            "id": "call_1",
            "type": "function",
            "function": {"name": function["name"], "arguments": arguments},
        }
        message: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [call]}
        reason = "tool_calls"
    else:
        message = {"role": "assistant", "content": "Your order #4430 is being processed."}
        reason = "stop"
    return {
        "id": "chatcmpl-docs-1",
        "object": "chat.completion",
        "created": 1764000000,
        "model": body.get("model", "gpt-4o-mini"),
        "choices": [{"index": 0, "message": message, "finish_reason": reason}],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    }


class ModelAndSink(BaseHTTPRequestHandler):
    """``POST .../chat/completions``: the scripted model; any other POST: an OTLP sink."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.endswith("/chat/completions"):
            out = json.dumps(scripted_answer(json.loads(body))).encode()
            content_type = "application/json"
        else:  # an empty ExportTraceServiceResponse: every span taken
            out, content_type = b"", "application/x-protobuf"
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with serving_handler(ModelAndSink) as url:
        yield url


def checkout(tmp: Path) -> None:
    """``tmp`` stands for the repository root: what the blocks read, linked in."""
    for name in LINKED:
        (tmp / name).symlink_to(ROOT / name)
    (tmp / "tests").mkdir()
    (tmp / "tests" / "data").symlink_to(ROOT / "tests" / "data")
    (tmp / ".venv").symlink_to(Path(sys.prefix))


def environment(tmp: Path, server: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "OPENAI_"))}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(tmp),
        XDG_CACHE_HOME=str(tmp / ".cache-home"),
        OPENAI_BASE_URL=f"{server}/v1",
        OPENAI_API_KEY="sk-docs-placeholder",
        OTEL_EXPORTER_OTLP_ENDPOINT=server,
        # The sink speaks OTLP over HTTP; opentelemetry-instrument's `otlp` would pick gRPC.
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        OTEL_METRICS_EXPORTER="none",
        OTEL_LOGS_EXPORTER="none",
    )
    env.pop("VIRTUAL_ENV", None)
    return env


def serve_once(command: str, tmp: Path, env: dict[str, str], where: str) -> None:
    """Start ``otel-replay serve``, wait for the base URL it prints, stop it."""
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {command}"],
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        with selectors.DefaultSelector() as sel:
            sel.register(proc.stdout, selectors.EVENT_READ)
            ready = sel.select(timeout=TIMEOUT)
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("http://127.0.0.1:"), (
            f"{where}: {command!r} printed no base URL: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"  # type: ignore[union-attr]
        )
    finally:
        proc.terminate()
        proc.wait(timeout=TIMEOUT)


def run_bash(block: Block, tmp: Path, env: dict[str, str]) -> None:
    for command in commands(block.code):
        words = program(command)
        if words[:1] and words[0] in OTEL_REPLAY and "serve" in words[1:2]:
            serve_once(command, tmp, env, block.where)
            continue
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp,
            env=env,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
        )
        allowed = (0, 1) if words[:1] and words[0] in OTEL_REPLAY else (0,)
        assert done.returncode in allowed, (
            f"{block.where}: {command!r} exited {done.returncode}\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )


def run_python(block: Block, tmp: Path, env: dict[str, str], index: int) -> None:
    script = tmp / f"_docs_block_{index}.py"
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, script.name],
        cwd=tmp,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, (
        f"{block.where}: the python block failed\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


def test_every_code_block_runs_or_says_why_not() -> None:
    """Each block is code that runs, output, or code with a reason it cannot run here."""
    counts = {"run": 0, "slow": 0, "file": 0, "not run": 0, "output": 0}
    problems = []
    for page in PAGES:  # a marker misspelled would hide its block from this test
        for n, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1):
            marker_like = line.startswith("<!--") and re.search(r"not run|file:|slow:", line)
            if marker_like and not MARKER.match(line):
                problems.append(f"{page.name}:{n}: a marker the test cannot read")
    for page in PAGES:
        for block in blocks(page):
            kind = block.marker[0] if block.marker else None
            if block.language in OUTPUT:
                counts["output"] += 1
                if kind is not None:
                    problems.append(f"{block.where}: output carries a marker")
            elif block.language not in CODE:
                problems.append(f"{block.where}: a block in {block.language or 'no language'}")
            elif kind == "not run":
                counts["not run"] += 1
            elif kind == "slow":
                counts["slow"] += 1
            elif kind == "file":
                counts["file"] += 1
                if block.language != "python":
                    problems.append(f"{block.where}: only python blocks are files")
            else:
                counts["run"] += 1
    assert not problems, "\n".join(problems)
    # Most of what the pages show must run here: a page of reasons is no test.
    assert counts["run"] + counts["slow"] + counts["file"] > counts["not run"], counts


def run_page(page: Path, tmp: Path, server: str, *, whole: bool) -> None:
    """The page's blocks in order, as a reader would run them (up to a slow one unless whole)."""
    checkout(tmp)
    env = environment(tmp, server)
    for index, block in enumerate(blocks(page)):
        kind = block.marker[0] if block.marker else None
        if kind == "slow" and not whole:
            return
        if block.language not in CODE or kind == "not run":
            continue
        if kind == "file":
            target = tmp / block.marker[1]  # type: ignore[index]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.code, encoding="utf-8")
        elif block.language == "python":
            run_python(block, tmp, env, index)
        else:
            run_bash(block, tmp, env)


def has_slow(page: Path) -> bool:
    return any(b.marker is not None and b.marker[0] == "slow" for b in blocks(page))


@pytest.fixture(scope="module")
def page_runs(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Future[None]]:
    """Every page's blocks up to the first slow one, two pages at a time.

    Pages share nothing but the scripted server, and their blocks are mostly
    processes started one after another: two pages at once keep both cores busy.
    """
    pool = ThreadPoolExecutor(max_workers=2)
    runs = {
        page: pool.submit(run_page, page, tmp_path_factory.mktemp(page.stem), server, whole=False)
        for page in PAGES
    }
    pool.shutdown(wait=False)
    return runs


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_page_blocks_run(page: Path, page_runs: dict[Path, Future[None]]) -> None:
    """The page's blocks, in order, up to the first slow one."""
    page_runs[page].result()


SLOW_PAGES = [p for p in PAGES if has_slow(p)]


@pytest.mark.slow
@pytest.mark.parametrize("page", SLOW_PAGES, ids=[p.name for p in SLOW_PAGES])
def test_page_blocks_run_whole(page: Path, tmp_path: Path, server: str) -> None:
    """The pages with slow blocks, every block."""
    run_page(page, tmp_path, server, whole=True)


#: Commands that, spelled bare, need the virtualenv activated, which README.md never does.
VENV_COMMANDS = {"otel-replay", "python", "pip", "pytest", "mkdocs", "opentelemetry-instrument"}


def test_readme_commands_name_the_virtualenv() -> None:
    """README's commands run as pasted after the Quick start: ``.venv/bin/...``, never bare."""
    bare = [
        f"{b.where}: {c}"
        for b in blocks(ROOT / "README.md")
        if b.language == "bash"
        for c in commands(b.code)
        if program(c)[:1] and program(c)[0] in VENV_COMMANDS
    ]
    assert not bare, "\n".join(bare)
