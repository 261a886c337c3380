"""The conformance harness itself: server, receiver and checks on runs recorded here and now.

An agent written against the openai SDK and recorded with otel-replay's own
capture (``agent_run``, ``model_call``, ``@otel_replay.tool``) runs the
scenario against the fake model server; the SDK's OTLP/HTTP exporter sends
its spans to the receiver; the case is written as ``generate`` writes one.
Recorded this way a run must rebuild exactly, and the check must name what
differs when the trace or the ground truth is made to differ.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gzip
import json
import os
import re
import struct
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import anthropic
import httpx
import httpx2
import openai
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

import otel_replay
from tests.conformance import endings, generate, scenario, server
from tests.conformance.checks import Case, check, find_cases
from tests.conformance.generate import ROOT, scrub, write_case
from tests.conformance.receiver import OtlpReceiver
from tests.conformance.server import ModelServer
from tests.fixtures.ground_truth import answered, react_action, streamed_before_cut

MODEL = "gpt-4o-mini"


@otel_replay.tool
def lookup_order(order_id: str) -> dict[str, Any]:
    return scenario.lookup_order(order_id)


@otel_replay.tool
def track_shipment(order_id: str) -> dict[str, Any]:
    return scenario.track_shipment(order_id)


@otel_replay.tool
def open_ticket(order_id: str, reason: str) -> dict[str, Any]:
    return scenario.open_ticket(order_id, reason)


TRACED = {
    "lookup_order": lookup_order,
    "track_shipment": track_shipment,
    "open_ticket": open_ticket,
}


def ask(client: openai.OpenAI, question: str, tools: dict[str, Any], prepare: bool = False) -> str:
    """The scenario's agent: call the model, run the tools it asks for, until it answers.

    ``prepare`` opens a model span that records no answer before each call,
    as some instrumentations trace a framework's request preparation.
    """
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": scenario.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    with otel_replay.agent_run("conformance", input=question) as run:
        for _ in range(6):
            request = {"model": MODEL, "tools": scenario.openai_tools(), "temperature": 0}
            if prepare:
                with otel_replay.model_call(provider="openai", messages=messages, **request):
                    pass
            with otel_replay.model_call(provider="openai", messages=messages, **request) as call:
                response = client.chat.completions.create(messages=messages, **request)
                message = response.choices[0].message.model_dump(exclude_none=True)
                call.record(message, response_id=response.id, response_model=response.model)
            messages.append(message)
            if not message.get("tool_calls"):
                run.record(message["content"])
                return str(message["content"])
            for c in message["tool_calls"]:
                name, args = c["function"]["name"], json.loads(c["function"]["arguments"])
                try:
                    with otel_replay.tool_call_id(c["id"]):
                        result = json.dumps(tools[name](**args), ensure_ascii=False)
                except RuntimeError as e:
                    result = f"Error: {e}"
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": result})
    raise AssertionError("the agent did not answer")


def record(
    tmp_path: Path,
    runs: int = 1,
    tools: dict[str, Any] = TRACED,
    mode: str = "sync",
    prepare: bool = False,
) -> Case:
    """Run the agent ``runs`` times in this process; the case, as ``generate`` writes it."""
    work = tmp_path / "work"
    work.mkdir()
    with ModelServer(work / "server.jsonl") as server, OtlpReceiver(work) as receiver:
        provider = TracerProvider()
        exporter = OTLPSpanExporter(endpoint=f"{receiver.url}/v1/traces")
        provider.add_span_processor(BatchSpanProcessor(exporter))
        previous = otel_replay.use_tracer_provider(provider)
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        try:
            answers = [ask(client, q, tools, prepare) for q in scenario.QUESTIONS[:runs]]
        finally:
            otel_replay.use_tracer_provider(previous)
            provider.shutdown()
    meta = {"stack": "otel_replay", "mode": mode, "api": "chat", "runs": runs, "content": True}
    out = write_case(tmp_path / "cases" / "otel_replay" / mode, work, "\n".join(answers), meta)
    return Case(out)


def test_a_run_recorded_with_every_step_rebuilds_exactly(tmp_path: Path) -> None:
    case = record(tmp_path)
    assert (case.path / "traces.binpb").exists()
    outcome = check(case)
    assert outcome.problems == []
    assert outcome.verdicts == ["full"]


def test_two_runs_in_one_process_are_two_runs_each_exact(tmp_path: Path) -> None:
    outcome = check(record(tmp_path, runs=2, mode="two_runs"))
    assert outcome.problems == []
    assert outcome.verdicts == ["full", "full"]


def test_an_untraced_tool_is_named(tmp_path: Path) -> None:
    tools = {**TRACED, "open_ticket": scenario.open_ticket}
    problems = check(record(tmp_path, tools=tools)).problems
    assert any(p.startswith("verdict model-only, not full: ") for p in problems), problems


def _edit_log(case: Case, edit: Any) -> None:
    log = case.path / "server.jsonl"
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    log.write_text("".join(json.dumps(r) + "\n" for r in edit(records)), encoding="utf-8")


def test_a_step_the_server_never_saw_is_named(tmp_path: Path) -> None:
    case = record(tmp_path)
    _edit_log(case, lambda records: records[:-1])
    problems = check(case).problems
    assert "3 model steps for 2 model requests" in problems
    assert any(p.startswith("invented or wrong: step ") for p in problems), problems


def _reword(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The second request as if the question had been other words."""
    body = json.loads(records[1]["body_raw"])
    body["messages"][1]["content"] = "Où est ORD-5521 ?"
    records[1]["body_raw"] = json.dumps(body, ensure_ascii=False)
    return records


