"""Test helper: the order-support agent loop written against the real SDKs.

Each agent starts from the first request a recorded run made (its model,
system prompt, user message, tools and parameters), calls the model through
the SDK in one of its modes, runs each tool call it gets with ``call_tool``
and sends the result back, until the model answers in text.  It returns that
answer; the requests it sent are collected by :class:`Sent` (an httpx event
hook), so a test can compare them with the recorded ones.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import anthropic
import httpx2
import openai

#: ``call_tool(call_id, name, arguments as JSON text) -> the result text sent back``
CallTool = Callable[[str, str, str], str]
#: What one model turn gave: its text, and each tool call as (id, name, JSON arguments).
Turn = tuple[str, list[tuple[str, str, str]]]

STREAM_KEYS = ("stream", "stream_options")


class Sent:
    """The JSON bodies of the requests a client sent (its httpx ``request`` hook)."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []

    def __call__(self, request: httpx2.Request) -> None:
        self.bodies.append(json.loads(request.content))

    async def async_hook(self, request: httpx2.Request) -> None:
        self(request)


def http_client(mode: str, sent: Sent, transport: Any = None) -> httpx2.Client | httpx2.AsyncClient:
    if mode.startswith("async"):
        return httpx2.AsyncClient(transport=transport, event_hooks={"request": [sent.async_hook]})
    return httpx2.Client(transport=transport, event_hooks={"request": [sent]})


