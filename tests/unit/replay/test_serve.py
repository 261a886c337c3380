"""otel-replay serve and the httpx transports, driven by the real OpenAI and Anthropic SDKs.

Recordings: third-party traces of the order-support scenario (data/thirdparty,
with the exact requests the model server got) and the example's case file
recorded with our own capture.  Against ``otel-replay serve`` started as a
real process on 127.0.0.1, and against the in-process transport of a replay
session, an agent loop written on the SDK (tests/fixtures/sdk_agents.py) must send
the recorded requests and end with the recorded answer, in every SDK mode
(JSON, raw SSE stream, stream helpers, sync and async).  A changed prompt or
tool result gets HTTP 409 naming the step from the server, and
``ReplayDivergence`` from the transport.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from examples.order_support import agent as example

import otel_replay
from otel_replay.replay.engine import ReplayEngine
from otel_replay.replay.servable import servable
from tests.fixtures import http as _http
from tests.fixtures.data import ROOT, TESTS
from tests.fixtures.scenario import TOOLS
from tests.fixtures.sdk_agents import AGENTS, STREAM_KEYS, Sent, http_client

SRC = ROOT / "src"
DATA = TESTS / "data" / "thirdparty"
CASE_FILE = Path(example.__file__).parent / "recordings" / "wrong_order.otlp"

#: Third-party case -> the SDK modes its API is replayed in.
CASES = {
    "otel_openai_v2/chat_sync": ("sync", "async", "stream", "async_stream"),
    "openinference_openai/responses_sync": ("sync", "stream", "async_stream"),
    "anthropic_openllmetry/sync": ("sync", "async", "stream", "stream_helper", "async_stream"),
    "anthropic_openinference/stream_helper": ("stream_helper", "stream"),
}
PARAMS = [(case, mode) for case, modes in CASES.items() for mode in modes]
#: The default tier takes each case's first two modes; the slow tier takes them all.
TIERED = [
    pytest.param(case, mode, marks=pytest.mark.slow) if modes.index(mode) >= 2 else (case, mode)
    for case, modes in CASES.items()
    for mode in modes
]


def requests_of(case: str) -> list[dict[str, Any]]:
    with open(DATA / case / "server_requests.jsonl", encoding="utf-8") as f:
        return [r for r in map(json.loads, f) if r["method"] == "POST"]


def recorded_results(requests: list[dict[str, Any]]) -> dict[str, str]:
    """Tool-call id -> the result text the recorded client sent back (from the last request)."""
    body = requests[-1]["body_json"]
    out = {}
    for m in body.get("messages", body.get("input", [])):
        if m.get("role") == "tool":
            out[m["tool_call_id"]] = m["content"]
        elif m.get("type") == "function_call_output":
            out[m["call_id"]] = m["output"]
        elif isinstance(m.get("content"), list):
            for block in m["content"]:
                if block.get("type") == "tool_result":
                    out[block["tool_use_id"]] = block["content"]
    return out


def without_stream(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k not in STREAM_KEYS}


def _start(*args: str | Path) -> tuple[subprocess.Popen[str], str]:
    """``otel-replay serve ARGS --port 0`` as a real process, and its printed base URL."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_replay.cli.main", "serve", *map(str, args), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    line = proc.stdout.readline().strip()
    if not line.startswith("http://127.0.0.1:"):
        proc.kill()
        raise AssertionError(f"serve did not start: {line!r} {proc.communicate()[1]}")
    # Its log is read as it comes: a full pipe would stop the server writing to it.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    return proc, line


def _stop(procs: list[subprocess.Popen[str]]) -> None:
    """Stop servers: all told at once, then each waited for (each shuts down gracefully)."""
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def serving(*args: str | Path) -> Iterator[str]:
    """``otel-replay serve ARGS --port 0`` while the ``with`` lasts; its base URL."""
    proc, url = _start(*args)
    try:
        yield url
    finally:
        _stop([proc])


@pytest.fixture(scope="module")
def servers() -> Iterator[dict[str, str]]:
    """A server of the recording named, started for each lookup (a test gets a fresh one);
    all stopped together at the end of the module."""
    procs: list[subprocess.Popen[str]] = []

    class Lazy(dict[str, str]):
        def __missing__(self, key: str) -> str:
            path = CASE_FILE if key == "case_file" else DATA / key / "traces.otlp.jsonl"
            proc, url = _start(path)
            procs.append(proc)
            return url

    try:
        yield Lazy()
    finally:
        _stop(procs)