def test_a_message_other_than_the_server_got_is_named_with_its_step(tmp_path: Path) -> None:
    case = record(tmp_path)
    _edit_log(case, _reword)
    (problem,) = check(case).problems
    assert problem.startswith("step ") and " input: item 1 is " in problem, problem


def test_extra_model_steps_without_output_are_named_and_the_others_compared(
    tmp_path: Path,
) -> None:
    case = record(tmp_path, prepare=True)
    _edit_log(case, _reword)
    problems = [re.sub(r", span [0-9a-f]+\)", ")", p) for p in check(case).problems]
    assert problems[:3] == [
        "6 model steps for 3 model requests",
        "invented: step 1 (model chat gpt-4o-mini), step 5 (model chat gpt-4o-mini), "
        "step 8 (model chat gpt-4o-mini) (no output; no request of their own)",
        'step 6 (model chat gpt-4o-mini) input: item 1 is ["user", ["text", '
        f'"{scenario.QUESTIONS[0]}"]], the server\'s is ["user", ["text", "Où est ORD-5521 ?"]]',
    ], problems


def test_split_runs_are_named(tmp_path: Path) -> None:
    case = record(tmp_path, runs=2, mode="two_runs")
    _edit_log(case, lambda records: [{**r, "conversation": "ORD-5521"} for r in records])
    problems = check(case).problems
    assert problems[0] == "split runs: 2 runs for 1 agent runs (model steps per run: 3, 3)"


