"""The run page says on each collapsed step what it was given and gave, and the index
says what each run was asked and answered.

A newcomer opened ``otel-replay report``'s pages of their agent (the OpenAI SDK, two
tools): every step had to be unfolded to see a tool's arguments and result or the
message a model call answered, and the index listed ids and counts but not the
question nor the answer.  Now each step's summary line holds a one-line gist (a
tool's arguments → its result or error; a model call's last message in → its text
or calls out) and the index has a question and an answer column, each on one line,
shortened, and escaped.  Drawn over what recorded text can be: markup, very long,
non-ASCII, many lines.
"""

from __future__ import annotations

import contextlib
import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.report import index_line, page_name, render_index, render_run
from otel_replay.report.page import GIST_CHARS
from tests.fixtures.cli import cli_process
from tests.fixtures.recording import recording
from tests.fixtures.weather_agent import FINAL, QUESTION, import_agent, write_agent
from tests.fixtures.weather_agent import record as record_weather

HOSTILE = '</span></summary><script>alert("x")</script><img src=x onerror=alert(1)> &amp; <!--'
#: What recorded text can be: markup, non-ASCII (accents, CJK, emoji, right-to-left),
#: many lines and tabs, very long.
TEXT = st.one_of(
    st.just(HOSTILE),
    st.text(
        st.one_of(
            st.sampled_from([*"<>&\"'/=!- \n\t", "é", "漢", "🙂", "א", "\u200b"]),
            st.characters(blacklist_categories=("Cs", "Cc")),
        ),
        min_size=1,
        max_size=30,
    ),
    st.builds(lambda s, n: s * n, st.just(HOSTILE + " 漢字 "), st.integers(5, 40)),
).filter(lambda s: s.strip() != "")


def one_line(text: str) -> str:
    return " ".join(text.split())