def base_url(url: str, path: str) -> str:
    return url + "/v1" if path != "/v1/messages" else url


# --- the server --------------------------------------------------------------------------
@pytest.mark.parametrize(("case", "mode"), TIERED)
def test_server_replays_the_recorded_conversation(
    case: str, mode: str, servers: dict[str, str]
) -> None:
    requests = requests_of(case)
    path = requests[0]["path"]
    results = recorded_results(requests)
    sent = Sent()
    answer = AGENTS[path](
        base_url(servers[case], path),
        mode,
        requests[0]["body_json"],
        lambda call_id, name, args: results[call_id],
        http_client(mode, sent),
    )
    assert [without_stream(b) for b in sent.bodies] == [
        without_stream(r["body_json"]) for r in requests
    ]
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    assert answer == run.final_output()
    assert "3 x" not in answer and "ORD-5521" in answer


@pytest.mark.parametrize("case", list(CASES))
def test_server_answers_409_naming_the_step_when_the_prompt_changes(
    case: str, servers: dict[str, str]
) -> None:
    requests = requests_of(case)
    path = requests[0]["path"]
    first = json.loads(json.dumps(requests[0]["body_json"]))
    items = first.get("messages", first.get("input"))
    items[-1]["content"] = "Cancel ORD-5521 please."
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    error = anthropic.APIStatusError if path == "/v1/messages" else openai.APIStatusError
    with pytest.raises(error) as info:
        AGENTS[path](
            base_url(servers[case], path),
            "sync",
            first,
            lambda *a: "{}",
            http_client("sync", Sent()),
        )
    assert info.value.status_code == 409
    body = info.value.response.json()["error"]
    assert body["type"] == "replay_divergence"
    assert body["step"] == run.model_steps()[0].index
    assert body["run_id"] == run.run_id
    divergence = body["divergence"]
    assert divergence["span_id"] == run.model_steps()[0].span_id
    assert "Cancel ORD-5521 please." in divergence["diff"]
    assert "check the status of my order ORD-5521" in divergence["diff"]


@pytest.mark.parametrize("case", list(CASES))
def test_server_answers_409_at_the_second_call_when_a_tool_result_changes(
    case: str, servers: dict[str, str]
) -> None:
    requests = requests_of(case)
    path = requests[0]["path"]
    results = recorded_results(requests)
    changed = {k: v.replace("processing", "shipped") for k, v in results.items()}
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    error = anthropic.APIStatusError if path == "/v1/messages" else openai.APIStatusError
    sent = Sent()
    with pytest.raises(error) as info:
        AGENTS[path](
            base_url(servers[case], path),
            "sync",
            requests[0]["body_json"],
            lambda call_id, name, args: changed[call_id],
            http_client("sync", sent),
        )
    assert info.value.status_code == 409
    assert len(sent.bodies) == 2  # the first call was served, the second refused, no retries
    body = info.value.response.json()["error"]
    assert body["step"] == run.model_steps()[1].index
    assert "+" in body["divergence"]["diff"] and "shipped" in body["divergence"]["diff"]


def test_server_serves_concurrent_conversations_each_with_its_own_cursor(
    servers: dict[str, str],
) -> None:
    case = "anthropic_openllmetry/sync"
    requests = requests_of(case)
    results = recorded_results(requests)
    answers: list[str] = []
    barrier = threading.Barrier(4)

    def call_tool(call_id: str, name: str, args: str) -> str:
        barrier.wait(timeout=30)  # every conversation is mid-run at once
        return results[call_id]

    def one() -> None:
        http = http_client("sync", Sent())
        answers.append(
            AGENTS["/v1/messages"](servers[case], "sync", requests[0]["body_json"], call_tool, http)
        )

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    assert answers == [run.final_output()] * 4


def _case_file_first(path: str) -> dict[str, Any]:
    """The example's first request, as an OpenAI Chat or Anthropic client would send it."""
    question = {"role": "user", "content": "Where is my order?"}
    if path == "/v1/messages":
        tools = [
            {"name": t["name"], "description": t["description"], "input_schema": t["parameters"]}
            for t in example.TOOLS
        ]
        return {
            "model": example.MODEL_ID,
            "max_tokens": 256,
            "system": example.SYSTEM,
            "messages": [question],
            "tools": tools,
        }
    tools = [
        {"type": "function", "function": {k: v for k, v in t.items() if k != "type"}}
        for t in example.TOOLS
    ]
    return {
        "model": example.MODEL_ID,
        "messages": [{"role": "system", "content": example.SYSTEM}, question],
        "tools": tools,
        "temperature": 0.7,
        "seed": 7,
    }