def _scripted_calls(
    api: str, url: str, stream: bool, retries: int = 0
) -> list[tuple[str, str, Any]]:
    """``(id, name, arguments)`` of the calls the first answer asks for, as the SDK parsed them
    (its client retrying a failed request ``retries`` times at most)."""
    question = scenario.QUESTIONS[0]
    if api == "anthropic":
        client = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=retries)
        tools = [
            {"name": n, "description": d, "input_schema": scenario.TOOL_PARAMETERS[n]}
            for n, d in scenario.TOOL_DESCRIPTIONS.items()
        ]
        request: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 256,
            "messages": [{"role": "user", "content": question}],
            "tools": tools,
        }
        if stream:
            with client.messages.stream(**request) as events:
                blocks = events.get_final_message().content
        else:
            blocks = client.messages.create(**request).content
        return [(b.id, b.name, b.input) for b in blocks if b.type == "tool_use"]
    oai = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=retries)
    if api == "responses":
        tools = [
            {"type": "function", "name": n, "parameters": scenario.TOOL_PARAMETERS[n]}
            for n in scenario.TOOL_DESCRIPTIONS
        ]
        if stream:
            events = list(
                oai.responses.create(model=MODEL, input=question, tools=tools, stream=True)
            )
            output = events[-1].response.output
        else:
            output = oai.responses.create(model=MODEL, input=question, tools=tools).output
        return [(o.call_id, o.name, json.loads(o.arguments)) for o in output]
    messages = [{"role": "user", "content": question}]
    tools = scenario.openai_tools()
    if stream:
        chunks = oai.chat.completions.create(
            model=MODEL, messages=messages, tools=tools, stream=True
        )
        calls: dict[int, list[str]] = {}
        for chunk in chunks:
            for tc in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
                slot = calls.setdefault(tc.index, ["", "", ""])
                fn = tc.function
                slot[0] += tc.id or ""
                slot[1] += (fn.name or "") if fn else ""
                slot[2] += (fn.arguments or "") if fn else ""
        return [(i, n, json.loads(a)) for i, n, a in calls.values()]
    message = oai.chat.completions.create(model=MODEL, messages=messages, tools=tools)
    return [
        (c.id, c.function.name, json.loads(c.function.arguments))
        for c in message.choices[0].message.tool_calls or []
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_the_server_answers_each_api_as_scripted_and_logs_it(
    tmp_path: Path, api: str, stream: bool
) -> None:
    log = tmp_path / "server.jsonl"
    with ModelServer(log) as server:
        calls = _scripted_calls(api, server.url, stream)
    prefix = "toolu" if api == "anthropic" else "call"
    args = {"order_id": "ORD-5521"}
    assert calls == [
        (f"{prefix}_lookup_order_5521", "lookup_order", args),
        (f"{prefix}_track_shipment_5521", "track_shipment", args),
    ]
    (logged,) = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert (logged["conversation"], logged["turn"]) == ("ORD-5521", 0)
    logged["body_json"] = json.loads(logged["body_raw"])
    in_log = [item[1:] for _, item in answered(logged) if item[0] == "call"]
    assert in_log == calls


def _answer_parts(api: str, url: str, stream: bool) -> list[str]:
    """The texts of the answer to a request without tools (the final answer), part by part
    as the SDK parsed them (Chat Completions has one part: the streamed deltas joined)."""
    question = scenario.QUESTIONS[0]
    if api == "anthropic":
        client = anthropic.Anthropic(base_url=url, api_key="sk-test", max_retries=0)
        request: dict[str, Any] = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 256,
            "messages": [{"role": "user", "content": question}],
        }
        if stream:
            with client.messages.stream(**request) as events:
                blocks = events.get_final_message().content
        else:
            blocks = client.messages.create(**request).content
        return [b.text for b in blocks if b.type == "text"]
    oai = openai.OpenAI(base_url=f"{url}/v1", api_key="sk-test", max_retries=0)
    if api == "responses":
        if stream:
            events = list(oai.responses.create(model=MODEL, input=question, stream=True))
            output = events[-1].response.output
        else:
            output = oai.responses.create(model=MODEL, input=question).output
        return [p.text for o in output if o.type == "message" for p in o.content]
    messages = [{"role": "user", "content": question}]
    if stream:
        chunks = oai.chat.completions.create(model=MODEL, messages=messages, stream=True)
        return ["".join(c.choices[0].delta.content or "" for c in chunks if c.choices)]
    return [oai.chat.completions.create(model=MODEL, messages=messages).choices[0].message.content]