class _Loop:
    """One event loop for a whole conversation of an async client."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def run(self, coro: Coroutine[Any, Any, Turn]) -> Turn:
        return self.loop.run_until_complete(coro)

    def close(self) -> None:
        self.loop.close()


# --- OpenAI Chat Completions ---------------------------------------------------------------
def _chat_turn_from_message(message: Any) -> Turn:
    calls = [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []]
    return message.content or "", calls


def _fold_chat_chunks(chunks: list[Any]) -> Turn:
    text, calls = "", {}
    for chunk in chunks:
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, ["", "", ""])
                slot[0] = tc.id or slot[0]
                slot[1] += (tc.function and tc.function.name) or ""
                slot[2] += (tc.function and tc.function.arguments) or ""
    return text, [tuple(calls[i]) for i in sorted(calls)]  # type: ignore[misc]


def openai_chat(
    base_url: str | None, mode: str, first: dict[str, Any], call_tool: CallTool, http: Any
) -> str:
    """Chat Completions; ``mode``: sync, async, stream (raw chunks), async_stream (helper)."""
    params = {k: v for k, v in first.items() if k not in ("messages", *STREAM_KEYS)}
    messages = list(first["messages"])
    loop = _Loop()
    if mode.startswith("async"):
        aclient = openai.AsyncOpenAI(api_key="sk-test", base_url=base_url, http_client=http)
    else:
        client = openai.OpenAI(api_key="sk-test", base_url=base_url, http_client=http)

    async def async_turn() -> Turn:
        if mode == "async":
            r = await aclient.chat.completions.create(messages=messages, **params)
            return _chat_turn_from_message(r.choices[0].message)
        async with aclient.chat.completions.stream(messages=messages, **params) as s:
            async for _ in s:
                pass
            final = await s.get_final_completion()
        return _chat_turn_from_message(final.choices[0].message)

    def turn() -> Turn:
        if mode == "sync":
            r = client.chat.completions.create(messages=messages, **params)
            return _chat_turn_from_message(r.choices[0].message)
        if mode == "stream":
            stream = client.chat.completions.create(
                messages=messages, stream=True, stream_options={"include_usage": True}, **params
            )
            chunks = list(stream)
            assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens > 0
            return _fold_chat_chunks(chunks)
        return loop.run(async_turn())

    try:
        for _ in range(6):
            text, calls = turn()
            if not calls:
                return text
            messages.append(
                {
                    "role": "assistant",
                    "content": text or None,
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                        for i, n, a in calls
                    ],
                }
            )
            for call_id, name, args in calls:
                result = call_tool(call_id, name, args)
                messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
    finally:
        loop.close()
    raise AssertionError("the agent did not finish")


# --- OpenAI Responses ------------------------------------------------------------------------
def _responses_turn(response: Any) -> Turn:
    calls = [
        (item.call_id, item.name, item.arguments)
        for item in response.output
        if item.type == "function_call"
    ]
    return response.output_text, calls


def openai_responses(
    base_url: str | None, mode: str, first: dict[str, Any], call_tool: CallTool, http: Any
) -> str:
    """Responses; ``mode``: sync, stream (raw events), async_stream (helper)."""
    params = {k: v for k, v in first.items() if k not in ("input", *STREAM_KEYS)}
    items = list(first["input"])
    loop = _Loop()
    if mode.startswith("async"):
        aclient = openai.AsyncOpenAI(api_key="sk-test", base_url=base_url, http_client=http)
    else:
        client = openai.OpenAI(api_key="sk-test", base_url=base_url, http_client=http)

    async def async_turn() -> Turn:
        async with aclient.responses.stream(input=items, **params) as s:
            async for _ in s:
                pass
            final = await s.get_final_response()
        return _responses_turn(final)

    def turn() -> Turn:
        if mode == "sync":
            return _responses_turn(client.responses.create(input=items, **params))
        if mode == "stream":
            events = list(client.responses.create(input=items, stream=True, **params))
            assert events[-1].type == "response.completed"
            text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
            done = [e.item for e in events if e.type == "response.output_item.done"]
            calls = [(i.call_id, i.name, i.arguments) for i in done if i.type == "function_call"]
            assert (text, calls) == _responses_turn(events[-1].response)
            return text, calls
        return loop.run(async_turn())

    try:
        for _ in range(6):
            text, calls = turn()
            if not calls:
                return text
            if text:  # the answer's message item, sent back as the API's conversation state
                items.append(
                    {
                        "type": "message",
                        "role": "assistant",
                        "content": [{"type": "output_text", "text": text}],
                    }
                )
            for call_id, name, args in calls:
                items.append(
                    {"type": "function_call", "call_id": call_id, "name": name, "arguments": args}
                )
                result = call_tool(call_id, name, args)
                items.append({"type": "function_call_output", "call_id": call_id, "output": result})
    finally:
        loop.close()
    raise AssertionError("the agent did not finish")


# --- Anthropic Messages ----------------------------------------------------------------------
def _anthropic_turn(message: Any) -> tuple[Turn, list[dict[str, Any]]]:
    text = "".join(b.text for b in message.content if b.type == "text")
    calls = [
        (b.id, b.name, json.dumps(b.input, separators=(",", ":")))
        for b in message.content
        if b.type == "tool_use"
    ]
    blocks = [b.model_dump(exclude_none=True) for b in message.content]
    return (text, calls), blocks


def _fold_anthropic_events(events: list[Any]) -> tuple[Turn, list[dict[str, Any]]]:
    assert events[0].type == "message_start" and events[-1].type == "message_stop"
    blocks: list[dict[str, Any]] = []
    partial: dict[int, str] = {}
    for e in events:
        if e.type == "content_block_start":
            blocks.append(e.content_block.model_dump(exclude_none=True))
        elif e.type == "content_block_delta" and e.delta.type == "text_delta":
            blocks[e.index]["text"] += e.delta.text
        elif e.type == "content_block_delta" and e.delta.type == "input_json_delta":
            partial[e.index] = partial.get(e.index, "") + e.delta.partial_json
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text)
    stop = next(e.delta.stop_reason for e in events if e.type == "message_delta")
    calls = [
        (b["id"], b["name"], json.dumps(b["input"], separators=(",", ":")))
        for b in blocks
        if b["type"] == "tool_use"
    ]
    assert stop == ("tool_use" if calls else "end_turn")
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    return (text, calls), blocks


def anthropic_messages(
    base_url: str | None, mode: str, first: dict[str, Any], call_tool: CallTool, http: Any
) -> str:
    """Messages; ``mode``: sync, async, stream (raw events), stream_helper, async_stream."""
    params = {k: v for k, v in first.items() if k not in ("messages", *STREAM_KEYS)}
    messages = list(first["messages"])
    loop = _Loop()
    if mode.startswith("async"):
        aclient = anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, http_client=http)
    else:
        client = anthropic.Anthropic(api_key="sk-test", base_url=base_url, http_client=http)

    async def async_turn() -> Any:
        if mode == "async":
            return await aclient.messages.create(messages=messages, **params)
        async with aclient.messages.stream(messages=messages, **params) as s:
            async for _ in s:
                pass
            return await s.get_final_message()

    def turn() -> tuple[Turn, list[dict[str, Any]]]:
        if mode == "sync":
            return _anthropic_turn(client.messages.create(messages=messages, **params))
        if mode == "stream":
            return _fold_anthropic_events(
                list(client.messages.create(messages=messages, stream=True, **params))
            )
        if mode == "stream_helper":
            with client.messages.stream(messages=messages, **params) as s:
                for _ in s:
                    pass
                return _anthropic_turn(s.get_final_message())
        return _anthropic_turn(loop.loop.run_until_complete(async_turn()))

    try:
        for _ in range(6):
            (text, calls), blocks = turn()
            if not calls:
                return text
            content = [
                {"type": "text", "text": b["text"]}
                if b["type"] == "text"
                else {"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["input"]}
                for b in blocks
            ]
            messages.append({"role": "assistant", "content": content})
            results = [
                {"type": "tool_result", "tool_use_id": i, "content": call_tool(i, n, a)}
                for i, n, a in calls
            ]
            messages.append({"role": "user", "content": results})
    finally:
        loop.close()
    raise AssertionError("the agent did not finish")


AGENTS = {
    "/v1/chat/completions": openai_chat,
    "/v1/responses": openai_responses,
    "/v1/messages": anthropic_messages,
}
