"""The HTML page of a run (``otel-replay report``): what it shows, that what a trace holds
never becomes markup or script, and that a real browser renders it.

The browser is Debian's headless Chromium, which ``.ci/run`` installs: where it is
absent the browser tests skip (they fail instead when ``OTEL_REPLAY_BROWSER`` names a
browser that does not run).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import subprocess
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from otel_replay.report import index_line, page_name, render_index, render_run
from tests.conformance.checks import find_cases
from tests.fixtures.browser import chromium
from tests.fixtures.cli import cli_run
from tests.fixtures.data import ROOT
from tests.fixtures.recording import recording

EXAMPLE = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
#: A run of three tools called at once, one of which raised (AutoGen, a real trace).
PARALLEL = next(c for c in find_cases() if c.id == "autogen/async")

#: The tags and attributes the page is made of; recorded text must add none.
TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "main", "h1", "h2",
    "code", "pre", "div", "span", "b", "section", "ul", "li", "details", "summary",
    "table", "thead", "tbody", "tr", "th", "td", "a", "button", "select", "option",
    "input", "label", "p", "br", "script",
}  # fmt: skip
ATTRIBUTES = {
    "lang", "charset", "name", "content", "http-equiv", "class", "id", "style", "hidden",
    "href", "data-kind", "data-open", "type", "aria-label", "value", "title",
    "placeholder", "colspan", "data-status",
}  # fmt: skip


class _Parsed(HTMLParser):
    """Every tag and attribute of a page, its text, and the bodies of its scripts."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        (self.scripts if self._in_script else self.text).append(data)

    def ids(self) -> list[str]:
        return [v or "" for _, attrs in self.tags for k, v in attrs if k == "id"]


def _page(run: otel_replay.Run) -> _Parsed:
    return _Parsed(render_run(run))


def test_the_page_of_the_example_run_shows_its_header_kit_and_steps() -> None:
    (run,) = otel_replay.load(EXAMPLE)
    page = _page(run)
    text = " ".join(page.text)
    assert [i for i in page.ids() if i.startswith("step-")] == [
        f"step-{s.index}" for s in run.steps
    ]
    assert "order_support" in text and "u_7710" in text and "widgets-eu" in text
    assert run.kit.verdict == "full" and "full" in text and "replays" in text
    assert all(m in text for m in run.kit.missing)  # the cold-case checklist
    assert "Where is my order?" in text  # the user's message, as text
    assert run.final_output() in text
    assert len(page.scripts) == 1


def test_a_run_with_parallel_tools_and_a_tool_error_links_its_warnings_to_their_steps() -> None:
    (run, *_) = otel_replay.load(*PARALLEL.trace_files())
    page = _page(run)
    failed = [s for s in run.tool_steps() if s.tool is not None and s.tool.error is not None]
    assert failed
    links = [v for tag, attrs in page.tags if tag == "a" for k, v in attrs if k == "href"]
    assert f"#step-{failed[0].index}" in links
    text = " ".join(page.text)
    assert "tool_error" in text and failed[0].tool is not None
    assert failed[0].tool.error is not None and failed[0].tool.error.message in text


def test_a_conversation_resent_with_each_call_is_shown_once(tmp_path: Path) -> None:
    """Each model input that opens with the previous call's whole input shows only what
    is new after it (the page of a long run stays linear in its length)."""
    trace = tmp_path / "talk.otlp"
    history: list[dict[str, Any]] = [{"role": "user", "content": "first question"}]
    with recording(trace), otel_replay.agent_run("talk"):
        for turn in range(3):
            with otel_replay.model_call(
                provider="openai", model="gpt-4o", messages=list(history)
            ) as call:
                call.record({"role": "assistant", "content": f"answer {turn}"})
            history += [
                {"role": "assistant", "content": f"answer {turn}"},
                {"role": "user", "content": f"question {turn + 2}"},
            ]
    (run,) = otel_replay.load(trace)
    text = _page(run).text
    # In the first call's body, and in its one-line gist (the last message in): not again.
    assert sum("first question" in t for t in text) == 2
    first, second, _ = (s for s in run.steps if s.kind == "model")
    assert f"step {first.index}'s input (1 message), then:" in text
    assert f"step {second.index}'s input (3 messages), then:" in text


HOSTILE = '</pre></script><script>alert("x")</script><img src=x onerror=alert(1)> "\' &amp; <!--'


