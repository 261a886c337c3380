"""Served answers carry the tool-call arguments as the model spelled them.

A model server on 127.0.0.1 writes each call's arguments in a spelling of its
own, drawn by hypothesis: key order, spacing, indentation, escapes (``\\u00e9``
or ``é``, ``\\/``), whitespace around; with its own call ids, one to three calls
in its own order.  An agent loop on the real SDK (OpenAI Chat Completions and
Responses, Anthropic Messages; JSON and stream) runs against it and is
recorded, by otel-replay's ``RecordingTransport`` or by OpenInference's OpenAI
instrumentation; the trace is then served back to the same loop through the
SDK (the replay engine, in the recorded mode and in the other one).  The client
must read the very argument strings (Anthropic: the same object, keys in the
same order, and in a stream the same ``partial_json`` text), ids and order of
calls it read from the model, and its next request, which carries them back,
must be served too.  Where the trace holds no text of the arguments, the
answer is re-spelled and the replay says so, once per step; where its only text
of them (no raw response) is spelled as Python's ``json.dumps`` writes their
value, which an instrumentation that dumps the value it parsed writes too, it
is served and the replay says it may be re-spelled.
"""

from __future__ import annotations

import contextlib
import json
import random
import tempfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openinference.instrumentation.openai import OpenAIInstrumentor

import otel_replay
from otel_replay import messages as M
from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.engine import ReplayEngine
from tests.fixtures import http as _http
from tests.fixtures.recording import instrumented, recording
from tests.fixtures.sdk_agents import AGENTS

CHAT, RESPONSES, MESSAGES = "/v1/chat/completions", "/v1/responses", "/v1/messages"
MODEL = {CHAT: "gpt-4o-mini", RESPONSES: "gpt-4o-mini", MESSAGES: "claude-3-5-haiku-latest"}
NAMES = ("lookup_order", "track_shipment", "open_ticket")
FINAL = "C'est fait : café prêt ✓"


# --- what the model says, and how it spells it ------------------------------------------------
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(st.characters(exclude_categories=["Cs"]), max_size=8)
)
#: Keys without Latin letters: none spells a name capture takes for a secret's (``HMAC``,
#: ``pwd``), whose value it would hide (what redaction does is tested on its own).
_keys = st.text(
    st.characters(exclude_categories=["Cs", "Lu", "Ll"]) | st.sampled_from("éüßñçØ"),
    min_size=1,
    max_size=6,
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
#: A tool's arguments: an object, its keys in the order drawn.
arguments = st.dictionaries(_keys, _values, max_size=4)


@st.composite
def spelled(draw: st.DrawFn, value: dict[str, Any]) -> str:
    """``value`` as some model would write it."""
    separators = draw(st.sampled_from([(",", ":"), (", ", ": "), (" ,", " :"), (",", ": ")]))
    indent = draw(st.sampled_from([None, None, 1, 2, "\t"]))
    text = json.dumps(value, separators=separators, indent=indent, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):
        text = text.replace("/", "\\/")  # "/" only occurs inside strings
    if draw(st.booleans()):
        text = draw(st.sampled_from([" ", "\n", " \n "])) + text + draw(st.sampled_from(["", " "]))
    return text


@st.composite
def answers(draw: st.DrawFn, api: str) -> list[tuple[str, str, str]]:
    """One to three calls: ``(id, name, arguments as spelled)``."""
    prefix = "toolu_" if api == MESSAGES else "call_"
    ids = draw(
        st.lists(st.text("abcdefXYZ0123456789", min_size=4, max_size=10), min_size=1, max_size=3)
    )
    out = []
    for n, call_id in enumerate(ids):
        value = draw(arguments)
        out.append((f"{prefix}{n}{call_id}", draw(st.sampled_from(NAMES)), draw(spelled(value))))
    return out


# --- the model server -------------------------------------------------------------------------
class Model:
    """Answers the first request of a conversation with ``calls``, the next with text."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.cuts = random.Random(0)

    def __call__(self, handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        path = handler.path.split("?")[0]
        answered = "tool_result" in json.dumps(body) or '"role": "tool"' in json.dumps(body)
        answered = answered or "function_call_output" in json.dumps(body)
        calls = [] if answered else self.calls
        stream = body.get("stream") is True
        events = {CHAT: _chat, RESPONSES: _responses, MESSAGES: _messages}[path](
            calls, stream, self._pieces
        )
        if stream:
            return 200, "text/event-stream", b"".join(e.encode() for e in events)
        return 200, "application/json", events[0].encode()

    def _pieces(self, text: str) -> list[str]:
        """``text`` cut as a model's stream cuts it (anywhere, escapes too)."""
        cuts = sorted(self.cuts.sample(range(1, len(text)), min(3, max(0, len(text) - 1))))
        return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True)]