def _live_tool(call_id: str, name: str, args: str) -> str:
    fn = {"lookup_order": example.lookup_order, "cancel_order": example.cancel_order}[name]
    return json.dumps(fn(**json.loads(args)))


@pytest.mark.parametrize(
    ("path", "mode"), [("/v1/chat/completions", "sync"), ("/v1/messages", "stream")]
)
def test_server_replays_our_own_recording_to_either_sdk(
    path: str, mode: str, servers: dict[str, str]
) -> None:
    # Recorded through otel_replay.model_call with a scripted model: no provider wire format.
    sent = Sent()
    http = http_client(mode, sent)
    answer = AGENTS[path](
        base_url(servers["case_file"], path), mode, _case_file_first(path), _live_tool, http
    )
    (run,) = otel_replay.load(str(CASE_FILE))
    assert answer == run.final_output() == "Order #4421 (Widget Pro) is shipped."
    assert len(sent.bodies) == 2


# --- the in-process transport ------------------------------------------------------------
def _stubbed_tool(call_id: str, name: str, args: str) -> str:
    with otel_replay.tool_call_id(call_id):
        return str(TOOLS[name](**json.loads(args)))


@pytest.mark.parametrize(("case", "mode"), PARAMS)
def test_transport_replays_through_the_session(case: str, mode: str) -> None:
    requests = requests_of(case)
    path = requests[0]["path"]
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    sent = Sent()
    with otel_replay.replay(run) as session:
        transport = session.async_transport() if mode.startswith("async") else session.transport()
        http = http_client(mode, sent, transport)
        answer = AGENTS[path](None, mode, requests[0]["body_json"], _stubbed_tool, http)
        session.check_output(answer)
    report = session.report()
    assert report.matched, str(report)
    assert [k for _, k, _ in report.replayed] == ["model", "tool", "model", "tool", "model"]
    assert all(how in ("pinned:exact", "pinned:messages", "stub") for _, _, how in report.replayed)
    assert [without_stream(b) for b in sent.bodies] == [
        without_stream(r["body_json"]) for r in requests
    ]


@pytest.mark.parametrize("case", list(CASES))
def test_transport_raises_replay_divergence_at_the_step(case: str) -> None:
    requests = requests_of(case)
    path = requests[0]["path"]
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    sent = Sent()

    def changed_tool(call_id: str, name: str, args: str) -> str:
        return _stubbed_tool(call_id, name, args).replace("processing", "shipped")

    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(run) as session:
            http = http_client("sync", sent, session.transport())
            AGENTS[path](None, "sync", requests[0]["body_json"], changed_tool, http)
    assert info.value.index == run.model_steps()[1].index
    assert "shipped" in info.value.diff
    # The OpenAI SDK lets the divergence through; the Anthropic SDK wraps it in
    # APIConnectionError and retries twice (the session raises the divergence at the end).
    assert len(sent.bodies) == (4 if path == "/v1/messages" else 2)
    assert all(b == sent.bodies[1] for b in sent.bodies[1:])


def test_transport_serves_our_own_recording_with_stubbed_tools() -> None:
    (run,) = otel_replay.load(str(CASE_FILE))
    with otel_replay.replay(run) as session:
        http = http_client("sync", Sent(), session.transport())
        answer = AGENTS["/v1/messages"](
            None, "sync", _case_file_first("/v1/messages"), _live_tool, http
        )
        session.check_output(answer)
    assert session.report().matched, str(session.report())
    assert answer == "Order #4421 (Widget Pro) is shipped."


# --- what cannot be served is said at start ------------------------------------------------
def test_serve_names_missing_content_at_start() -> None:
    # The Anthropic SDK's own tracing records no output for create(stream=True) (README).
    path = DATA / "anthropic_sdk" / "stream" / "traces.otlp.jsonl"
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_replay.cli.main", "serve", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("http://127.0.0.1:")
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    (run,) = otel_replay.load(str(path))
    # The last call's answer: no later call sent it back (earlier ones are filled from theirs).
    last = run.model_steps()[-1]
    assert f"{last.label()}: no output messages were recorded" in err


