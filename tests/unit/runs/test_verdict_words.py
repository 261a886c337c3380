"""One vocabulary for verdicts: ``ls``, ``check``, ``show``, the HTML pages and their
``--json`` say the same three answers of a run (recorded · replays · outcome).

Runs are recorded by an agent of the shape users write (``agent_run``, ``model_call``,
``@otel_replay.tool``) through the OpenTelemetry SDK and the project's processors,
drawing every combination of: the agent run raised or not; none, some or all of its
tool calls failed; model inputs damaged on the way to the file (cut by a limit
downstream of the SDK, as a Collector's transform or a backend may) or not; the
optional fields (ids, flags, request parameters, system prompt) set or not.  Error
messages hold characters a terminal acts on.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import random
import re
from collections.abc import Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import otel_replay
from otel_replay import attributes as A
from otel_replay.cli.main import cli
from otel_replay.cli.printable import printable
from otel_replay.report import page_name
from tests.fixtures.agent import identity
from tests.fixtures.recording import recording

#: The optional fields the agent sets, or not: absent, they are "not set", never missing.
OPTIONAL = (
    "user.id",
    "tenant.id",
    "session.id",
    "flags",
    "system_instructions",
    "temperature",
    "top_p",
    "seed",
)
#: Characters of an error message a terminal would act on, and ordinary ones.
ODD = ("\n", "\x1b[2J", "\t", "\u202e", "[bold]", "é")
ANSI = re.compile(r"\x1b\[([0-9;]*)m")

#: Which tool calls fail while recording (their call ids).
FAILING: set[str] = set()


@otel_replay.tool
def stock(sku: str) -> dict[str, Any]:
    if sku in FAILING:
        raise LookupError(f"no stock record for {sku}")
    return {"sku": sku, "left": 3}


@dataclasses.dataclass(frozen=True)
class Case:
    """One run to record, and what every command must say of it."""

    n: int
    raised: str | None  # the error message, when the run raises
    tools: int
    failed: int
    damaged: int  # model inputs cut on the way to the file
    optional: bool

    @property
    def agent(self) -> str:
        return f"case-{self.n}"

    def words(self) -> str:
        replays = "replays"
        if self.damaged:
            replays = f"does not replay: {self.damaged} payload{'s' * (self.damaged > 1)} damaged"
        said = []
        if self.raised is not None:
            said.append(f"error: ValueError: {self.raised}")
        if self.failed:
            said.append(f"{self.failed} of {self.tools} tool calls failed")
        return f"full · {replays} · {', '.join(said) or 'ok'}"


def cases(rng: random.Random) -> list[Case]:
    """Every combination of (raised) × (no, some, all tool calls failed) × (damaged) ×
    (optional fields set), the rest drawn."""
    out = []
    for raised in (False, True):
        for failing in ("none", "some", "all"):
            for damaged in (False, True):
                for optional in (False, True):
                    tools = rng.randint(2 if failing == "some" else 1, 3)
                    some = rng.randint(1, tools - 1) if failing == "some" else 0
                    failed = {"none": 0, "some": some, "all": tools}
                    message = None
                    if raised:
                        odd = "".join(rng.sample(ODD, rng.randint(0, 2)))
                        message = f"no order {rng.randint(1, 999)}{odd} left"
                    out.append(
                        Case(
                            n=len(out),
                            raised=message,
                            tools=tools,
                            failed=failed[failing],
                            damaged=rng.randint(1, tools + 1) if damaged else 0,
                            optional=optional,
                        )
                    )
    return out


class CutInputs(SpanExporter):
    """Cuts the model input messages of the first ``cut`` model calls to 40 characters
    (their exact bytes dropped), then exports: a limit downstream of the SDK, which the
    capture cannot know of."""

    def __init__(self, inner: SpanExporter, cut: int) -> None:
        self.inner, self.cut = inner, cut

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.inner.export([self._cut(s) for s in spans])

    def _cut(self, span: ReadableSpan) -> ReadableSpan:
        attrs = dict(span.attributes or {})
        if A.INPUT_MESSAGES not in attrs or attrs.get(A.OPERATION_NAME) != "chat":
            return span
        if self.cut <= 0:
            return span
        self.cut -= 1
        attrs[A.INPUT_MESSAGES] = str(attrs[A.INPUT_MESSAGES])[:40]
        attrs.pop(A.BYTES + A.INPUT_MESSAGES, None)
        cut = copy.copy(span)
        cut._attributes = attrs  # type: ignore[assignment]  # what the file is given
        return cut

    def shutdown(self) -> None:
        self.inner.shutdown()


def record(path: Path, case: Case) -> None:
    """One run of the agent: one model call per tool call, then the answer."""
    FAILING.clear()
    FAILING.update(f"{case.agent}-{i}" for i in range(case.failed))
    question = f"Is everything of {case.agent} in stock?"
    messages: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"type": "text", "content": question}]}
    ]
    params: dict[str, Any] = {}
    if case.optional:
        params = {"system": "Answer from the stock tool.", "temperature": 0.0, "top_p": 1.0}
        params |= {"seed": 7, "tools": [{"type": "function", "name": "stock"}]}
    ids = identity(f"u-{case.n}", f"s-{case.n}") if case.optional else contextlib.nullcontext()
    flags: dict[str, Any] = {"flags": {"beta": False}} if case.optional else {}
    with (
        recording(path, lambda e: CutInputs(e, case.damaged), **flags),
        ids,
        contextlib.suppress(ValueError),
        otel_replay.agent_run(case.agent, input=question) as run,
    ):
        for i in range(case.tools):
            sku, call_id = f"{case.agent}-{i}", f"call-{i}"
            with otel_replay.model_call(
                provider="scripted", model="scripted-1", messages=messages, **params
            ) as span:
                reply = {
                    "role": "assistant",
                    "parts": [
                        {
                            "type": "tool_call",
                            "id": call_id,
                            "name": "stock",
                            "arguments": {"sku": sku},
                        }
                    ],
                }
                span.record(reply)
            messages.append(reply)
            try:
                with otel_replay.tool_call_id(call_id):
                    result: Any = stock(sku=sku)
            except LookupError as exc:
                result = f"error: {exc}"
            response = {"type": "tool_call_response", "id": call_id, "response": result}
            messages.append({"role": "tool", "parts": [response]})
        with otel_replay.model_call(
            provider="scripted", model="scripted-1", messages=messages, **params
        ) as span:
            span.record({"role": "assistant", "parts": [{"type": "text", "content": "Checked."}]})
        if case.raised is not None:
            raise ValueError(case.raised)
        run.record("Checked.")


def invoke(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(cli, [str(a) for a in args])


class _Verdict(HTMLParser):
    """The text inside the element whose id is ``verdict``."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self.depth or ("id", "verdict") in attrs:
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if self.depth:
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth:
            self.text.append(data)