#: How answers come in parts: (text parts, characters per delta, bytes per write); one
#: byte per write cuts every multi-byte character of the answer (an emoji, accents).
PARTS = [
    scenario.Parts(3, 1, 1),
    scenario.Parts(2, 2, 3),
    scenario.Parts(5, 3, 2),
    scenario.Parts(1, 11, 7),
]


@pytest.mark.parametrize("parts", PARTS, ids=lambda p: f"{p.text}-{p.piece}-{p.write}")
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_answers_in_parts_reach_the_real_sdk_as_the_server_logged_them(
    tmp_path: Path, api: str, stream: bool, parts: scenario.Parts
) -> None:
    """Text cut into parts (Responses output_text parts, Anthropic text blocks), streamed in
    deltas that end inside words, escapes and arguments, written a few bytes at a time: the
    real SDK gets the parts, the arguments and the text whole, and the log holds them."""
    scn = dataclasses.replace(scenario.DEFAULT, parts=parts)
    log = tmp_path / "server.jsonl"
    with ModelServer(log, scn=scn) as server:
        calls = _scripted_calls(api, server.url, stream)
        texts = _answer_parts(api, server.url, stream)
    args = {"order_id": "ORD-5521"}
    assert [c[1:] for c in calls] == [("lookup_order", args), ("track_shipment", args)]
    answer = scn.final_answer("ORD-5521")
    assert "".join(texts) == answer
    assert len(texts) == (1 if api == "chat" else parts.text)
    _, last = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    last["body_json"] = json.loads(last["body_raw"])
    if api == "chat":
        assert answered(last) == [("assistant", ("text", answer))]
    else:
        assert answered(last) == [("assistant", ("text", t)) for t in texts]


@pytest.mark.parametrize(
    ("api", "stream", "status", "times"),
    [
        ("chat", False, 429, 1),
        ("chat", True, 500, 2),
        ("responses", False, 503, 2),
        ("responses", True, 429, 1),
        ("anthropic", False, 503, 1),
        ("anthropic", True, 429, 2),
    ],
)
def test_a_scripted_failure_is_retried_by_the_real_sdk_and_logged_as_an_attempt(
    tmp_path: Path, api: str, stream: bool, status: int, times: int
) -> None:
    """The server fails a turn's first requests with a retryable status; the SDK, retrying as
    it does by default, gets the turn's answer; the log keeps the failures as attempts, which
    are not the run's model calls."""
    scn = dataclasses.replace(scenario.DEFAULT, retries=(scenario.Retry(0, status, times),))
    log = tmp_path / "server.jsonl"
    with ModelServer(log, scn=scn) as server:
        calls = _scripted_calls(api, server.url, stream, retries=2)
    assert [name for _, name, _ in calls] == ["lookup_order", "track_shipment"]
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [(r.get("status"), r.get("failed")) for r in records] == [(status, True)] * times + [
        (None, None)
    ]
    assert {r["body_raw"] for r in records} == {records[0]["body_raw"]}, "the same request again"
    error = json.loads(records[0]["response_raw"])
    assert error["error"]["type" if api == "anthropic" else "message"]
    case = Case(tmp_path)
    assert [r["seq"] for r in case.requests()] == [times + 1]
    assert [r["seq"] for r in case.failed_attempts()] == list(range(1, times + 1))