def test_an_empty_answer_the_run_went_on_from_is_refused_not_served() -> None:
    # A recording that lost an answer (its output an empty assistant message) while the
    # run went on: served, the agent would end with an empty answer and exit 0.
    case = TESTS / "conformance" / "cases" / "crewai" / "sync"
    (run,) = otel_replay.load(str(case / "traces.binpb"))
    first, *_, last = run.model_steps()
    assert first.model is not None and last.model is not None
    first.model.output_messages = [
        {"role": "assistant", "parts": [{"type": "text", "content": ""}]}
    ]
    problems = servable(run)
    assert [(p.kind, str(p)) for p in problems] == [
        (
            "unanswered",
            f"run {run.run_id} {first.label()}: the recorded answer is empty, though the run "
            "went on after it: the answer was not recorded",
        )
    ]
    logged = [json.loads(line) for line in (case / "server.jsonl").read_text().splitlines()]
    requests = [json.loads(r["body_raw"]) for r in logged if r["method"] == "POST"]
    client = _engine_client(ReplayEngine([run]))
    with pytest.raises(openai.APIStatusError) as info:
        client.chat.completions.create(**requests[0])
    assert info.value.status_code == 500
    assert "the answer was not recorded" in str(info.value.body)
    # An empty last answer is what the model said, and is served as recorded.
    last.model.output_messages = [{"role": "assistant", "parts": []}]
    first.model.output_messages = None
    assert [p for p in servable(run) if last.label() in str(p)] == []


def test_serve_refuses_a_recording_without_content() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "otel_replay.cli.main",
            "serve",
            str(DATA / "otel_openai_v2" / "no_content" / "traces.otlp.jsonl"),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=60,
    )
    assert done.returncode == 2
    assert "inspect-only" in done.stderr
    assert "no run in" in done.stderr and done.stdout == ""


def test_on_divergence_live_forwards_to_the_upstream() -> None:
    case = "otel_openai_v2/chat_sync"
    requests = requests_of(case)
    upstream_got: list[dict[str, Any]] = []
    final = requests[-1]["response_raw"].encode()

    def answer(handler: Any) -> tuple[int, str, bytes]:
        length = int(handler.headers["Content-Length"])
        upstream_got.append(json.loads(handler.rfile.read(length)))
        return 200, "application/json", final

    first = json.loads(json.dumps(requests[0]["body_json"]))
    first["messages"][-1]["content"] = "Just say where ORD-5521 is."
    with _http.serving(answer) as upstream_url:
        path = DATA / case / "traces.otlp.jsonl"
        live = ("--on-divergence", "live", "--upstream", upstream_url + "/v1")
        with serving(path, *live) as url:
            got = AGENTS["/v1/chat/completions"](
                url + "/v1", "sync", first, lambda *a: "{}", http_client("sync", Sent())
            )
    assert [b["messages"] for b in upstream_got] == [first["messages"]]
    assert got == json.loads(final)["choices"][0]["message"]["content"]


def test_timing_spreads_the_recorded_duration_over_the_chunks() -> None:
    (run,) = otel_replay.load(str(DATA / "otel_openai_v2" / "chat_sync" / "traces.otlp.jsonl"))
    requests = requests_of("otel_openai_v2/chat_sync")
    engine = ReplayEngine([run], timing=2.0)
    body = {**requests[0]["body_json"], "stream": True}
    got = engine.handle("POST", "/v1/chat/completions", json.dumps(body).encode())
    step = run.model_steps()[0]
    assert got.status == 200 and got.delays is not None
    assert len(got.delays) == len(list(got.chunks))
    assert sum(got.delays) == pytest.approx((step.end_ns - step.start_ns) / 1e9 / 2.0)
    assert dict(got.headers)["x-otel-replay-rung"] == "exact"


# --- routing: named conversations and previous_response_id ---------------------------------


def _engine_client(engine: ReplayEngine, conversation: str | None = None) -> openai.OpenAI:
    import httpx

    from otel_replay.replay.adapters.transport import ReplayTransport

    headers = {"x-otel-replay-conversation": conversation} if conversation else {}
    return openai.OpenAI(
        api_key="test",
        base_url="http://127.0.0.1/v1",
        http_client=httpx.Client(transport=ReplayTransport(engine)),
        default_headers=headers,
        max_retries=0,
    )