def parsed(page: Path) -> _Verdict:
    p = _Verdict()
    p.feed(page.read_text(encoding="utf-8"))
    return p


@pytest.mark.parametrize("seed", range(3))
def test_every_command_says_the_same_three_answers(seed: int, tmp_path: Path) -> None:
    drawn = cases(random.Random(seed))
    path = tmp_path / "runs.otlp"
    for case in drawn:
        record(path, case)

    listed = json.loads(invoke("ls", "--json", path).stdout)["runs"]
    by_agent = {r["agent"]: r for r in listed}
    assert sorted(by_agent) == sorted(c.agent for c in drawn)
    run_of = {c.agent: by_agent[c.agent]["run_id"] for c in drawn}
    ls_text = invoke("ls", path).stdout.splitlines()
    checked = invoke("check", "--json", path)
    assert checked.exit_code == 1  # some runs do not replay
    check_json = {r["run_id"]: r for r in json.loads(checked.stdout)["runs"]}
    check_text = invoke("check", path).stdout.splitlines()
    show_json = {r["run_id"]: r for r in json.loads(invoke("show", "--json", path).stdout)["runs"]}
    show_text = invoke("show", path).stdout.splitlines()
    pages = tmp_path / "pages"
    written = invoke("report", path, "-o", pages)
    assert written.exit_code == 0, written.output

    for case in drawn:
        run_id, words = run_of[case.agent], case.words()
        shown = printable(words)  # as a terminal is given it
        for doc in (by_agent[case.agent], check_json[run_id], show_json[run_id]):
            assert doc["verdict"] == "full", (case, doc)
            assert doc["verdict_words"] == words
            assert doc["replays"] is doc["replayable"] is (case.damaged == 0)
            assert doc["replay_problem"] == (
                None if case.damaged == 0 else words.split(": ")[1].split(" · ")[0]
            )
            error = doc["outcome"]["error"]
            if case.raised is None:
                assert error is None
            else:
                assert error == {"type": "ValueError", "message": case.raised}
            assert doc["outcome"]["tool_calls_failed"] == case.failed
            assert doc["outcome"]["tool_calls"] == case.tools
        (row,) = [line for line in ls_text if run_id[:16] in line]
        # The warnings check finds follow the three answers.
        assert re.sub(r" \(\d+ warnings?\)$", "", row).endswith(f"  {shown}"), (row, shown)
        assert f"run {run_id}: {shown}" in check_text
        (head,) = [line for line in show_text if line.startswith(f"run {run_id}  ")]
        assert f"  {shown}" in head
        page = parsed(pages / page_name(run_id))
        assert "".join(page.text) == words
        # Optional fields: set, they are nowhere; not set, they are said so, never missing.
        report = check_json[run_id]
        assert not set(OPTIONAL) & set(report["missing"])
        assert (set(OPTIONAL) <= set(report["not_set"])) is not case.optional
        assert not case.optional or not set(OPTIONAL) & set(report["not_set"])
        html = (pages / page_name(run_id)).read_text(encoding="utf-8")
        for field in OPTIONAL:
            assert f"not recorded: <code>{field}</code>" not in html
            assert (f"not set: <code>{field}</code>" in html) is not case.optional