@pytest.mark.usefixtures("quick_retries")
@pytest.mark.parametrize(
    ("api", "stream", "cut"),
    [
        (api, stream, cut)
        for api in ("chat", "responses", "anthropic")
        for stream, cut in ((False, "before"), (False, "body"), (True, "before"), (True, "body"))
    ],
)
def test_a_connection_closed_is_retried_by_the_real_sdk_and_logged_as_an_attempt(
    tmp_path: Path, api: str, stream: bool, cut: str
) -> None:
    """The server closes the connection before its answer, or halfway through the JSON it
    promised (a streamed answer: before it); the SDK retries as it does a failed request."""
    scn = dataclasses.replace(scenario.DEFAULT, retries=(scenario.Retry(0, cut=cut),))
    log = tmp_path / "server.jsonl"
    with ModelServer(log, scn=scn) as server:
        calls = _scripted_calls(api, server.url, stream, retries=2)
    assert [name for _, name, _ in calls] == ["lookup_order", "track_shipment"]
    first, answer = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert first["failed"] and first["cut"] == ("before" if stream else cut)
    assert answer["response_raw"].startswith(first["response_raw"])
    assert len(first["response_raw"]) < len(answer["response_raw"]) / 2 + 1
    assert [r["seq"] for r in Case(tmp_path).requests()] == [2]


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
def test_a_stream_cut_inside_an_event_reaches_the_agent_as_an_error(
    tmp_path: Path, api: str
) -> None:
    """A stream broken off partway (``cut="stream"``) is not retried by the SDK: it raises."""
    scn = dataclasses.replace(scenario.DEFAULT, retries=(scenario.Retry(0, cut="stream"),))
    with (
        ModelServer(tmp_path / "server.jsonl", scn=scn) as server,
        pytest.raises((httpx.HTTPError, httpx2.HTTPError, openai.APIError, anthropic.APIError)),
    ):
        _scripted_calls(api, server.url, True, retries=2)
    (logged,) = [json.loads(line) for line in (tmp_path / "server.jsonl").open(encoding="utf-8")]
    assert logged["failed"] and logged["cut"] == "stream" and logged["response_raw"]


def test_a_conversation_kept_as_text_advances_by_its_feedback_and_ends_with_final_answer(
    tmp_path: Path,
) -> None:
    """A ReAct-style agent sends tool results as ``Observation:``/``Error:`` text, not tool
    messages; the server counts those turns, and answers through a ``final_answer`` tool
    when the agent declares one (as smolagents does)."""
    tools = [
        *scenario.openai_tools(),
        {"type": "function", "function": {"name": "final_answer", "parameters": {}}},
    ]
    task = {"role": "user", "content": "New task:\n" + scenario.QUESTIONS[0]}
    error = {"role": "user", "content": "Error:\nthe carrier is down"}
    calling = {"role": "assistant", "content": "Calling tools:\n[open_ticket]"}
    observed = {"role": "user", "content": "Observation:\n{'ticket_id': 'T-5521'}"}
    with ModelServer(tmp_path / "server.jsonl") as server:
        oai = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        system = {"role": "system", "content": "Examples:\nObservation: the result"}

        def names(*messages: dict[str, str]) -> list[str]:
            answer = oai.chat.completions.create(
                model=MODEL,
                messages=[system, *messages],
                tools=tools,  # type: ignore[list-item]
            )
            return [c.function.name for c in answer.choices[0].message.tool_calls or []]

        assert names(task) == ["lookup_order", "track_shipment"]
        assert names(task, error) == ["open_ticket"]
        assert names(task, error, calling, observed) == ["final_answer"]


def test_a_react_prompt_gets_one_action_per_answer_then_the_final_answer(
    tmp_path: Path,
) -> None:
    """A prompt that asks for ReAct's ``Action Input:`` lines (no tools declared) gets the
    scripted calls as text, one per answer, each answer's result counted once."""
    system = {"role": "system", "content": "Use this format:\nAction Input: {...}\nObservation: …"}
    task = {"role": "user", "content": scenario.QUESTIONS[0]}
    with ModelServer(tmp_path / "server.jsonl") as server:
        oai = openai.OpenAI(base_url=f"{server.url}/v1", api_key="sk-test", max_retries=0)
        history: list[dict[str, str]] = []
        for _ in range(4):
            answer = oai.chat.completions.create(
                model=MODEL,
                messages=[system, task, *history],  # type: ignore[list-item]
            )
            text = answer.choices[0].message.content or ""
            # CrewAI appends each result to the answer; a tool's error repeats the format.
            history.append(
                {"role": "assistant", "content": f"{text}\nObservation: ok\nObservation: …"}
            )
    actions = [m["content"].split("\n")[1] for m in history]
    assert actions == [
        "Action: lookup_order",
        "Action: track_shipment",
        "Action: open_ticket",
        f"{scenario.REACT_FINAL} {scenario.final_answer('ORD-5521')}",
    ]