def test_what_a_trace_holds_never_becomes_markup_or_script(tmp_path: Path) -> None:
    """Hostile text in every field a page shows (agent, ids, fingerprint keys and values,
    messages, model, tool name, arguments, result, error, snapshot) stays text."""

    @otel_replay.tool(name=f"lookup{HOSTILE}")
    def lookup(query: str) -> str:
        otel_replay.snapshot(HOSTILE, {HOSTILE: HOSTILE})
        return HOSTILE

    @otel_replay.tool(name="fail")
    def fail(query: str) -> str:
        raise RuntimeError(HOSTILE)

    trace = tmp_path / "hostile.otlp"
    with recording(trace):
        extra = {"user.id": HOSTILE, f"otel_replay.fingerprint.{HOSTILE}": HOSTILE}
        with otel_replay.agent_run(HOSTILE, input=HOSTILE, **extra):
            with otel_replay.model_call(
                provider="openai", model=HOSTILE, messages=[{"role": "user", "content": HOSTILE}]
            ) as call:
                call.record({"role": "assistant", "content": HOSTILE})
            lookup(HOSTILE)
            with contextlib.suppress(RuntimeError):
                fail(HOSTILE)
    (run,) = otel_replay.load(trace)
    page = _page(run)
    index = _Parsed(render_index([index_line(run)], HOSTILE))
    for parsed, shown in ((page, 8), (index, 3)):
        assert {tag for tag, _ in parsed.tags} <= TAGS
        assert {k for _, attrs in parsed.tags for k, _ in attrs} <= ATTRIBUTES
        assert [tag for tag, _ in parsed.tags].count("script") == 1
        (ours,) = parsed.scripts
        assert "alert" not in ours
        assert sum(HOSTILE in t for t in parsed.text) >= shown  # shown, as text, everywhere


SEVERAL = next(c for c in find_cases() if c.id == "autogen/two_runs")


def test_the_cli_writes_a_page_and_asks_which_run_of_several(tmp_path: Path) -> None:
    out = tmp_path / "case.html"
    written = cli_run("report", str(EXAMPLE), "-o", str(out))
    assert written.returncode == 0, written.stderr
    assert "<!DOCTYPE html>" in out.read_text(encoding="utf-8")
    asked = cli_run("report", *map(str, SEVERAL.trace_files()), "-o", str(out))
    assert asked.returncode == 2 and "--run" in asked.stderr and "-o DIR" in asked.stderr


def test_the_cli_writes_an_index_of_every_run_and_a_page_each(tmp_path: Path) -> None:
    files = [str(f) for f in [*SEVERAL.trace_files(), EXAMPLE]]
    written = cli_run("report", *files, "-o", str(tmp_path / "runs"))
    assert written.returncode == 0, written.stderr
    runs = otel_replay.load(*files)
    index = _Parsed((tmp_path / "runs" / "index.html").read_text(encoding="utf-8"))
    links = [v for tag, attrs in index.tags if tag == "a" for k, v in attrs if k == "href"]
    assert links == [page_name(r.run_id) for r in sorted(runs, key=lambda r: r.start_ns)]
    for run in runs:
        page = _Parsed((tmp_path / "runs" / page_name(run.run_id)).read_text(encoding="utf-8"))
        assert f"step-{len(run.steps) - 1}" in page.ids()
    one = cli_run("report", *files, "--run", runs[0].run_id[:10], "-o", str(tmp_path / "one"))
    assert one.returncode == 0 and len(list((tmp_path / "one").iterdir())) == 2


def _two_runs(tmp_path: Path, text: str) -> tuple[Path, Path]:
    """The same agent run recorded twice, its tool called with other arguments the second
    time (as a fix would call it), ``text`` in its messages and results."""

    @otel_replay.tool
    def lookup(query: str, user_id: str | None = None) -> str:
        return f"{text} {query} {user_id}"

    paths = []
    for n, user in enumerate((None, "u_7710")):
        trace = tmp_path / f"run{n}.otlp"
        with recording(trace), otel_replay.agent_run("support", input=text):
            with otel_replay.model_call(
                provider="openai", model="gpt-4o", messages=[{"role": "user", "content": text}]
            ) as call:
                call.record({"role": "assistant", "content": text})
            lookup("my order", user_id=user)
        paths.append(trace)
    return paths[0], paths[1]


def test_the_diff_page_shows_the_runs_side_by_side_and_the_first_divergence(
    tmp_path: Path,
) -> None:
    a, b = _two_runs(tmp_path, HOSTILE)
    out = tmp_path / "diff.html"
    compared = cli_run("diff", str(a), str(b), "--html", str(out))
    assert compared.returncode == 1, compared.stderr  # they differ
    page = _Parsed(out.read_text(encoding="utf-8"))
    first = [dict(attrs) for tag, attrs in page.tags if tag == "tr"]
    first = [row for row in first if "first" in (row.get("class") or "")]
    assert len(first) == 1 and first[0]["data-status"] == "changed"
    # The sign is drawn by the style; the line's changed words are marked (their own text).
    assert '+   "user_id": "u_7710"' not in "".join(page.text)
    assert '"user_id": "u_7710"' in "".join(page.text)
    assert {tag for tag, _ in page.tags} <= TAGS
    assert {k for _, attrs in page.tags for k, _ in attrs} <= ATTRIBUTES
    assert [tag for tag, _ in page.tags].count("script") == 1
    assert any(HOSTILE in t for t in page.text)  # the changed result, as text
    same = cli_run("diff", str(a), str(a), "--html", str(out))
    assert same.returncode == 0 and "equal" in out.read_text(encoding="utf-8")


