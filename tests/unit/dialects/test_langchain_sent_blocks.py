"""LangChain content blocks read as langchain-openai sent them, and a tool called twice in a turn.

The cases ``cases/langgraph*/sync@seed-7`` were recorded by running LangGraph's
agent (LangChain 1.x and 0.3, ``ChatOpenAI``) with OpenInference and OpenLLMetry
tracing on the drawn scenario ``seed-7``: ``lookup_order`` returns an
Anthropic-style image block (base64 data), which the traces record as LangChain
holds it and which ``ChatOpenAI`` sent as an ``image_url`` data URL; and
``open_ticket`` is called twice in one turn with other arguments, which
OpenInference 0.1 records as Python ``str()`` of the dict, with no call id.
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from otel_replay.dialects.langchain_serialized import openai_sent_blocks
from otel_replay.runs.model import Step
from tests.conformance.scenario import PNG_BASE64
from tests.fixtures.data import TESTS

CASES = TESTS / "conformance" / "cases"
STACKS = (
    "langgraph_openinference",
    "langgraph_openllmetry",
    "langgraph_v0_openinference",
    "langgraph_v0_openllmetry",
)
DATA_URL = f"data:image/png;base64,{PNG_BASE64}"


def _run(stack: str) -> Any:
    (run,) = otel_replay.load(CASES / stack / "sync@seed-7" / "traces.binpb")
    return run


def _tool(run: Any, call_id: str) -> Step:
    return next(s for s in run.tool_steps() if s.tool is not None and s.tool.call_id == call_id)


@pytest.mark.parametrize("stack", STACKS)
def test_an_image_a_langchain_tool_returned_reads_as_the_image_url_chatopenai_sent(
    stack: str,
) -> None:
    run = _run(stack)
    sent = [{"type": "image_url", "image_url": {"url": DATA_URL}}]
    assert _tool(run, "call_lookup_order_4657").tool.result == sent  # type: ignore[union-attr]
    responses = [
        p["response"]
        for s in run.model_steps()
        for m in s.model.input_messages or []
        for p in m.get("parts") or []
        if p.get("type") == "tool_call_response" and p.get("id") == "call_lookup_order_4657"
    ]
    assert responses and all(r == sent for r in responses)


@pytest.mark.parametrize("stack", STACKS)
def test_the_same_tool_twice_in_a_turn_pairs_each_span_with_its_own_call(stack: str) -> None:
    run = _run(stack)
    first = _tool(run, "call_open_ticket_4657").tool
    second = _tool(run, "call_open_ticket_4657_2").tool
    assert first is not None and second is not None
    assert first.arguments["order_id"] == "ORD-4657-2"
    assert second.arguments["order_id"] == "ORD-4657"
    # Each result is the one the tool returned for those arguments.
    assert first.result != second.result
    assert "paquete" in str(first.result) and "a/b" in str(second.result)


def _block(rng: random.Random) -> Any:
    """A content block of a kind a LangChain message may hold."""
    kind = rng.choice(("text", "b64", "url", "other_source", "no_source", "mcp", "image_url"))
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
    return {"type": "image_url", "image_url": {"url": DATA_URL}}


@pytest.mark.slow
def test_blocks_read_as_langchain_openai_formats_them() -> None:
    """Drawn block lists (a seeded generator), formatted by the stack's own langchain-openai
    (``ChatOpenAI``'s ``_format_message_content``, in its environment) and by the reader."""
    from tests.conformance.replay_agents import stack_python  # makes the stack's venv: slow

    rng = random.Random(35)
    drawn = [[_block(rng) for _ in range(rng.randint(0, 5))] for _ in range(400)]
    code = (
        "import json, sys\n"
        "from langchain_openai.chat_models.base import _format_message_content as f\n"
        "print(json.dumps([f(c) for c in json.load(sys.stdin)]))\n"
    )
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
        expected = json.loads(done.stdout)
        for content, want in zip(drawn, expected, strict=True):
            assert openai_sent_blocks(content) == want, (stack, content)
