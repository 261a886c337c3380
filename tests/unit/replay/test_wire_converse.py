"""Bedrock Converse served: what botocore decodes is the recorded reply; a Converse
request reads as the Chat request that says the same; errors reach boto3 as ClientError.

The classes: a reply of any number of text parts and tool calls, interleaved, with
text of any characters (non-ASCII, control characters) and arguments recorded in any
spelling (key order, spacing); JSON answer and event stream alike, decoded by
botocore's own parser (the event stream by its frame decoder).  Conversations of user
text, assistant text with tool calls and tool results, said in Converse and in Chat.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.awsrequest
import botocore.exceptions
import pytest
import urllib3.exceptions
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import event_stream
from otel_replay import wire as W
from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.engine import ReplayEngine
from otel_replay.same_message import conversation_keys
from otel_replay.wire import bedrock_converse, openai_chat
from otel_replay.wire.base import Spelled
from tests.conformance import scenario
from tests.conformance.checks import check, find_cases
from tests.conformance.test_cross_vendor_cases import client_loop  # noqa: F401 (a fixture)
from tests.fixtures.wire_reply import ARGS, TEXT, reply_of

MODEL_ID = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


@st.composite
def _spelling(draw: st.DrawFn, value: dict[str, Any]) -> str:
    """``value`` as a model may write it: keys in any order, any spacing, escaped or not."""
    keys = draw(st.permutations(list(value)))
    space = draw(st.sampled_from(["", " ", "\n  "]))
    ascii_ = draw(st.booleans())
    items = [f"{json.dumps(k)}:{space}{json.dumps(value[k], ensure_ascii=ascii_)}" for k in keys]
    return "{" + f",{space}".join(items) + "}"


@st.composite
def _reply(draw: st.DrawFn) -> tuple[Any, list[tuple[str, Any]]]:
    """A reply, and the blocks a client must read from it (text, or a tool use's input
    with the recorded arguments text)."""
    parts: list[dict[str, Any]] = []
    texts: list[str] = []
    for i in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            args = draw(ARGS)
            parts.append(
                {"type": "tool_call", "id": f"tooluse_{i}", "name": f"t{i}", "arguments": args}
            )
            texts.append(draw(_spelling(args)))
        else:
            parts.append({"type": "text", "content": draw(TEXT)})
    reply = reply_of(parts, "r1", "m")
    reply.spelled = Spelled(texts, [])
    expected = [
        ("toolUse", (p["id"], p["name"], p["arguments"]))
        if p["type"] == "tool_call"
        else ("text", p["content"])
        for p in parts
    ]
    return reply, expected


class _Raw:
    """The body botocore reads a response from (``stream()``, as urllib3's)."""

    def __init__(self, chunks: list[bytes]) -> None:
        self.chunks = chunks

    def stream(self, *args: Any, **kwargs: Any) -> Iterator[bytes]:
        yield from self.chunks

    def close(self) -> None:
        pass


def _client(status: int, headers: dict[str, str], chunks: list[bytes]) -> Any:
    """A real boto3 client every request of which gets this answer (no network)."""
    client = boto3.client(
        "bedrock-runtime",
        endpoint_url="http://127.0.0.1:9",
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )

    def answer(request: Any, **_: Any) -> botocore.awsrequest.AWSResponse:
        return botocore.awsrequest.AWSResponse(request.url, status, headers, _Raw(chunks))

    client.meta.events.register("before-send.bedrock-runtime.*", answer)
    return client


def _blocks(content: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for block in content:
        if "toolUse" in block:
            use = block["toolUse"]
            out.append(("toolUse", (use["toolUseId"], use["name"], use["input"])))
        else:
            out.append(("text", block["text"]))
    return out


def _folded(events: Any) -> tuple[list[tuple[str, Any]], dict[int, str], str]:
    """The stream's blocks, each tool use's input text as sent, and its stop reason."""
    blocks: dict[int, list[Any]] = {}
    inputs: dict[int, str] = {}
    stop = ""
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = start["start"]["toolUse"]
            blocks[start["contentBlockIndex"]] = ["toolUse", use["toolUseId"], use["name"]]
        elif "contentBlockDelta" in event:
            at, delta = (
                event["contentBlockDelta"]["contentBlockIndex"],
                event["contentBlockDelta"]["delta"],
            )
            if "text" in delta:
                blocks.setdefault(at, ["text", ""])[1] += delta["text"]
            else:
                inputs[at] = inputs.get(at, "") + delta["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    out: list[tuple[str, Any]] = []
    for at in sorted(blocks):
        kind, *rest = blocks[at]
        out.append(
            ("text", rest[0]) if kind == "text" else ("toolUse", (*rest, json.loads(inputs[at])))
        )
    return out, inputs, stop


_MESSAGES = [{"role": "user", "content": [{"text": "hi"}]}]


@settings(max_examples=60, deadline=None)
@given(drawn=_reply())
def test_boto3_reads_the_recorded_reply_json_and_streamed(drawn: tuple[Any, Any]) -> None:
    reply, expected = drawn
    request = W.parse(bedrock_converse, {"messages": _MESSAGES}, f"/model/{MODEL_ID}/converse")
    body = json.dumps(bedrock_converse.render_json(reply, request)).encode()
    got = _client(200, {"content-type": "application/json"}, [body]).converse(
        modelId=MODEL_ID, messages=_MESSAGES
    )
    assert _blocks(got["output"]["message"]["content"]) == expected
    calls = any(kind == "toolUse" for kind, _ in expected)
    assert got["stopReason"] == ("tool_use" if calls else "end_turn")
    assert got["usage"] == {"inputTokens": 3, "outputTokens": 5, "totalTokens": 8}

    streamed = W.parse(
        bedrock_converse, {"messages": _MESSAGES}, f"/p/model/{MODEL_ID}/converse-stream"
    )
    assert streamed.stream and streamed.model == MODEL_ID
    frames = list(bedrock_converse.render_sse(reply, streamed))
    # Each frame is one message botocore's own decoder reads whole, and ours reads back.
    decoder = EventStreamBuffer()
    decoder.add_data(b"".join(frames))
    assert len(list(decoder)) == len(frames) == len(event_stream.frames(b"".join(frames)))
    headers = {"content-type": event_stream.CONTENT_TYPE}
    events = _client(200, headers, frames).converse_stream(modelId=MODEL_ID, messages=_MESSAGES)
    blocks, inputs, stop = _folded(events["stream"])
    assert blocks == expected
    assert stop == ("tool_use" if calls else "end_turn")
    # The arguments as the model spelled them, byte for byte (the recorded text).
    assert list(inputs.values()) == reply.spelled.texts


@st.composite
def _conversation(draw: st.DrawFn) -> tuple[list[Any], list[Any]]:
    """One conversation said in Converse and in Chat: user text, answers of text and
    tool calls, each call's result."""
    converse: list[Any] = []
    chat: list[Any] = [{"role": "system", "content": "be brief"}]
    for turn in range(draw(st.integers(1, 3))):
        question = draw(TEXT.filter(str.strip))
        converse.append({"role": "user", "content": [{"text": question}]})
        chat.append({"role": "user", "content": question})
        text = draw(TEXT.filter(str.strip))
        calls = [(f"c{turn}_{i}", f"tool_{i}", draw(ARGS)) for i in range(draw(st.integers(0, 3)))]
        converse.append(
            {
                "role": "assistant",
                "content": [{"text": text}]
                + [{"toolUse": {"toolUseId": c, "name": n, "input": a}} for c, n, a in calls],
            }
        )
        answer: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            answer["tool_calls"] = [
                {"id": c, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
                for c, n, a in calls
            ]
        chat.append(answer)
        results = [(c, draw(TEXT)) for c, _, _ in calls]
        if results:
            converse.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "toolResult": {
                                "toolUseId": c,
                                "content": [{"text": r}],
                                "status": "success",
                            }
                        }
                        for c, r in results
                    ],
                }
            )
            chat += [{"role": "tool", "tool_call_id": c, "content": r} for c, r in results]
    return converse, chat


_SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}}


@settings(max_examples=60, deadline=None)
@given(drawn=_conversation(), temperature=st.floats(0, 1), max_tokens=st.integers(1, 4096))
def test_a_converse_request_reads_as_the_chat_request_saying_the_same(
    drawn: tuple[list[Any], list[Any]], temperature: float, max_tokens: int
) -> None:
    converse, chat = drawn
    body = {
        "messages": converse,
        "system": [{"text": "be brief"}],
        "toolConfig": {
            "tools": [
                {"toolSpec": {"name": "f", "description": "d", "inputSchema": {"json": _SCHEMA}}}
            ]
        },
        "inferenceConfig": {"maxTokens": max_tokens, "temperature": temperature},
    }
    got = W.parse(bedrock_converse, body, f"/model/{MODEL_ID.replace(':', '%3A')}/converse")
    want = openai_chat.parse(
        {
            "model": MODEL_ID,
            "messages": chat,
            "tools": [
                {
                    "type": "function",
                    "function": {"name": "f", "description": "d", "parameters": _SCHEMA},
                }
            ],
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
    )
    assert got.model == MODEL_ID and not got.stream
    assert got.system == [{"type": "text", "content": "be brief"}]
    assert conversation_keys(got.messages) == conversation_keys(want.messages[1:])
    assert got.tools == want.tools
    assert got.params == want.params


def _run(case_id: str) -> Any:
    (case,) = [c for c in find_cases() if c.id == case_id]
    (run,) = check(case).runs
    return run


def _boto3(url: str) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
    )