def _post(url: str, body: bytes, headers: dict[str, str]) -> None:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with contextlib.closing(urllib.request.urlopen(request, timeout=10)) as response:
        assert response.status == 200


def test_the_receiver_keeps_json_requests_one_per_line(tmp_path: Path) -> None:
    first = {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "é"}]}]}]}
    second = {"resourceSpans": []}
    with OtlpReceiver(tmp_path) as receiver:
        url = f"{receiver.url}/v1/traces"
        _post(
            url,
            gzip.compress(json.dumps(first).encode()),
            {
                "Content-Type": "application/json",
                "Content-Encoding": "gzip",
            },
        )
        _post(url, json.dumps(second, indent=2).encode(), {"Content-Type": "application/json"})
        _post(f"{receiver.url}/v1/metrics", b"\x0a\x00", {"Content-Type": "application/x-protobuf"})
    lines = (tmp_path / "traces.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [first, second]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["traces.jsonl"]


def _framed(*requests: ExportTraceServiceRequest) -> bytes:
    bodies = [r.SerializeToString() for r in requests]
    return b"".join(struct.pack(">I", len(b)) + b for b in bodies)


def _request_with(text: str) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.name = "tool"
    event = span.events.add()
    event.name = "exception"
    attribute = event.attributes.add()
    attribute.key = "exception.stacktrace"
    attribute.value.string_value = text
    return request


def test_paths_of_this_machine_are_made_relative_in_a_recorded_case(tmp_path: Path) -> None:
    here = f'File "{ROOT}/tests/conformance/scenario.py", line 78'
    untouched = _request_with('File "agent.py", line 3')
    (tmp_path / "traces.binpb").write_bytes(_framed(_request_with(here), untouched))
    scrub(tmp_path / "traces.binpb", tmp_path / "scrubbed.binpb")
    data = (tmp_path / "scrubbed.binpb").read_bytes()
    (size,) = struct.unpack(">I", data[:4])
    first = ExportTraceServiceRequest.FromString(data[4 : 4 + size])
    event = first.resource_spans[0].scope_spans[0].spans[0].events[0]
    text = event.attributes[0].value.string_value
    assert text == 'File "tests/conformance/scenario.py", line 78'
    assert data[4 + size :] == _framed(untouched)


#: The committed conformance cases.
CASES_DIR = ROOT / "tests" / "conformance" / "cases"
#: An absolute path of a machine: a home, the root's home, a temporary or work folder.
_MACHINE_PATH = re.compile(rb"(?<![\w.~])/(?:work|home|root|tmp|Users|var/folders|private)/")


def test_no_committed_case_names_a_path_of_the_machine_that_recorded_it() -> None:
    """Stack traces in a case name the agent's files relative to the repository (a case is
    read anywhere); every file of every case, binary ones too, holds no absolute path."""
    files = [f for f in CASES_DIR.rglob("*") if f.is_file()]
    assert len(files) > 1000
    named = {
        str(f.relative_to(CASES_DIR)): m[0].decode()
        for f in files
        if (m := _MACHINE_PATH.search(f.read_bytes()))
    }
    assert not named, named


def test_a_cache_reached_through_a_link_is_named_relative_to_the_repository(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "other-checkout" / ".cache"
    (elsewhere / "conformance").mkdir(parents=True)
    link = tmp_path / "checkout" / ".cache"
    link.parent.mkdir()
    link.symlink_to(elsewhere)
    monkeypatch.setattr(generate, "ROOT", link.parent)
    monkeypatch.setattr(generate, "CACHE", link)
    trace = f"at run (file://{elsewhere.resolve()}/conformance/vercel_ai/node/agent.mjs:59:9)"
    scrubbed = generate.scrub_text(trace, generate.machine_paths())
    assert scrubbed == "at run (file://.cache/conformance/vercel_ai/node/agent.mjs:59:9)"


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_the_ground_truth_reads_every_react_action_the_scenario_writes(seed: int) -> None:
    """Whatever spacing a drawn scenario gives a ReAct answer's ``Action Input`` (on the
    same line or the next, indented or not), the checks read the call the model made."""
    scn = scenario.scenario_for(seed)
    calls = scn.react_calls("ORD-1")
    for i, (call, args) in enumerate(calls):
        assert react_action(scn.react_text(i, "ORD-1")) == (call.tool, args)
    assert react_action(scn.react_text(len(calls), "ORD-1")) is None


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    api=st.sampled_from(["chat", "responses", "anthropic"]),
    at=st.floats(0, 1),
)
def test_what_streamed_before_a_cut_is_read_wherever_the_cut_falls(
    seed: int, api: str, at: float
) -> None:
    """A drawn scenario's streamed answer (text in parts, deltas cut anywhere) cut at any
    byte: the checks read a beginning of its text (a framework that keeps what streamed
    answers that), and the whole of it from the stream uncut."""
    scn = scenario.scenario_for(seed)
    route = server.ROUTES[
        {"chat": "/chat/completions", "responses": "/responses"}.get(api, "/messages")
    ]
    key = "input" if api == "responses" else "messages"
    body = {"model": "m", key: [{"role": "user", "content": scn.questions[0]}], "stream": True}
    raw = "".join(route[2](server.Turn(body, 0, scn)))
    whole = scn.final_answer(scenario.order_in(scn.questions[0]))
    assert streamed_before_cut({"response_raw": raw}) == whole
    cut = streamed_before_cut({"response_raw": raw[: int(len(raw) * at)]})
    assert whole.startswith(cut)


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, id=c.id) for c in find_cases() if c.raised and c.meta.get("content", True)],
)
def test_a_verdict_not_as_wanted_names_every_problem_of_the_run(case: Case) -> None:
    """Each committed run that ended in a cut answer: the check's verdict line names every
    problem of the kit, the cut among them, not only the first (which may be one named, not
    counted against the run, such as Semantic Kernel's text beside calls)."""
    outcome = check(case)
    lines = [p for p in outcome.problems if p.startswith("verdict ")]
    for run in outcome.runs:
        if lines:
            assert all(problem in lines[0] for problem in run.kit.problems), lines[0]


