"""LangChain content blocks read as langchain-openai sent them, and a tool called twice in a turn.

The cases ``cases/langgraph*/sync@seed-125`` were recorded by running LangGraph's
agent (LangChain 1.x and 0.3, ``ChatOpenAI``) with OpenInference and OpenLLMetry
tracing on the drawn scenario ``seed-125``: ``lookup_order`` returns an
Anthropic-style image block (base64 data), which the traces record as LangChain
holds it and which ``ChatOpenAI`` sent as an ``image_url`` data URL; it is called
twice in one turn, in parallel, with other arguments (the second call returns an
MCP image block); and ``open_ticket`` is called again in a later turn.
OpenInference 0.1 records a tool's arguments as Python ``str()`` of the dict,
OpenInference on LangChain 1.x records a one-argument tool's input as the bare
value, and neither records a call id on the tool span: each span pairs with its
own call all the same (by its arguments, or by the ``ToolMessage`` it returned).

On the Responses API ``ChatOpenAI`` sends a tool result's blocks as that API's
(``input_image`` with the URL): the cases ``cases/langgraph*/responses*@seed-27``
(``track_shipment`` returns an Anthropic-style image block) were recorded the same
way, streamed for one; what tells the API is the answers' ``resp_`` ids
(OpenInference) or their lack of a finish reason (OpenLLMetry).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay.dialects.langchain_serialized import (
    openai_sent_blocks,
    responses_sent_result,
    tool_message_call_id,
)
from otel_replay.runs.model import Step
from tests.conformance.scenario import PNG_BASE64, scenario_for
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases"
STACKS = (
    "langgraph_openinference",
    "langgraph_openllmetry",
    "langgraph_v0_openinference",
    "langgraph_v0_openllmetry",
)
SEED = 125
DATA_URL = f"data:image/png;base64,{PNG_BASE64}"


def _run(stack: str) -> Any:
    (run,) = otel_replay.load(CASES / stack / f"sync@seed-{SEED}" / "traces.binpb")
    return run


def _calls(run: Any) -> dict[str, dict[str, Any]]:
    """The model's calls of ``run`` by id."""
    return {
        p["id"]: p
        for s in run.model_steps()
        for m in s.model.output_messages or []
        for p in m.get("parts") or []
        if p.get("type") == "tool_call"
    }


def _value(v: Any) -> Any:
    """JSON text parsed (LangChain sends a list of numbers or an object as its JSON text)."""
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return v
    return v


@pytest.mark.parametrize("stack", STACKS)
def test_an_image_a_langchain_tool_returned_reads_as_the_image_url_chatopenai_sent(
    stack: str,
) -> None:
    run = _run(stack)
    sent = [{"type": "image_url", "image_url": {"url": DATA_URL}}]
    (step,) = [
        s
        for s in run.tool_steps()
        if s.tool.tool_name == "lookup_order" and s.tool.arguments == {"order_id": "ORD-5551"}
    ]
    assert step.tool.result == sent
    responses = [
        p["response"]
        for s in run.model_steps()
        for m in s.model.input_messages or []
        for p in m.get("parts") or []
        if p.get("type") == "tool_call_response" and p.get("id") == step.tool.call_id
    ]
    assert responses and all(r == sent for r in responses)


#: The Responses cases of seed 27, one per stack.
RESPONSES = {
    "langgraph_openinference": "responses",
    "langgraph_openllmetry": "responses",
    "langgraph_v0_openinference": "responses",
    "langgraph_v0_openllmetry": "responses_stream",
}


@pytest.mark.parametrize("stack", STACKS)
def test_an_image_a_tool_returned_reads_as_the_input_image_chatopenai_sent_on_responses(
    stack: str,
) -> None:
    (run,) = otel_replay.load(CASES / stack / f"{RESPONSES[stack]}@seed-27" / "traces.binpb")
    sent = [{"type": "input_image", "image_url": DATA_URL}]
    steps = [s for s in run.tool_steps() if s.tool.tool_name == "track_shipment"]
    assert steps and all(s.tool.result == sent for s in steps)
    ids = {s.tool.call_id for s in steps}
    responses = [
        p["response"]
        for s in run.model_steps()
        for m in s.model.input_messages or []
        for p in m.get("parts") or []
        if p.get("type") == "tool_call_response" and p.get("id") in ids
    ]
    assert responses and all(r == sent for r in responses)


@pytest.mark.parametrize("stack", STACKS)
def test_a_tool_called_twice_pairs_each_span_with_its_own_call(stack: str) -> None:
    """Every tool step holds the id of the call whose arguments it ran, and the result the
    tool returned for those arguments (the scenario's, as ``ChatOpenAI`` sent it)."""
    run = _run(stack)
    scn = scenario_for(SEED)
    calls = _calls(run)
    steps: list[Step] = run.tool_steps()
    assert len(steps) == 5 and len({s.tool.call_id for s in steps}) == 5
    names = [s.tool.tool_name for s in steps]
    assert names.count("lookup_order") == 2 and names.count("open_ticket") == 2
    for step in steps:
        t = step.tool
        assert t is not None and t.call_id in calls
        assert calls[t.call_id]["arguments"] == t.arguments, (t.call_id, t.arguments)
        want = openai_sent_blocks(scn.result(t.tool_name, t.arguments["order_id"]))
        assert _value(t.result) == want, (t.call_id, t.result)