class _Page(HTMLParser):
    """A page's tags, its step summaries' gists (by step id), the index's cells by class."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.gists: dict[str, str] = {}
        self.cells: dict[str, list[str]] = {}
        #: The index's "said" cells marked as an error, by their place among the cells.
        self.bad: list[int] = []
        self._step = ""
        self._in: str | None = None
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        got = dict(attrs)
        if tag == "details" and "step" in (got.get("class") or ""):
            self._step = got.get("id") or ""
        classes = (got.get("class") or "").split()
        if "gist" in classes or "said" in classes:
            self._in = "gist" if "gist" in classes else "said"
            if "bad" in classes:
                self.bad.append(len(self.cells.get("said", [])))
            if self._in == "gist":
                self.gists[self._step] = ""
            else:
                self.cells.setdefault("said", []).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("span", "td"):
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in == "gist":
            self.gists[self._step] += data
        elif self._in == "said":
            self.cells["said"][-1] += data


def _shortened_from(shown: str, whole: str) -> None:
    """``shown`` is ``whole`` on one line, whole or cut with an ellipsis, never longer
    than a gist."""
    assert "\n" not in shown and len(shown) <= GIST_CHARS
    if shown.endswith("…") and shown != one_line(whole):
        assert one_line(whole).startswith(shown[:-1].rstrip())
    else:
        assert shown == one_line(whole)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(question=TEXT, arguments=TEXT, result=TEXT, error=TEXT, answer=TEXT)
def test_each_step_and_the_index_show_what_went_in_and_out_on_one_line(
    tmp_path_factory: Any, question: str, arguments: str, result: str, error: str, answer: str
) -> None:
    @otel_replay.tool
    def lookup(query: str) -> str:
        return result

    @otel_replay.tool
    def fail(query: str) -> str:
        raise RuntimeError(error)

    trace = tmp_path_factory.mktemp("gists") / "run.otlp"
    asked = [{"role": "user", "content": question}]
    with recording(trace), otel_replay.agent_run("agent", input=question) as run:
        with otel_replay.model_call(provider="openai", model="gpt-4o", messages=asked) as call:
            call.record(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {
                                "name": "lookup",
                                "arguments": json.dumps({"q": arguments}),
                            },
                        }
                    ],
                }
            )
        lookup(arguments)
        with contextlib.suppress(RuntimeError):
            fail(arguments)
        with otel_replay.model_call(provider="openai", model="gpt-4o", messages=asked) as call:
            call.record({"role": "assistant", "content": answer})
        run.output = answer
    (recorded,) = otel_replay.load(trace)
    page = _Page(render_run(recorded))
    assert page.tags.count("script") == 1 and "img" not in page.tags  # text stayed text
    steps = {s.index: s for s in recorded.steps}
    tools = [s for s in recorded.steps if s.tool is not None]
    models = [s for s in recorded.steps if s.kind == "model"]
    assert len(tools) == 2 and len(models) == 2
    for step in tools:
        shown = page.gists[f"step-{step.index}"]
        out = result if step.tool.error is None else f"raised RuntimeError: {error}"
        _shortened_from(shown, f"{json.dumps({'query': arguments}, ensure_ascii=False)} → {out}")
    first, last = (page.gists[f"step-{s.index}"] for s in models)
    assert first.startswith(one_line(f"user: {question}")[:20])
    assert "→ lookup(" in first  # the call it asked for
    assert last.endswith(one_line(answer)[-10:]) or last.endswith("…")
    assert all(len(g) <= GIST_CHARS and "\n" not in g for g in page.gists.values())
    assert set(page.gists) <= {f"step-{i}" for i in steps}

    index = _Page(render_index([index_line(recorded)], "runs"))
    assert index.tags.count("script") == 1 and "img" not in index.tags
    said_question, said_answer = index.cells["said"]
    _shortened_from(said_question, question)
    _shortened_from(said_answer, answer)


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(question=TEXT, error=TEXT)
def test_the_index_shows_what_a_run_raised_where_its_answer_would_be(
    tmp_path_factory: Any, question: str, error: str
) -> None:
    """A run that raised before it answered: its answer cell says what it raised (marked
    as an error), not "-"."""
    trace = tmp_path_factory.mktemp("raised") / "run.otlp"
    asked = [{"role": "user", "content": question}]
    with contextlib.suppress(ValueError), recording(trace):
        with otel_replay.agent_run("agent", input=question):
            with otel_replay.model_call(provider="openai", model="gpt-4o", messages=asked) as call:
                call.record({"role": "assistant", "content": "thinking"})
            raise ValueError(error)
    (recorded,) = otel_replay.load(trace)
    index = _Page(render_index([index_line(recorded)], "runs"))
    assert index.tags.count("script") == 1 and "img" not in index.tags
    said_question, said_answer = index.cells["said"]
    _shortened_from(said_question, question)
    _shortened_from(said_answer, f"raised ValueError: {error}")
    assert index.bad == [1]


def test_the_newcomers_pages_show_the_tools_the_question_and_the_answer(tmp_path: Path) -> None:
    """The weather agent on the OpenAI SDK, recorded through ``RecordingTransport`` as the
    README does, then ``otel-replay report -o DIR`` as the newcomer ran it."""
    agent = import_agent(write_agent(tmp_path, "openai"))
    trace = tmp_path / "runs.otlp"
    assert record_weather(trace, agent, "openai") == FINAL
    out = tmp_path / "pages"
    done = cli_process("report", str(trace), "-o", str(out))
    assert done.returncode == 0, done.stderr
    (run,) = otel_replay.load(trace)
    index = _Page((out / "index.html").read_text(encoding="utf-8"))
    assert index.cells["said"] == [QUESTION, FINAL]
    page = _Page((out / page_name(run.run_id)).read_text(encoding="utf-8"))
    weather, time = (page.gists[f"step-{s.index}"] for s in run.tool_steps())
    assert weather == '{"city": "Paris"} → {"city": "Paris", "temperature_c": 18, "sky": "sunny"}'
    assert time.startswith('{"city": "Paris"} → {"city": "Paris", "time": ')
    calls = [page.gists[f"step-{s.index}"] for s in run.model_steps()]
    assert calls[0] == f'user: {QUESTION} → get_weather({{"city": "Paris"}})'
    assert calls[-1].endswith(f"→ {FINAL}")