@settings(max_examples=100, deadline=None)
@given(
    kinds=st.sets(st.sampled_from(endings.KINDS)),
    raised=st.booleans(),
    final=st.booleans(),
    other=st.booleans(),
)
def test_a_run_is_recorded_with_its_ending_only_as_its_entry_says(
    tmp_path_factory: pytest.TempPathFactory,
    kinds: set[str],
    raised: bool,
    final: bool,
    other: bool,
) -> None:
    """However a run ends (it raised, stopped before its answer, answered another text), it
    is recorded with the framework's ending only where the entry names each way it ended (a
    run that raised stopped early too); a run that ended as scripted has no ending."""
    scn = scenario.DEFAULT
    order = scenario.order_in(scn.questions[0])
    log = tmp_path_factory.mktemp("ending") / "server.jsonl"
    post = {"method": "POST", "conversation": order, "final": final and not raised}
    log.write_text(json.dumps(post) + "\n", encoding="utf-8")
    said = [scenario.RAISED_LINE if raised else "another" if other else scn.final_answer(order)]
    seen = set()
    if raised:
        seen.add(endings.RAISES)
    elif not post["final"]:
        seen.add(endings.STOPS_EARLY)
    if other and not raised:
        seen.add(endings.ANSWERS_OTHERWISE)
    ending = endings.Ending(tuple(kinds), lambda scn, mode: True, "why")
    covered = kinds | ({endings.STOPS_EARLY} if endings.RAISES in kinds else set())
    if seen <= covered:
        assert generate._ended_own_way(ending, log, said, [], scn.final_answer) == bool(seen)
    else:
        with pytest.raises(generate.GenerateError, match="does not say"):
            generate._ended_own_way(ending, log, said, [], scn.final_answer)