# --- in a real browser ------------------------------------------------------------------


def _browser() -> str:
    named = os.environ.get("OTEL_REPLAY_BROWSER")
    if named:
        return named
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        pytest.skip("no Chromium here (.ci/run installs Debian's chromium)")
    return found


def _chromium(page: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return chromium(_browser(), page, tmp_path / "profile", "--window-size=1200,900", *args)


def _pixels(png: bytes) -> bytes:
    """The decoded scanlines of an 8-bit RGB or RGBA PNG (filter bytes included)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat = 8, b""
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        if kind == b"IDAT":
            idat += png[pos + 8 : pos + 8 + length]
        pos += 12 + length
    return zlib.decompress(idat)


# A browser starts in each: the default tier opens the example's page, the slow tier the rest.
@pytest.mark.parametrize("which", ["example", pytest.param("parallel", marks=pytest.mark.slow)])
def test_chromium_renders_the_page_its_steps_verdict_and_script(which: str, tmp_path: Path) -> None:
    files: list[Any] = [EXAMPLE] if which == "example" else PARALLEL.trace_files()
    run = otel_replay.load(*files)[0]
    page = tmp_path / "case.html"
    page.write_text(render_run(run), encoding="utf-8")

    dom = _chromium(page, tmp_path, "--dump-dom").stdout
    parsed = _Parsed(dom)
    assert [i for i in parsed.ids() if i.startswith("step-")] == [
        f"step-{s.index}" for s in run.steps
    ]
    assert parsed.ids().count("verdict") == 1 and run.kit.verdict in " ".join(parsed.text)
    # The script ran: the tools it shows are no longer hidden.
    tools = next(attrs for tag, attrs in parsed.tags if ("class", "tools") in attrs)
    assert "hidden" not in dict(tools)

    shot = tmp_path / "case.png"
    _chromium(page, tmp_path, f"--screenshot={shot}")
    pixels = _pixels(shot.read_bytes())
    assert len(set(pixels)) > 16  # not a blank page: text, bars, colours


@pytest.mark.slow
def test_chromium_renders_the_index_with_a_row_per_run(tmp_path: Path) -> None:
    runs = otel_replay.load(*SEVERAL.trace_files(), EXAMPLE)
    page = tmp_path / "index.html"
    page.write_text(render_index([index_line(r) for r in runs], "runs"), encoding="utf-8")
    parsed = _Parsed(_chromium(page, tmp_path, "--dump-dom").stdout)
    assert [tag for tag, _ in parsed.tags].count("tr") == len(runs) + 1
    assert f"{len(runs)} of {len(runs)} shown" in parsed.text  # the script ran
    shot = tmp_path / "index.png"
    _chromium(page, tmp_path, f"--screenshot={shot}")
    assert len(set(_pixels(shot.read_bytes()))) > 16


@pytest.mark.slow
def test_chromium_renders_the_diff_page_with_its_first_divergence(tmp_path: Path) -> None:
    a, b = _two_runs(tmp_path, "Where is my order?")
    page = tmp_path / "diff.html"
    assert cli_run("diff", str(a), str(b), "--html", str(page)).returncode == 1
    parsed = _Parsed(_chromium(page, tmp_path, "--dump-dom").stdout)
    assert "they differ" in parsed.text and "first divergence" in parsed.text
    tools = next(attrs for tag, attrs in parsed.tags if ("class", "tools") in attrs)
    assert "hidden" not in dict(tools)  # the script ran
    shot = tmp_path / "diff.png"
    _chromium(page, tmp_path, f"--screenshot={shot}")
    assert len(set(_pixels(shot.read_bytes()))) > 16


def test_a_streamed_answer_marks_its_first_chunk_on_the_time_axis(tmp_path: Path) -> None:
    """A model call recorded with its raw HTTP exchange (the SDK streaming from a server on
    127.0.0.1): its first chunk is marked where it arrived on the run's time axis."""
    from tests.unit.capture.test_http_recorder import record_one

    path, _, _ = record_one(tmp_path, "openai_stream", "sync", True)
    (run,) = otel_replay.load(str(path))
    (step,) = run.model_steps()
    assert step.model is not None and step.model.raw is not None
    first = step.start_ns + int(step.model.raw.chunk_offsets_ms[0] * 1e6)
    at = 100.0 * (first - run.start_ns) / (run.end_ns - run.start_ns)
    marks = [
        dict(attrs)["style"] or ""
        for tag, attrs in _page(run).tags
        if tag == "span" and ("title", "first chunk") in attrs
    ]
    assert marks == [f"left: {round(at, 3)}%"]


def test_without_jinja2_the_error_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from otel_replay.report import ReportUnavailable, page

    monkeypatch.setitem(sys.modules, "jinja2", None)  # as when it is not installed
    page.templates.cache_clear()
    try:
        (run,) = otel_replay.load(EXAMPLE)
        with pytest.raises(ReportUnavailable, match=r"otel-replay\[report\]"):
            render_run(run)
    finally:
        page.templates.cache_clear()