def test_a_run_that_raised_or_whose_tools_failed_is_never_all_green(tmp_path: Path) -> None:
    drawn = cases(random.Random(7))
    path = tmp_path / "runs.otlp"
    for case in drawn:
        record(path, case)
    listed = json.loads(invoke("ls", "--json", path).stdout)["runs"]
    run_of = {r["agent"]: r["run_id"] for r in listed}
    coloured = invoke(
        "check", path, env={"FORCE_COLOR": "1", "TERM": "xterm", "COLUMNS": "1000"}
    ).stdout
    for case in drawn:
        (line,) = [x for x in coloured.splitlines() if run_of[case.agent] in x]
        colours = [m for m in ANSI.findall(line) if m not in ("", "0", "1")]
        # recorded, replays, outcome: each coloured by its meaning
        assert len(colours) == 3, line
        assert colours[0] == "32"  # full
        assert colours[1] == ("32" if case.damaged == 0 else "31")
        bad = case.raised is not None or case.failed == case.tools
        assert colours[2] == ("31" if bad else "33" if case.failed else "32"), line


def test_show_prints_an_errored_run_and_step_with_its_message_escaped(tmp_path: Path) -> None:
    rng = random.Random(3)
    for k, case in enumerate(c for c in cases(rng) if c.raised is not None):
        path = tmp_path / f"run{k}.otlp"
        record(path, case)
        assert case.raised is not None
        error = printable(f"ValueError: {case.raised}")
        tree = invoke("show", path).stdout.splitlines()
        (agent_line,) = [line for line in tree if " agent " in line]
        assert f"ERROR {error}" in agent_line
        step = invoke("show", path, "--step", "0").stdout
        assert f"  error: {error}\n" in step
        assert "\x1b" not in step and "\u202e" not in step