def _sse(data: dict[str, Any] | str, event: str | None = None) -> str:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return (f"event: {event}\n" if event else "") + f"data: {text}\n\n"


def _chat(calls: list[tuple[str, str, str]], stream: bool, pieces: Any) -> list[str]:
    head = {"id": "chatcmpl-1", "created": 1, "model": MODEL[CHAT]}
    usage = {"prompt_tokens": 5, "completion_tokens": 5, "total_tokens": 10}
    finish = "tool_calls" if calls else "stop"
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": None if calls else FINAL}
        if calls:
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in calls
            ]
        choice = {"index": 0, "message": message, "finish_reason": finish}
        body = {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        return [json.dumps(body, ensure_ascii=False)]

    def chunk(delta: dict[str, Any], reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": reason}
        return _sse({**head, "object": "chat.completion.chunk", "choices": [choice]})

    out = [chunk({"role": "assistant", "content": None if calls else FINAL})]
    for k, (i, n, a) in enumerate(calls):
        fn = {"name": n, "arguments": ""}
        out.append(
            chunk({"tool_calls": [{"index": k, "id": i, "type": "function", "function": fn}]})
        )
        for piece in pieces(a):
            out.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": piece}}]}))
    out.append(chunk({}, finish))
    last = {**head, "object": "chat.completion.chunk", "choices": [], "usage": usage}
    return [*out, _sse(last), _sse("[DONE]")]


def _responses(calls: list[tuple[str, str, str]], stream: bool, pieces: Any) -> list[str]:
    items: list[dict[str, Any]] = [
        {
            "type": "function_call",
            "id": f"fc_{k}",
            "call_id": i,
            "name": n,
            "arguments": a,
            "status": "completed",
        }
        for k, (i, n, a) in enumerate(calls)
    ]
    if not calls:
        text = {"type": "output_text", "text": FINAL, "annotations": []}
        items = [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [text],
            }
        ]

    def response(output: list[dict[str, Any]], status: str) -> dict[str, Any]:
        usage = {
            "input_tokens": 5,
            "output_tokens": 5,
            "total_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        return {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "status": status,
            "model": MODEL[RESPONSES],
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": usage if status == "completed" else None,
        }

    if not stream:
        return [json.dumps(response(items, "completed"), ensure_ascii=False)]
    seq = iter(range(1000))

    def event(kind: str, **fields: Any) -> str:
        return _sse({"type": kind, "sequence_number": next(seq), **fields}, kind)

    out = [event("response.created", response=response([], "in_progress"))]
    for k, item in enumerate(items):
        if item["type"] == "function_call":
            out.append(
                event(
                    "response.output_item.added",
                    output_index=k,
                    item={**item, "arguments": "", "status": "in_progress"},
                )
            )
            for piece in pieces(item["arguments"]):
                out.append(
                    event(
                        "response.function_call_arguments.delta",
                        item_id=item["id"],
                        output_index=k,
                        delta=piece,
                    )
                )
            out.append(
                event(
                    "response.function_call_arguments.done",
                    item_id=item["id"],
                    output_index=k,
                    arguments=item["arguments"],
                )
            )
        else:
            out.append(
                event(
                    "response.output_item.added",
                    output_index=k,
                    item={**item, "status": "in_progress", "content": []},
                )
            )
            out.append(
                event(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=k,
                    content_index=0,
                    delta=FINAL,
                    logprobs=[],
                )
            )
        out.append(event("response.output_item.done", output_index=k, item=item))
    return [*out, event("response.completed", response=response(items, "completed"))]


def _messages(calls: list[tuple[str, str, str]], stream: bool, pieces: Any) -> list[str]:
    stop = "tool_use" if calls else "end_turn"
    usage = {"input_tokens": 5, "output_tokens": 5}
    if not stream:
        # The body spells each call's input as the model wrote it.
        blocks = [
            f'{{"type":"tool_use","id":{json.dumps(i)},"name":{json.dumps(n)},"input":{a}}}'
            for i, n, a in calls
        ] or [json.dumps({"type": "text", "text": FINAL}, ensure_ascii=False)]
        head = {"id": "msg_1", "type": "message", "role": "assistant", "model": MODEL[MESSAGES]}
        tail = {"stop_reason": stop, "stop_sequence": None, "usage": usage}
        return [
            json.dumps(head)[:-1] + ',"content":[' + ",".join(blocks) + "]," + json.dumps(tail)[1:]
        ]

    def event(kind: str, **fields: Any) -> str:
        return _sse({"type": kind, **fields}, kind)

    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL[MESSAGES],
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    out = [event("message_start", message=message)]
    for k, (i, n, a) in enumerate(calls):
        block = {"type": "tool_use", "id": i, "name": n, "input": {}}
        out.append(event("content_block_start", index=k, content_block=block))
        for piece in pieces(a):
            out.append(
                event(
                    "content_block_delta",
                    index=k,
                    delta={"type": "input_json_delta", "partial_json": piece},
                )
            )
        out.append(event("content_block_stop", index=k))
    if not calls:
        out.append(
            event("content_block_start", index=0, content_block={"type": "text", "text": ""})
        )
        out.append(
            event("content_block_delta", index=0, delta={"type": "text_delta", "text": FINAL})
        )
        out.append(event("content_block_stop", index=0))
    out.append(
        event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": 5},
        )
    )
    return [*out, event("message_stop")]