@settings(max_examples=100, deadline=None)
@example(turns=3, at=0, cut="stream", retried=False, kinds=set(), keeps_cut=True)
@example(turns=3, at=0, cut="stream", retried=False, kinds={"stops early"}, keeps_cut=False)
@example(turns=3, at=0, cut=None, retried=False, kinds={"stops early"}, keeps_cut=True)
@given(
    turns=st.integers(2, 5),
    at=st.integers(0, 3),
    cut=st.sampled_from(["stream", "body", None]),
    retried=st.booleans(),
    kinds=st.sets(st.sampled_from(endings.KINDS)),
    keeps_cut=st.booleans(),
)
def test_a_failed_request_not_sent_again_is_recorded_only_where_the_ending_says(
    tmp_path_factory: pytest.TempPathFactory,
    turns: int,
    at: int,
    cut: str | None,
    retried: bool,
    kinds: set[str],
    keeps_cut: bool,
) -> None:
    """A request the server failed on purpose inside a run that went on to its answer: it
    was sent again, or the framework's ending says why not (its own error, or it kept what
    streamed of a cut answer and went on from it: a stream cut alone)."""
    order = scenario.order_in(scenario.DEFAULT.questions[0])
    at %= turns - 1  # (a turn before the answer)
    failed = {"failed": True, **({"cut": cut} if cut else {"status": 503})}
    posts = []
    for turn in range(turns):
        if turn == at:
            posts.append({"turn": turn, "final": False, **failed})
            if not retried:
                continue
        posts.append({"turn": turn, "final": turn == turns - 1})
    log = tmp_path_factory.mktemp("retried") / "server.jsonl"
    lines = [json.dumps({"method": "POST", "conversation": order, **p}) for p in posts]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ending = (
        endings.Ending(tuple(kinds), lambda scn, mode: True, "why", keeps_cut=keeps_cut)
        if kinds or keeps_cut
        else None
    )
    excused = ending is not None and (
        endings.RAISES in ending.kinds or (ending.keeps_cut and cut == "stream")
    )
    if retried or excused:
        assert generate.check_ground_truth(log, 1, ending) == []
    else:
        with pytest.raises(generate.GenerateError, match="did not retry"):
            generate.check_ground_truth(log, 1, ending)


CORPUS = find_cases()


@settings(max_examples=20)
@given(st.lists(st.sampled_from(CORPUS), min_size=2, max_size=4))
def test_a_case_recorded_again_in_the_same_process_is_read_again(cases: list[Case]) -> None:
    # The case's files are parsed once per process: a case written over at the same place
    # (``generate`` recording it again) must show what it holds now.
    with tempfile.TemporaryDirectory() as tmp:
        here = Case(Path(tmp) / "stack" / "mode")
        here.path.mkdir(parents=True)
        for i, source in enumerate(cases):
            for name in ("case.json", "server.jsonl"):
                data = (source.path / name).read_bytes()
                (here.path / name).write_bytes(data)
                # Each version with a time of its own, as a later write has.
                os.utime(here.path / name, ns=(i, i))
            fresh = Case(source.path)
            assert here.meta == json.loads((source.path / "case.json").read_text("utf-8"))
            assert here.posts() == fresh.posts()
            assert here.requests() == fresh.requests()
