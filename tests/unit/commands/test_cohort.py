"""``otel-replay cohort``: the worked example's recorded runs replayed against candidates.

The cohort is the order-support agent's runs, recorded as the example
records them (one question each), with one run that recorded no content.
The candidate models are real OpenAI SDK clients (the command's) talking to
fake OpenAI-compatible servers on 127.0.0.1: one is the recording itself
served by ``serve``'s engine, the others are the example's scripted model
changed in one way each (another answer, a tool call the recording cannot
answer, no tool call, a refused request).  The candidate code is the
example's fix.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from examples.order_support.record import record
from examples.order_support.scripted_model import ScriptedModel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import TracerProvider

import otel_replay
from otel_replay import messages as M
from otel_replay.commands.cohort import Comparator, ModelLoop, drawn, first_turn_apart
from otel_replay.commands.cohort_agent import AgentCandidate
from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.candidate_model import CandidateModel
from otel_replay.replay.engine import ReplayEngine
from otel_replay.report.cohort_page import render_cohort
from otel_replay.runs.failed_calls import fails_again
from otel_replay.runs.model import Step
from tests.conformance.receiver import TRACE_FILES
from tests.fixtures.cli import cli_run
from tests.fixtures.data import ROOT
from tests.fixtures.http import serving
from tests.fixtures.lost_parts import without

CASES = ROOT / "tests" / "conformance" / "cases"
QUESTIONS = ["Where is my order?", "Status of 4452?", "Anything about Widget Mini?", "Nothing?"]
#: One model's reply, from the request's GenAI messages and its whole body.
Respond = Callable[[list[dict[str, Any]], dict[str, Any]], dict[str, Any]]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example agent's runs, one per question, and a run that recorded no content."""
    path = tmp_path_factory.mktemp("cohort") / "runs.otlp"
    for question in QUESTIONS:
        record(path, question)
    provider = TracerProvider()
    provider.add_span_processor(
        otel_replay.RecordingSpanProcessor(otel_replay.FileSpanExporter(path))
    )
    with provider.get_tracer("t").start_as_current_span("chat gpt-4o") as span:
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"})
    provider.shutdown()
    return path