@settings(max_examples=80, deadline=None)
@given(
    call_id=st.none() | st.integers() | st.text(max_size=30),
    form=st.sampled_from(["constructor", "dict", "other"]),
    content=st.none() | st.text(max_size=10) | st.lists(st.text(max_size=5), max_size=3),
)
def test_a_tool_message_names_the_call_it_answers(call_id: Any, form: str, content: Any) -> None:
    """A ToolMessage in either recorded form names its call by ``tool_call_id`` (any non-empty
    text); no id, an empty one, one that is not text, or another value: none."""
    fields = {"content": content, "tool_call_id": call_id, "name": "t"}
    value: dict[str, Any] = {
        "constructor": {"lc": 1, "type": "constructor", "id": ["ToolMessage"], "kwargs": fields},
        "dict": {"type": "tool", "data": fields},
        "other": {"type": "ai", "data": fields, **fields},
    }[form]
    want = call_id if form != "other" and isinstance(call_id, str) and call_id else None
    assert tool_message_call_id(value) == want
    assert tool_message_call_id(json.dumps(value)) is None  # text is read by the caller


def _block(rng: random.Random) -> Any:
    """A content block of a kind a LangChain message may hold."""
    kinds = ("text", "b64", "url", "other_source", "no_source", "mcp", "image_url", "file")
    kind = rng.choice(kinds)
    media = rng.choice(("image/png", "image/jpeg", "image/webp", ""))
    data = rng.choice((PNG_BASE64, "AAAA", "", "x" * rng.randint(1, 40)))
    if kind == "text":
        return {"type": "text", "text": rng.choice(("", "é ✅", "a\nb"))}
    if kind == "b64":
        return {"type": "image", "source": {"type": "base64", "media_type": media, "data": data}}
    if kind == "url":
        url = rng.choice(("https://example.com/a.png", ""))
        return {"type": "image", "source": {"type": "url", "url": url}}
    if kind == "other_source":
        return {"type": "image", "source": {"type": rng.choice(("file", "text")), "file_id": "f"}}
    if kind == "no_source":
        return {"type": "image", "source": rng.choice(({}, None, ""))}
    if kind == "mcp":
        return {"type": "image", "data": data, "mimeType": media}
    if kind == "file":
        return {"type": "file", "file": {"filename": "a.pdf", "file_data": DATA_URL}}
    image_url = {"url": DATA_URL, **rng.choice(({}, {"detail": "low"}, {"detail": ""}))}
    return {"type": "image_url", "image_url": image_url}


def _drawn(seed: int, most: int) -> list[list[Any]]:
    """400 block lists of up to ``most`` blocks, drawn from ``seed``."""
    rng = random.Random(seed)
    return [[_block(rng) for _ in range(rng.randint(0, most))] for _ in range(400)]


def _in_stacks(code: str, drawn: list[Any]) -> list[tuple[str, list[Any]]]:
    """What ``code`` prints (JSON) given ``drawn`` (JSON on its input), run in each LangGraph
    stack's environment (1.x and 0.3), with its own langchain-openai."""
    from tests.conformance.replay_agents import stack_python  # makes the stack's venv: slow

    out = []
    for stack in ("langgraph_openinference", "langgraph_v0_openinference"):
        python = stack_python(stack)
        done = subprocess.run(
            [str(python), "-c", code],
            input=json.dumps(drawn),
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(python).parent,
        )
        out.append((stack, json.loads(done.stdout)))
    return out


@pytest.mark.slow
def test_blocks_read_as_langchain_openai_formats_them() -> None:
    """Drawn block lists (a seeded generator), formatted by the stack's own langchain-openai
    (``ChatOpenAI``'s ``_format_message_content``, in its environment) and by the reader."""
    drawn = _drawn(35, 5)
    code = (
        "import json, sys\n"
        "from langchain_openai.chat_models.base import _format_message_content as f\n"
        "print(json.dumps([f(c) for c in json.load(sys.stdin)]))\n"
    )
    for stack, expected in _in_stacks(code, drawn):
        for content, want in zip(drawn, expected, strict=True):
            assert openai_sent_blocks(content) == want, (stack, content)


@pytest.mark.slow
def test_a_tool_result_reads_as_langchain_openai_sends_it_on_the_responses_api() -> None:
    """Drawn tool results (a seeded generator's block lists), made into a Responses
    ``function_call_output``'s output by the stack's own langchain-openai (its message
    formatting, then ``_ensure_valid_tool_message_content``, in its environment) and by the
    reader: the same blocks, or, for a list it sends as its JSON text, the same value."""
    drawn = _drawn(36, 4)
    code = (
        "import json, sys, inspect\n"
        "from langchain_openai.chat_models import base as b\n"
        "f = b._format_message_content\n"
        "kw = {'api': 'responses', 'role': 'tool'} if 'api' in inspect.signature(f).parameters "
        "else {}\n"
        "print(json.dumps([b._ensure_valid_tool_message_content(f(c, **kw)) "
        "for c in json.load(sys.stdin)]))\n"
    )
    for stack, expected in _in_stacks(code, drawn):
        assert any(isinstance(w, list) and w for w in expected), "blocks converted"
        assert any(isinstance(w, str) for w in expected), "lists sent as JSON text"
        for content, want in zip(drawn, expected, strict=True):
            got = responses_sent_result(openai_sent_blocks(content))
            assert got == (json.loads(want) if isinstance(want, str) else want), (stack, content)