def test_a_named_conversation_keeps_its_own_cursor() -> None:
    """Two identical clients: each request goes to the conversation its header names."""
    case = "otel_openai_v2/chat_sync"
    requests = requests_of(case)
    engine = ReplayEngine(otel_replay.load(str(DATA / case / "traces.otlp.jsonl")))
    a, b = _engine_client(engine, "a"), _engine_client(engine, "b")

    def send(client: openai.OpenAI, k: int) -> tuple[str, str]:
        raw = client.chat.completions.with_raw_response.create(**requests[k]["body_json"])
        return raw.headers["x-otel-replay-conversation"], raw.headers["x-otel-replay-step"]

    conv_a, first = send(a, 0)
    conv_b, _ = send(b, 0)
    assert conv_a != conv_b
    # b goes on first; unnamed, the request would continue a (the first one waiting for it).
    conv, second = send(b, 1)
    assert conv == conv_b and int(second) > int(first)
    assert send(a, 1) == (conv_a, second)
    assert send(a, 2)[0] == conv_a and send(b, 2)[0] == conv_b
    # A changed request in b's conversation is b's divergence, and a is untouched.
    changed = json.loads(json.dumps(requests[1]["body_json"]).replace("ORD-5521", "ORD-0000"))
    c = _engine_client(engine, "c")
    conv_c, _ = send(c, 0)
    with pytest.raises(openai.APIStatusError) as info:
        c.chat.completions.create(**changed)
    assert info.value.status_code == 409
    assert isinstance(info.value.body, dict)
    assert info.value.body["conversation"] == int(conv_c)


def _chained(client: openai.OpenAI, body: dict[str, Any], results: dict[str, str]) -> Iterator[Any]:
    """A Responses client that sends only the new items, chained by previous_response_id."""
    response = client.responses.create(**body)
    yield response
    while pending := [item for item in response.output if item.type == "function_call"]:
        outputs = [
            {"type": "function_call_output", "call_id": i.call_id, "output": results[i.call_id]}
            for i in pending
        ]
        response = client.responses.create(
            **{**body, "input": outputs, "previous_response_id": response.id}
        )
        yield response


def test_previous_response_id_continues_the_conversation_that_answered_it() -> None:
    case = "openinference_openai/responses_sync"
    requests = requests_of(case)
    results = recorded_results(requests)
    (run,) = otel_replay.load(str(DATA / case / "traces.otlp.jsonl"))
    engine = ReplayEngine([run])
    body = without_stream(requests[0]["body_json"])
    responses = list(_chained(_engine_client(engine), body, results))
    assert len(responses) == 3
    assert responses[-1].output_text == run.final_output()
    assert len(engine.conversations) == 1
    # Two clients at once: the recorded ids are the same in both conversations,
    # yet each continues its own.
    a = _chained(_engine_client(engine), body, results)
    b = _chained(_engine_client(engine), body, results)
    first_a, first_b = next(a), next(b)
    assert first_a.id == first_b.id
    rest_b, rest_a = list(b), list(a)
    assert rest_a[-1].output_text == rest_b[-1].output_text == run.final_output()
    assert len(engine.conversations) == 3


def test_serve_tells_its_url_once_set_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The URL is printed once uvicorn's configuration is loaded, websockets left out: a
    client that waits for it is answered at once, not after the server's start-up."""
    import click
    import uvicorn
    from click.testing import CliRunner

    from otel_replay.cli.main import cli

    events: list[object] = []
    load, echo = uvicorn.Config.load, click.echo

    def loaded(self: uvicorn.Config) -> None:
        load(self)
        events.append(("loaded", self.ws_protocol_class))

    def said(message: Any = None, *args: Any, **kwargs: Any) -> None:
        if isinstance(message, str) and message.startswith("http://"):
            events.append("url")
        echo(message, *args, **kwargs)

    monkeypatch.setattr(uvicorn.Config, "load", loaded)
    monkeypatch.setattr(uvicorn.Server, "run", lambda self, sockets=None: events.append("run"))
    monkeypatch.setattr(click, "echo", said)
    result = CliRunner().invoke(cli, ["serve", "--port", "0", str(CASE_FILE)])
    assert result.exit_code == 0, result.output
    assert events == [("loaded", None), "url", "run"]