def cohort_cli(*args: str | Path) -> tuple[int, str, str]:
    """``otel-replay cohort ARGS`` run in the checkout (its agents import), with no OpenAI
    key or base URL of the environment's; in this process (what a cohort does, not its
    process, is tested here: the tests of signals start processes of their own)."""
    done = cli_run("cohort", *args, cwd=ROOT, env={"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None})
    return done.returncode, done.stdout, done.stderr


def as_json(*args: str | Path) -> dict[str, Any]:
    code, out, err = cohort_cli(*args, "--json")
    assert code in (0, 1), err
    doc: dict[str, Any] = json.loads(out)
    return doc


# --- fake candidate models -------------------------------------------------------------


def chat_completion(reply: dict[str, Any], model: str) -> dict[str, Any]:
    """A GenAI assistant message as the Chat Completions API answers it."""
    calls = [
        {
            "id": c["id"],
            "type": "function",
            "function": {"name": c["name"], "arguments": json.dumps(c["arguments"])},
        }
        for c in M.tool_calls([reply])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": M.last_text([reply])}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 3, "total_tokens": 14},
    }


def messages_answer(reply: dict[str, Any], model: str) -> dict[str, Any]:
    """A GenAI assistant message as the Anthropic Messages API answers it."""
    calls = M.tool_calls([reply])
    text = M.last_text([reply])
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [
        {"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["arguments"]}
        for c in calls
    ]
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 11, "output_tokens": 3},
    }


@contextlib.contextmanager
def function_model(
    respond: Respond, received: list[dict[str, Any]] | None = None, wire: str = "openai"
) -> Iterator[str]:
    """An OpenAI- (or Anthropic-) compatible server on 127.0.0.1 answering with
    ``respond``; the base URL its SDK takes.  Each request body is appended to
    ``received``."""

    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        if received is not None:
            received.append(body)
        messages = [M.normalize_message(m) for m in body["messages"] if m["role"] != "system"]
        for m in messages:  # the example's model reads its tool results as values
            for p in m["parts"]:
                if p.get("type") == "tool_call_response" and isinstance(p["response"], str):
                    with contextlib.suppress(ValueError):  # a failed tool's text stays text
                        p["response"] = json.loads(p["response"])
        reply = respond(messages, body)
        if "error" in reply:
            return 400, "application/json", json.dumps(reply).encode()
        render = chat_completion if wire == "openai" else messages_answer
        return 200, "application/json", json.dumps(render(reply, body["model"])).encode()

    with serving(answer) as url:
        yield url + "/v1" if wire == "openai" else url


def scripted(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    """The example's model itself."""
    return ScriptedModel().respond(messages)


def politer(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    """The same calls; the answer says more."""
    reply = scripted(messages, body)
    if not M.tool_calls([reply]):
        reply["parts"] = [{"type": "text", "content": "Thanks! " + str(M.last_text([reply]))}]
    return reply


def with_user_id(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    """Passes the user id to the lookup: a call the recording never made."""
    reply = scripted(messages, body)
    for part in reply["parts"]:
        if part.get("type") == "tool_call":
            part["arguments"] = {**part["arguments"], "user_id": "u_7710"}
    return reply


def no_tools(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    """Answers at once, without looking the order up."""
    return {"role": "assistant", "parts": [{"type": "text", "content": "Please ask support."}]}


def refusing(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"message": "model not found", "type": "invalid_request_error"}}


@contextlib.contextmanager
def served_recording(*paths: Path) -> Iterator[str]:
    """The recording itself as a candidate: ``serve``'s engine on 127.0.0.1."""
    runs = [r for r in otel_replay.load(*paths) if r.model_steps()]
    server = BackgroundServer(ReplayEngine(runs))
    server.start()
    try:
        yield server.url + "/v1"
    finally:
        server.stop()


# --- the command -------------------------------------------------------------------------


def test_candidate_models_side_by_side(cohort: Path) -> None:
    with (
        served_recording(cohort) as same,
        function_model(politer) as other,
        function_model(with_user_id) as new,
        function_model(no_tools) as direct,
    ):
        doc = as_json(
            cohort,
            *("--model", f"openai:scripted-sonnet-4-2510@{same}"),
            *("--model", f"openai:politer@{other}"),
            *("--model", f"openai:careful@{new}"),
            *("--model", f"openai:hasty@{direct}"),
        )
    runs = doc["runs"]
    assert doc["cohort"]["candidates"] == [
        "openai:scripted-sonnet-4-2510",
        "openai:politer",
        "openai:careful",
        "openai:hasty",
    ]
    assert len(runs) == len(QUESTIONS) + 1
    skipped = [r for r in runs if r["skipped"]]
    assert len(skipped) == 1 and skipped[0]["skipped"].startswith("does not replay: ")
    assert skipped[0]["outcomes"] == []
    replayed = [r for r in runs if not r["skipped"]]
    for run in replayed:
        same_out, other_out, new_out, direct_out = run["outcomes"]
        assert same_out["outcome"] == "same", same_out
        assert (
            same_out["tokens"] == run["recorded"]["input_tokens"] + run["recorded"]["output_tokens"]
        )
        assert other_out["outcome"] == "other_answer"
        assert other_out["answer"].startswith("Thanks! ")
        assert new_out["outcome"] == "new_path"
        assert "lookup_order(" in new_out["detail"] and "user_id" in new_out["detail"]
        assert direct_out["outcome"] == "other_path"
        assert direct_out["divergence"]["kind"] == "model"
        assert direct_out["divergence"]["step"] == 1  # the first model call
        assert "lookup_order" in direct_out["divergence"]["diff"]
    totals = {t["candidate"]: t for t in doc["totals"]}
    n = len(replayed)
    assert totals["openai:scripted-sonnet-4-2510"]["counts"]["same"] == n
    assert totals["openai:politer"]["counts"]["other_answer"] == n
    assert totals["openai:careful"]["counts"]["new_path"] == n
    assert totals["openai:hasty"]["first_divergence_steps"] == {"1": n}


def test_a_run_known_only_from_its_model_calls_is_a_model_candidates_not_the_codes(
    tmp_path: Path,
) -> None:
    """A client-only trace holds tool results only as the model was sent them: a model
    candidate takes the run, the agent's code cannot (the run does not replay); and where
    the trace holds no tool definitions either, the model candidate refuses it, naming
    them: a model offered no tools calls none."""
    cases = []
    for stack in ("openai_openinference", "openai_otel_v2"):
        case = tmp_path / stack / "traces.binpb"  # a copy: ls's summaries are saved beside it
        case.parent.mkdir()
        case.write_bytes((CASES / stack / "sync" / "traces.binpb").read_bytes())
        cases.append(case)
    with served_recording(*cases) as url:
        doc = as_json(
            *cases,
            *("--model", f"openai:gpt-4o-mini@{url}"),
            *("--agent", "tests.fixtures.cohort_agents:fixed_agent"),
        )
    with_tools, without = sorted(doc["runs"], key=lambda r: r["start_ns"])
    with_tools, without = (
        (with_tools, without)
        if "openai_openinference" in str(with_tools)
        else (without, with_tools)
    )
    for run in (with_tools, without):
        assert run["skipped"] is None
        assert "tool steps taken from messages" in run["recorded"]["verdict_words"]
        agent, model = run["outcomes"]  # agents first, then models
        assert agent["outcome"] == "refused"
        assert agent["detail"] == "does not replay: tool steps taken from messages"
    model = with_tools["outcomes"][1]
    assert model["outcome"] == "same" and len(model["tool_calls"]) == 3
    model = without["outcomes"][1]
    assert model["outcome"] == "refused" and "holds no tool definitions" in model["detail"]
    assert model["tool_calls"] == []


def test_the_table_names_every_run_and_outcome(cohort: Path) -> None:
    with function_model(scripted) as same, function_model(no_tools) as direct:
        code, out, err = cohort_cli(
            cohort, "--model", f"openai:a@{same}", "--model", f"openai:b@{direct}"
        )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[-2:] == ["openai:a", "openai:b"]
    rows = [line for line in lines[1 : len(QUESTIONS) + 2]]
    assert sum("skipped" in r for r in rows) == 1
    assert sum("same (28 tok)" in r and "other path @1 (14 tok)" in r for r in rows) == len(
        QUESTIONS
    )
    assert f"openai:a: {len(QUESTIONS)} run(s): {len(QUESTIONS)} same (100% same)" in out
    assert f"openai:b: {len(QUESTIONS)} run(s): {len(QUESTIONS)} other path (0% same)" in out
    assert "skipped 1 run(s):" in out and "does not replay: " in out


def test_fail_under_gates_on_the_share_of_same_runs(cohort: Path) -> None:
    with function_model(politer) as url:
        args = (
            cohort,
            "--model",
            f"openai:m@{url}",
            "--judge",
            "tests.fixtures.cohort_agents:lenient_judge",
        )
        passed = cohort_cli(*args, "--fail-under", "0.75")
        failed = cohort_cli(*args, "--fail-under", "0.76")
    assert passed[0] == 0, passed[2]
    assert failed[0] == 1 and "3 of 4 run(s) the same, under --fail-under 0.76" in failed[2]


def test_each_replay_is_written_as_a_trace_diff_compares_with_its_recording(
    cohort: Path, tmp_path: Path
) -> None:
    out = tmp_path / "replays"
    with function_model(scripted) as url:
        doc = as_json(
            cohort,
            *("--agent", "tests.fixtures.cohort_agents:fixed_agent", "--kwarg", "user_id=@user.id"),
            *("--model", f"openai:m@{url}"),
            *("-o", out, "--replayable", "--html", out / "cohort.html"),
        )
    files = [o["file"] for o in doc["cohort"]["outputs"]]
    # The page: each candidate's totals, each run with each outcome linking to its
    # recording and replay side by side.
    page = _Links(out / "cohort.html")
    assert doc["cohort"]["candidates"] == page.headers[-2:]
    assert {r["run_id"][:16] for r in doc["runs"]} <= set(page.codes)
    assert len(page.links) == 2 * len(doc["runs"])
    for link in page.links:
        side_by_side = (out / link).read_text(encoding="utf-8")
        assert "recorded" in side_by_side and "replayed: " in side_by_side
    assert "first divergence" in page.text and "step 2" in page.text
    assert files == [str(out / "candidate-1.otlp"), str(out / "candidate-2.otlp")]
    written = [{r.run_id: r for r in otel_replay.load(f)} for f in files]
    for run in doc["runs"]:
        for n, outcome in enumerate(run["outcomes"]):
            replay = written[n][outcome["replay_run_id"]]
            root = replay.roots[0].attributes
            assert root["otel_replay.replay_of"] == run["run_id"]
            assert root["otel_replay.cohort.id"] == doc["cohort"]["id"]
            assert root["otel_replay.cohort.candidate"] == doc["cohort"]["candidates"][n]
            diff = cli_run(
                "diff", f"{cohort}#{run['run_id']}", f"{files[n]}#{replay.run_id}", "--no-timing"
            )
            # The fix calls the lookup with the user id; the model made the recorded calls.
            assert diff.returncode == (1 if n == 0 else 0), diff.stdout + diff.stderr
    assert all(len(w) == len(QUESTIONS) for w in written)
    # Each replay's root links to the root of the run it replays, as a backend reads it.
    recorded = {r.run_id: r.roots[0] for r in otel_replay.load(cohort)}
    as_lines = tmp_path / "replays.jsonl"
    assert cli_run("convert", files[1], "-o", as_lines).returncode == 0
    roots = [
        span
        for line in as_lines.read_text().splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        if not span.get("parentSpanId")
    ]
    linked = {(s["links"][0]["traceId"], s["links"][0]["spanId"]) for s in roots}
    assert linked == {(r.trace_id, r.span_id) for r in recorded.values() if r.kind == "agent"}


class _Links(HTMLParser):
    """A page's links, table headers, code spans and text."""

    def __init__(self, path: Path) -> None:
        super().__init__()
        self.links: list[str] = []
        self.headers: list[str] = []
        self.codes: list[str] = []
        self.text = ""
        self._in: list[str] = []
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._in.append(tag)
        self.links += [v for k, v in attrs if tag == "a" and k == "href" and v]

    def handle_endtag(self, tag: str) -> None:
        if self._in and self._in[-1] == tag:
            self._in.pop()

    def handle_data(self, data: str) -> None:
        self.text += data
        if self._in and self._in[-1] == "th":
            self.headers.append(data)
        if self._in and self._in[-1] == "code":
            self.codes.append(data)


@settings(max_examples=50, deadline=None)
@given(said=st.text(min_size=1, max_size=40))
def test_the_page_shows_recorded_and_candidate_text_as_text(said: str) -> None:
    """Every string of the document is escaped: no markup from a run or a candidate."""
    outcome = {
        "outcome": "other_path",
        "words": said,
        "divergence": {"step": 2, "kind": "tool", "what": said, "diff": said},
        "answer": said,
        "tokens": 3,
        "cost": 0.001,
        "replay_run_id": said,
    }
    doc = {
        "cohort": {"id": said, "sources": [said], "candidates": [said], "compare": said},
        "runs": [
            {"run_id": said, "start_ns": 0, "agent": said, "recorded": {}, "outcomes": [outcome]},
            {"run_id": said + "2", "start_ns": 0, "recorded": {}, "outcomes": [], "not_run": said},
        ],
        "totals": [
            {
                "candidate": said,
                "runs": 1,
                "counts": {"other_path": 1},
                "same_rate": 0.0,
                "first_divergence_steps": {"2": 1},
                "slowest": [],
                "costliest": [],
            }
        ],
    }
    html = render_cohort(doc)
    parsed = _Parsed()
    parsed.feed(html)
    assert parsed.tags <= {
        "html",
        "head",
        "meta",
        "title",
        "style",
        "body",
        "main",
        "h1",
        "h2",
        "h3",
        "p",
        "code",
        "div",
        "section",
        "table",
        "thead",
        "tbody",
        "tr",
        "th",
        "td",
        "span",
        "strong",
        "details",
        "summary",
        "pre",
        "a",
    }
    assert said.strip() == "" or " ".join(said.split()) in " ".join(parsed.data.split())


class _Parsed(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.data = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)

    def handle_data(self, data: str) -> None:
        self.data += data


def test_a_failing_endpoint_is_an_error_and_exit_1(cohort: Path) -> None:
    with function_model(refusing) as url:
        code, out, err = cohort_cli(cohort, "--model", f"openai:gone@{url}", "--json")
    assert code == 1, err
    outcomes = [o for r in json.loads(out)["runs"] for o in r["outcomes"]]
    assert len(outcomes) == len(QUESTIONS)
    assert all(o["outcome"] == "error" and "model not found" in o["detail"] for o in outcomes)


def test_overrides_reach_the_candidate(cohort: Path, tmp_path: Path) -> None:
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Answer in French.", encoding="utf-8")
    received: list[dict[str, Any]] = []
    with function_model(scripted, received) as url:
        doc = as_json(
            cohort,
            *("--model", f"openai:m@{url}"),
            *("--set", "temperature=0", "--set", "top_p=0.5"),
            *("--system-prompt", prompt),
            "--limit",
            "1",
        )
    assert doc["cohort"]["candidates"] == ["openai:m (temperature=0, top_p=0.5) + system prompt"]
    assert [r["outcomes"][0]["outcome"] for r in doc["runs"]] == ["same"]
    assert len(received) == 2  # the lookup, then the answer
    for body in received:
        assert body["temperature"] == 0 and body["top_p"] == 0.5  # recorded: 0.7, none
        assert body["seed"] == 7  # recorded, kept
        assert body["messages"][0] == {"role": "system", "content": "Answer in French."}
        assert sum(m["role"] == "system" for m in body["messages"]) == 1
        assert [t["function"]["name"] for t in body["tools"]] == ["lookup_order", "cancel_order"]


def test_an_anthropic_candidate_is_sent_the_recorded_request_in_its_wire(cohort: Path) -> None:
    received: list[dict[str, Any]] = []
    with function_model(scripted, received, wire="anthropic") as same:
        with function_model(with_user_id, wire="anthropic") as new:
            doc = as_json(
                cohort,
                *("--model", f"anthropic:claude-x@{same}"),
                *("--model", f"anthropic:claude-y@{new}"),
                "--replayable",
            )
    kinds = [[o["outcome"] for o in r["outcomes"]] for r in doc["runs"]]
    assert kinds == [["same", "new_path"]] * len(QUESTIONS)
    assert doc["totals"][0]["input_tokens"] == 2 * 11 * len(QUESTIONS)
    first, second = received[:2]
    assert first["system"].startswith("You are the order-support assistant")
    assert first["max_tokens"] == 4096 and first["temperature"] == 0.7  # none recorded; recorded
    assert [t["name"] for t in first["tools"]] == ["lookup_order", "cancel_order"]
    assert "input_schema" in first["tools"][0]
    call, result = second["messages"][1:]
    assert call["content"][0]["type"] == "tool_use"
    assert result == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": call["content"][0]["id"],
                "content": result["content"][0]["content"],
            }
        ],
    }
    assert json.loads(result["content"][0]["content"])[0]["order_id"] == "4421"


def test_per_step_sends_each_recorded_request_once(cohort: Path) -> None:
    received: list[dict[str, Any]] = []
    with function_model(politer, received) as url:
        doc = as_json(cohort, "--model", f"openai:m@{url}", "--per-step", "--replayable")
    runs = doc["runs"]
    assert len(runs) == len(QUESTIONS) and len(received) == 2 * len(QUESTIONS)
    for run in runs:
        (outcome,) = run["outcomes"]
        assert outcome["outcome"] == "other_answer"
        first, second = outcome["steps"]
        assert first["same"] and not second["same"] and second["tools_same"]
        assert "Thanks!" in second["diff"]
    # The second request of each run is the recorded one: the recorded tool result in it.
    assert all(body["messages"][-1]["role"] == "tool" for body in received[1::2])


def test_the_fix_as_candidate_code_diverges_at_the_lookup(cohort: Path) -> None:
    doc = as_json(
        cohort,
        *("--agent", "examples.order_support.agent:run_agent"),
        *("--agent", "tests.fixtures.cohort_agents:fixed_agent"),
        *("--agent", "tests.fixtures.cohort_agents:crashing_agent"),
        *("--agent", "tests.fixtures.cohort_agents:exclaiming_agent"),
        *("--kwarg", "user_id=@user.id"),
    )
    replayed = [r for r in doc["runs"] if not r["skipped"]]
    assert len(replayed) == len(QUESTIONS)
    for run in replayed:
        unchanged, fixed, crashing, exclaiming = run["outcomes"]
        assert exclaiming["outcome"] == "other_answer"
        assert exclaiming["answer"].endswith(" Anything else?")
        assert [c["name"] for c in exclaiming["tool_calls"]] == ["lookup_order"]
        assert unchanged["outcome"] == "same"
        assert fixed["outcome"] == "other_path"
        assert fixed["divergence"]["kind"] == "tool" and fixed["divergence"]["step"] == 2
        assert "user_id" in fixed["divergence"]["diff"]
        assert (
            crashing["outcome"] == "error"
            and "RuntimeError: no answer for u_7710" in (crashing["detail"])
        )


def test_an_agent_missing_what_it_takes_is_refused_by_name(cohort: Path) -> None:
    doc = as_json(
        cohort, "--agent", "tests.fixtures.cohort_agents:fixed_agent", "--kwarg", "user_id=@nobody"
    )
    outcomes = [o for r in doc["runs"] for o in r["outcomes"]]
    assert outcomes and all(o["outcome"] == "refused" and "nobody" in o["detail"] for o in outcomes)


def test_a_judge_decides_answers_the_comparator_calls_different(cohort: Path) -> None:
    with function_model(politer) as url:
        doc = as_json(
            cohort,
            "--model",
            f"openai:m@{url}",
            "--judge",
            "tests.fixtures.cohort_agents:lenient_judge",
        )
    kinds = [r["outcomes"][0]["outcome"] for r in doc["runs"] if not r["skipped"]]
    # The judge takes the answers naming an order as the same; the one naming none differs.
    assert kinds.count("same") == 3 and kinds.count("other_answer") == 1


def test_sampling_prints_its_seed_and_draws_again_with_it(cohort: Path) -> None:
    with function_model(scripted) as url:
        code, out, err = cohort_cli(cohort, "--model", f"openai:m@{url}", "--sample", "2", "--json")
        assert code == 0, err
        seed = err.split("--seed ")[1].split()[0]
        first = [r["run_id"] for r in json.loads(out)["runs"]]
        again = as_json(cohort, "--model", f"openai:m@{url}", "--sample", "2", "--seed", seed)
    assert len(first) == 2 and [r["run_id"] for r in again["runs"]] == first
    assert again["cohort"]["seed"] == int(seed) and again["cohort"]["runs_kept_by_filters"] == 5


def test_usage_errors(cohort: Path) -> None:
    for args, said in [
        ((), "give at least one candidate"),
        (("--model", "gpt-4o"), "PROVIDER:MODEL"),
        (("--agent", "no such"), "is not MODULE:FUNC"),
        (
            ("--agent", "tests.fixtures.cohort_agents:fixed_agent", "--set", "temperature=0"),
            "go with --model",
        ),
    ]:
        code, _, err = cohort_cli(cohort, *args)
        assert code == 2 and said in err, err


# --- classes of input ---------------------------------------------------------------------


@settings(deadline=None)
@given(
    n=st.integers(0, 40),
    sample=st.none() | st.integers(1, 50),
    seed=st.integers(0, 2**32),
    limit=st.none() | st.integers(1, 50),
)
def test_a_drawn_cohort_is_an_ordered_repeatable_subset(
    n: int, sample: int | None, seed: int, limit: int | None
) -> None:
    items = list(range(n))
    got = drawn(items, sample, seed, limit)
    assert got == sorted(set(got)) and set(got) <= set(items)
    size = n if sample is None else min(sample, n)
    assert len(got) == (size if limit is None else min(size, limit))
    assert drawn(items, sample, seed, limit) == got


_args = st.dictionaries(
    st.sampled_from(["query", "order_id", "user_id", "reason"]),
    st.integers(0, 3) | st.text(max_size=4),
    max_size=3,
)
_turn = st.lists(st.tuples(st.sampled_from(["lookup_order", "cancel_order"]), _args), max_size=3)


def _calls(turn: list[tuple[str, dict[str, Any]]], respell: bool) -> list[dict[str, Any]]:
    """A turn's calls as a model sends them: arguments as a value, or as JSON text with
    their keys in another order (``respell``)."""
    out = []
    for i, (name, args) in enumerate(turn):
        arguments: Any = args
        if respell:
            arguments = json.dumps(dict(reversed(list(args.items()))), indent=1)
        out.append({"type": "tool_call", "id": f"c{i}", "name": name, "arguments": arguments})
    return out


def _steps(n: int) -> list[Step]:
    return [Step("model", "chat", f"s{i}", None, "t", 0, 0, index=2 * i + 1) for i in range(n)]


@settings(deadline=None)
@given(turns=st.lists(_turn, max_size=4), data=st.data())
def test_the_same_calls_in_any_order_and_spelling_do_not_diverge(
    turns: list[list[tuple[str, dict[str, Any]]]], data: st.DataObject
) -> None:
    recorded = [_calls(t, False) for t in turns]
    actual = [_calls(data.draw(st.permutations(t)), True) for t in turns]
    assert first_turn_apart(recorded, actual, _steps(len(turns))) is None


@settings(deadline=None)
@given(turns=st.lists(_turn, min_size=1, max_size=4), data=st.data())
def test_the_first_turn_whose_calls_differ_is_named(
    turns: list[list[tuple[str, dict[str, Any]]]], data: st.DataObject
) -> None:
    at = data.draw(st.integers(0, len(turns) - 1))
    changed = [list(t) for t in turns]
    if changed[at] and data.draw(st.booleans()):
        name, args = changed[at][0]
        changed[at][0] = (name, {**args, "extra": "x"})  # other arguments
    else:
        changed[at].append(("escalate", {}))  # one more call
    steps = _steps(len(turns))
    apart = first_turn_apart(
        [_calls(t, False) for t in turns], [_calls(t, True) for t in changed], steps
    )
    assert apart is not None and apart.step == steps[at].index and apart.kind == "model"


#: The corpus's cases whose model server failed a call (cut answers, errors, timeouts).
_FAILED_CALL_CASES = sorted(
    p.parent for p in CASES.glob("*/*/server.jsonl") if '"failed": true' in p.read_text("utf-8")
)


@functools.cache
def _runs_of(case: Path) -> tuple[otel_replay.Run, ...]:
    return tuple(otel_replay.load(*(case / n for n in TRACE_FILES if (case / n).exists())))


@settings(deadline=None, max_examples=25, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(_FAILED_CALL_CASES), data=st.data())
def test_a_turn_apart_at_a_call_that_failed_in_the_recording_says_so(
    case: Path, data: st.DataObject
) -> None:
    """A candidate answering a call the recording failed (a replay fails it again) is told
    apart from one that answers a whole recorded call otherwise: what the trace holds of a
    failed call is only what came before the failure."""
    runs = [r for r in _runs_of(case) if any(s.kind == "model" for s in r.steps)]
    run = data.draw(st.sampled_from(runs))
    steps = [s for s in run.steps if s.kind == "model" and s.model is not None]
    recorded = [M.tool_calls(s.model.output_messages or []) for s in steps if s.model]
    at = data.draw(st.integers(0, len(steps) - 1))
    changed = [list(t) for t in recorded]
    changed[at] = [*changed[at], {"name": "escalate", "arguments": {}}]
    apart = first_turn_apart(recorded, changed, steps, run)
    assert apart is not None and apart.step == steps[at].index
    said = "the recorded call failed and the candidate answered it" in apart.what
    assert said == fails_again(run, steps[at]), (case.name, apart.what)


def test_the_corpus_holds_calls_that_failed() -> None:
    assert len(_FAILED_CALL_CASES) >= 40
    assert any(
        fails_again(r, s) for c in _FAILED_CALL_CASES[:8] for r in _runs_of(c) for s in r.steps
    )


_words = st.lists(st.text("abcé,.!0", min_size=1, max_size=5), max_size=4)
_gaps = st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n "]), min_size=6, max_size=6)


@settings(deadline=None)
@given(words=_words, gaps=_gaps)
def test_texts_apart_only_in_whitespace_are_the_same_text_unless_exact(
    words: list[str], gaps: list[str]
) -> None:
    """The class: a text and the same words with other whitespace at its ends and between
    them, an empty text among them (a turn of tool calls that records an empty text
    part, and one that records none)."""
    text = " ".join(words)
    spaced = gaps[0] + "".join(w + gaps[1 + i % 5] for i, w in enumerate(words))
    normalized, exact = Comparator("normalized"), Comparator("exact")
    assert normalized.same_text(text, spaced)
    assert exact.same_text(text, spaced) == (text == spaced)
    if not words:
        assert normalized.same_text(None, spaced) and normalized.same_text(text, None)
        assert exact.same_text("", None) and exact.same_text(None, "")
    assert not normalized.same_text(text, spaced + "x") and not exact.same_text(text, text + "x")


_space = st.sampled_from([" ", "  ", "\n", "\t "])


@pytest.fixture(scope="module")
def spaced_candidate(cohort: Path) -> Iterator[tuple[otel_replay.Run, CandidateModel, list[str]]]:
    """A recorded run, and a candidate model answering as its model did but with the
    whitespace the list it is given says: before the answer, between words, after."""
    (run,) = [r for r in otel_replay.load(cohort) if "4452" in (r.final_output() or "")]
    spacing = [" ", " ", " "]

    def spaced(messages: list[dict[str, Any]], body: dict[str, Any]) -> dict[str, Any]:
        reply = scripted(messages, body)
        if not M.tool_calls([reply]):
            before, between, after = spacing
            text = before + between.join(str(M.last_text([reply])).split(" ")) + after
            reply["parts"] = [{"type": "text", "content": text}]
        return reply

    with function_model(spaced) as url:
        model = CandidateModel("openai", "m", url)
        try:
            yield run, model, spacing
        finally:
            model.close()


@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(before=_space, between=_space, after=_space)
def test_answers_apart_only_in_whitespace_are_the_same_unless_exact(
    spaced_candidate: tuple[otel_replay.Run, CandidateModel, list[str]],
    before: str,
    between: str,
    after: str,
) -> None:
    """A candidate whose answer differs from the recorded one only in whitespace at its
    ends and between words: the same under the normalized comparator, another answer
    under the exact one."""
    run, model, spacing = spaced_candidate
    spacing[:] = [before, between, after]
    loose = ModelLoop(model).replay(run, Comparator("normalized"))
    strict = ModelLoop(model).replay(run, Comparator("exact"))
    assert loose.kind == "same" and strict.kind == "other_answer"


def test_a_run_whose_trace_lacks_what_the_replay_needs_is_refused_the_others_replay(
    tmp_path: Path,
) -> None:
    """The agent candidate's replay of a run lacking a tool's result is refused before the
    agent runs, naming the step; the next run replays as ever."""
    example = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
    lost = tmp_path / "lost.otlp"
    assert without(example, lost, "gen_ai.tool.call.result", lambda n: n.startswith("execute"))
    candidate = AgentCandidate(
        "examples.order_support.agent:run_agent", kwargs=("user_id=@user.id",)
    )
    (cut,), (whole,) = otel_replay.load(lost), otel_replay.load(example)
    refused = candidate.replay(cut, Comparator())
    assert refused.kind == "refused", refused
    assert refused.detail.startswith("step 2 (tool lookup_order") and refused.detail.endswith(
        "no result was recorded for this tool call"
    )
    assert candidate.replay(whole, Comparator()).kind == "same"
