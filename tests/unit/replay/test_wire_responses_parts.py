"""A served OpenAI Responses answer keeps the recorded message's text parts, one
``output_text`` part per recorded text part, as the real OpenAI SDK reads them, JSON and
stream alike.

The class: a reply of any number of text parts, tool calls and reasoning, interleaved.  A
Responses message may come in several ``output_text`` parts; agents send the output items
back as they got them, so parts merged into one are a request of other bytes on the next
turn (``tests/data/scenario_cases/openai_responses_text_parts``, the conformance scenario
``seed-3747`` recorded with the real ``openai_openinference`` stack on the Responses API, is
one: its replay stopped at the second model call).
"""

from __future__ import annotations

import json
from typing import Any

import openai
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.wire import openai_responses
from otel_replay.wire.base import Reply, parse_body
from tests.fixtures.data import DATA
from tests.fixtures.wire_reply import answering, reply_of

CASE = DATA / "scenario_cases" / "openai_responses_text_parts"
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)


@st.composite
def _parts(draw: st.DrawFn) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["text", "text", "text", "tool_call", "reasoning"]))
        if kind == "tool_call":
            args = draw(st.dictionaries(st.sampled_from("abc"), _TEXT, max_size=2))
            out.append({"type": "tool_call", "id": f"call_{i}", "name": f"t{i}", "arguments": args})
        else:
            out.append({"type": kind, "content": draw(_TEXT)})
    return out


def _reply(parts: list[dict[str, Any]]) -> Reply:
    return reply_of(parts, "resp_1", "gpt-x")


def _client(body: bytes, content_type: str) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="k", base_url="http://127.0.0.1:9/v1", http_client=answering(body, content_type)
    )


def _texts(output: list[Any]) -> list[list[str]]:
    """The text parts of each message item, in order."""
    return [[p.text for p in item.content] for item in output if item.type == "message"]


def _runs(parts: list[dict[str, Any]]) -> list[list[str]]:
    """The recorded text parts, a run of them (no part of another kind between) per message."""
    runs: list[list[str]] = []
    previous = None
    for p in parts:
        if p["type"] == "text":
            if previous != "text":
                runs.append([])
            runs[-1].append(p["content"])
        previous = p["type"]
    return runs


_REQUEST = {"model": "gpt-x", "input": "hi"}


def _served(reply: Reply) -> tuple[list[list[str]], list[list[str]]]:
    """The text parts the SDK reads from the JSON answer, and from the stream."""
    body = json.dumps(openai_responses.render_json(reply, parse_body(_REQUEST))).encode()
    whole = _client(body, "application/json").responses.create(**_REQUEST)  # type: ignore[call-overload]
    sse = b"".join(openai_responses.render_sse(reply, parse_body({**_REQUEST, "stream": True})))
    events = list(_client(sse, "text/event-stream").responses.create(**_REQUEST, stream=True))  # type: ignore[call-overload]
    return _texts(whole.output), _texts(events[-1].response.output)


@settings(max_examples=60, deadline=None)
@given(parts=_parts())
def test_every_recorded_text_part_is_an_output_text_part_of_its_own(
    parts: list[dict[str, Any]],
) -> None:
    whole, streamed = _served(_reply(parts))
    assert whole == streamed == _runs(parts)


def test_the_parts_a_real_stack_was_sent_are_served_as_they_came() -> None:
    """Each model step of the recorded case is served with the message parts the server sent."""
    (run,) = otel_replay.load(CASE / "traces.binpb")
    lines = (CASE / "server.jsonl").read_text(encoding="utf-8").splitlines()
    sent = [json.loads(json.loads(line)["response_raw"])["output"] for line in lines]
    steps = run.model_steps()
    assert len(steps) == len(sent) and any(len(t) > 1 for o in sent for t in _raw_texts(o))
    for step, output in zip(steps, sent, strict=True):
        assert step.model is not None
        (message,) = step.model.output_messages or []
        whole, streamed = _served(_reply(message["parts"]))
        assert whole == streamed == _raw_texts(output)


def _raw_texts(output: list[dict[str, Any]]) -> list[list[str]]:
    return [[p["text"] for p in i["content"]] for i in output if i["type"] == "message"]