# --- the agent, recorded and replayed ----------------------------------------------------------
TOOL = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}},
}


def first_request(api: str) -> dict[str, Any]:
    question = "Où en est ma commande ?"
    if api == CHAT:
        tools = [{"type": "function", "function": {"name": n, "parameters": TOOL}} for n in NAMES]
        return {
            "model": MODEL[api],
            "messages": [{"role": "user", "content": question}],
            "tools": tools,
        }
    if api == RESPONSES:
        tools = [{"type": "function", "name": n, "parameters": TOOL} for n in NAMES]
        return {
            "model": MODEL[api],
            "input": [{"role": "user", "content": question}],
            "tools": tools,
        }
    tools = [{"name": n, "input_schema": TOOL} for n in NAMES]
    return {
        "model": MODEL[api],
        "max_tokens": 100,
        "messages": [{"role": "user", "content": question}],
        "tools": tools,
    }


Received = list[tuple[str, str, str]]


def run_agent(api: str, mode: str, base_url: str | None, http: Any) -> Received:
    """The agent's calls as its client read them: ``(id, name, arguments)``."""
    got: Received = []

    def call_tool(call_id: str, name: str, args: str) -> str:
        got.append((call_id, name, args))
        return f"ok {call_id}"

    assert AGENTS[api](base_url, mode, first_request(api), call_tool, http) == FINAL
    return got


def expected(api: str, calls: Received) -> Received:
    """What the client reads of ``calls`` (the Anthropic SDK: the object, as the test's
    agent writes it)."""
    if api != MESSAGES:
        return calls
    return [(i, n, json.dumps(json.loads(a), separators=(",", ":"))) for i, n, a in calls]


def record(api: str, mode: str, url: str, path: Path, by: str) -> Received:
    # Plain HTTP to 127.0.0.1: the clients load no certificates (20 ms each, per example).
    if by == "capture":
        with recording(path), otel_replay.agent_run("spelling", input="?"):
            transport = otel_replay.RecordingTransport(httpx2.HTTPTransport(verify=False))
            return run_agent(api, mode, _base(api, url), httpx2.Client(transport=transport))
    # Its spans alone, as a stack exports them: the reader makes the GenAI messages.
    with instrumented(path, OpenAIInstrumentor(), ours=False):
        return run_agent(api, mode, _base(api, url), httpx2.Client(verify=False))


def _base(api: str, url: str) -> str:
    return url if api == MESSAGES else f"{url}/v1"


def served(path: Path, api: str, mode: str) -> tuple[Received, list[str]]:
    """The calls the agent reads when the trace is served to it, and the engine's log."""
    log: list[str] = []
    engine = ReplayEngine(otel_replay.load(path), log=log.append)
    http = httpx2.Client(transport=ReplayTransport(engine))
    return run_agent(api, mode, _base(api, "http://replay.invalid"), http), log