@pytest.mark.parametrize("operation", ["converse", "converse_stream"])
def test_a_divergence_reaches_boto3_as_a_client_error_carrying_its_text(operation: str) -> None:
    engine = ReplayEngine([_run("openai_openinference/sync")])
    server = BackgroundServer(engine)
    url = server.start()
    try:
        with pytest.raises(botocore.exceptions.ClientError) as raised:
            getattr(_boto3(url), operation)(
                modelId=MODEL_ID, messages=[{"role": "user", "content": [{"text": "not asked"}]}]
            )
    finally:
        server.stop()
    error = raised.value.response
    assert error["ResponseMetadata"]["HTTPStatusCode"] == 409
    assert error["Error"]["Code"] == "ConflictException"
    assert "replay diverged at step 0" in error["Error"]["Message"]
    assert "not asked" in error["Error"]["Message"]


def test_a_malformed_request_is_a_validation_exception() -> None:
    answer = ReplayEngine([_run("openai_openinference/sync")]).handle(
        "POST", f"/model/{MODEL_ID}/converse", b'{"messages": 5}'
    )
    assert answer.status == 400
    assert dict(answer.headers)["x-amzn-errortype"].startswith("ValidationException:")
    body = json.loads(b"".join(answer.chunks))
    assert body["message"].startswith("bedrock.converse request: messages: expected an array")


def test_a_replay_session_serves_a_boto3_client_at_its_base_url(client_loop: Any) -> None:  # noqa: F811
    run = _run("anthropic_openinference/anthropic")
    question = scenario.QUESTIONS[0]
    # The loop runs its tools itself (no replayed tool): the model's answers are asked for.
    with otel_replay.replay(run, require_complete=False) as session:
        args = argparse.Namespace(base_url=session.base_url, api="converse")
        answer = client_loop.ask(args, question, False)
    assert answer == scenario.final_answer(scenario.order_in(question))
    assert session.model.cursor == len(session.model.steps)  # every answer served
    assert session.divergence is None


@settings(max_examples=30, deadline=None)
@given(drawn=_reply())
def test_a_stream_cut_partway_keeps_the_events_up_to_its_last_delta(
    drawn: tuple[Any, Any],
) -> None:
    reply, _ = drawn
    request = W.parse(
        bedrock_converse, {"messages": _MESSAGES}, f"/model/{MODEL_ID}/converse-stream"
    )
    frames = list(bedrock_converse.render_sse(reply, request))
    kinds = [event_stream.frames(f)[0].header(":event-type") for f in frames]
    last = max(i for i, kind in enumerate(kinds) if kind == "contentBlockDelta")
    assert W.stream_begun(frames) == frames[: last + 1]


#: A real run of Strands on Bedrock that ended at a ConverseStream cut partway (the
#: server broke its chunked body off; botocore raised, and Strands with it).
CUT_CASE = "strands/bedrock_stream@seed-14"


def test_a_recorded_cut_stream_reaches_boto3_as_the_error_it_raised() -> None:
    """botocore reads a body that stops short of its promised length as a whole one: the
    cut is sent as Bedrock's was, a chunked body broken off, and the client raises."""
    (case,) = [c for c in find_cases() if c.id == CUT_CASE]
    requests = [r for rs in case.conversations().values() for r in rs]
    last = case.cut(next(iter(case.conversations())))
    assert last is not None and last.get("cut") == "stream", last
    server = BackgroundServer(ReplayEngine(check(case).runs))
    url = server.start()
    try:
        client = _boto3(url)
        for r in [*requests, last]:
            body = json.loads(r["body_raw"])
            stream = client.converse_stream(modelId=MODEL_ID, **body)["stream"]
            if r is not last:
                assert [e for e in stream if "messageStop" in e], r["seq"]
                continue
            # (botocore lets urllib3's error of the broken body through as it is)
            with pytest.raises(urllib3.exceptions.ProtocolError):
                list(stream)
    finally:
        server.stop()