@contextlib.contextmanager
def model_server() -> Iterator[tuple[str, Model]]:
    model = Model()
    with _http.serving(model) as url:
        yield url, model


OTHER = {"sync": "stream", "stream": "sync"}
CASES = [
    (api, mode, by)
    for api in (CHAT, RESPONSES, MESSAGES)
    for mode in ("sync", "stream")
    for by in ("capture", "openinference")
    if not (api == MESSAGES and by == "openinference")  # an OpenAI instrumentation
]


def _as_python_dumps(text: str) -> bool:
    """Whether ``text`` is what Python's ``json.dumps`` writes for its value by default, and
    not compact JSON (an instrumentation that dumps a parsed value writes that)."""
    value = json.loads(text)
    compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return text != compact and text in (json.dumps(value), json.dumps(value, ensure_ascii=False))


def check_cases(api: str, mode: str, by: str, examples: int) -> None:
    """Draw ``examples`` answers, record each, and serve it back in both modes."""
    with model_server() as (url, model):

        @settings(
            max_examples=examples,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
            database=None,
        )
        @given(answers(api))
        def check(calls: list[tuple[str, str, str]]) -> None:
            model.calls = calls
            with tempfile.TemporaryDirectory() as tmp:
                path = Path(tmp) / "runs.otlp"
                live = record(api, mode, url, path, by)
                assert live == expected(api, calls)  # the SDK read what the model wrote
                # The recorded answer keeps the model's key order (it reads as it was sent).
                steps = [s for r in otel_replay.load(path) for s in r.model_steps()]
                step = min(steps, key=lambda s: s.start_ns)
                assert step.model is not None and step.model.output_messages
                kept = [M.tool_calls(step.model.output_messages)]
                assert [json.dumps(c.get("arguments")) for c in kept[0]] == [
                    json.dumps(json.loads(a)) for _, _, a in calls
                ]
                for serve_mode in (mode, OTHER[mode]):
                    got, log = served(path, api, serve_mode)
                    assert got == live, (serve_mode, log)
                    respelled = [line for line in log if "served as compact JSON" in line]
                    # A text outside a raw response spelled as Python's json.dumps writes
                    # its value may be the instrumentation's dump: served, and said so.
                    doubtful = [line for line in log if "json.dumps writes" in line]
                    dumped = by != "capture" and any(_as_python_dumps(a) for _, _, a in calls)
                    assert len(doubtful) == (1 if dumped else 0), log
                    if api == MESSAGES and mode == "sync" and serve_mode == "stream":
                        # The recorded body holds each input as an object: its text in a
                        # stream is re-spelled, and the replay says so, once.
                        assert len(respelled) == 1, log
                    else:
                        assert not respelled, log

        check()


@pytest.mark.parametrize(("api", "mode", "by"), CASES)
def test_the_client_reads_the_arguments_as_the_model_spelled_them(
    api: str, mode: str, by: str
) -> None:
    check_cases(api, mode, by, examples=3)


@pytest.mark.slow
@pytest.mark.parametrize(("api", "mode", "by"), CASES)
def test_the_client_reads_the_arguments_as_the_model_spelled_them_many(
    api: str, mode: str, by: str
) -> None:
    check_cases(api, mode, by, examples=40)


def test_a_session_says_once_per_step_that_it_re_spelled_arguments(tmp_path: Path) -> None:
    """An Anthropic answer recorded as JSON holds each input as an object; served to a
    stream (``partial_json`` is text), it is re-spelled and the session's report says so."""
    calls = [("toolu_1", "lookup_order", '{"b": 1, "a": "é"}'), ("toolu_2", "open_ticket", "{}")]
    path = tmp_path / "runs.otlp"
    with model_server() as (url, model):
        model.calls = calls
        live = record(MESSAGES, "sync", url, path, "capture")
    # The agent's tools are its own functions, not replayed: only its model calls are.
    with otel_replay.replay(path, require_complete=False) as session:
        http = httpx2.Client(transport=session.transport())
        assert run_agent(MESSAGES, "stream", "http://replay.invalid", http) == live
    notes = [n for n in session.report().notes if "served as compact JSON" in n]
    assert len(notes) == 1 and "toolu_1, toolu_2" in notes[0], session.report().notes
    assert session.divergence is None
