"""A hand-written agent loop on the OpenAI, Anthropic or AWS SDK: the stacks of client instrumentations.

No framework: the loop sends the conversation, runs the tools the model
called (the raising tool's error goes back as ``{"error": <text>}``), and
sends again until the model answers.  Nothing here makes a span; each
stack's ``agent.py`` instruments the client as its instrumentation documents
and calls :func:`main`.  Chat Completions, Responses (``--api responses``),
Anthropic Messages (``--api anthropic``) or Amazon Bedrock Converse on boto3
(``--api converse``; boto3 blocks, so its asyncio loop runs it in a thread);
blocking or asyncio, whole or streamed answers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import scenario

MODEL = {"anthropic": "claude-sonnet-4-5", "converse": "us.anthropic.claude-sonnet-4-5-v1:0"}
MAX_TURNS = 6


def run_tool(name: str, arguments: Any) -> str:
    args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
    try:
        result = scenario.TOOLS[name](**args)
    except scenario.TOOL_ERRORS as e:
        result = {"error": str(e)}
    return json.dumps(result, ensure_ascii=False)


def _tools(api: str) -> list[dict[str, Any]]:
    if api == "chat":
        return scenario.openai_tools()
    if api == "responses":
        return [{"type": "function", **t["function"]} for t in scenario.openai_tools()]
    if api == "converse":
        return [
            {"toolSpec": {"name": n, "description": d, "inputSchema": {"json": p}}}
            for n, d, p in (
                (n, d, scenario.TOOL_PARAMETERS[n]) for n, d in scenario.TOOL_DESCRIPTIONS.items()
            )
        ]
    return [
        {"name": n, "description": d, "input_schema": scenario.TOOL_PARAMETERS[n]}
        for n, d in scenario.TOOL_DESCRIPTIONS.items()
    ]


class Conversation:
    """One run's messages in the API's shape, and what the next request sends."""

    def __init__(self, api: str, question: str) -> None:
        self.api = api
        self.answer: str | None = None
        if api == "chat":
            self.items: list[Any] = [
                {"role": "system", "content": scenario.SYSTEM_PROMPT},
                {"role": "user", "content": question},
            ]
        elif api == "converse":
            self.items = [{"role": "user", "content": [{"text": question}]}]
        else:
            self.items = [{"role": "user", "content": question}]

    def request(self, stream: bool) -> dict[str, Any]:
        if self.api == "converse":
            return {
                "modelId": MODEL["converse"],
                "messages": self.items,
                "system": [{"text": scenario.SYSTEM_PROMPT}],
                "toolConfig": {"tools": _tools("converse")},
                "inferenceConfig": {"maxTokens": 1024, "temperature": 0},
            }
        kw: dict[str, Any] = {
            "model": MODEL.get(self.api, "gpt-4o-mini"),
            "tools": _tools(self.api),
        }
        if self.api == "chat":
            kw.update(messages=self.items, temperature=0, max_tokens=1024)
            if stream:
                kw.update(stream=True, stream_options={"include_usage": True})
        elif self.api == "responses":
            kw.update(input=self.items, instructions=scenario.SYSTEM_PROMPT, temperature=0)
            kw.update(max_output_tokens=1024)
        else:
            # (anthropic 2's Messages.create takes no temperature)
            kw.update(messages=self.items, system=scenario.SYSTEM_PROMPT, max_tokens=1024)
        return kw

    def take(self, answer: Any) -> None:
        """Add the model's answer and the results of the tools it called."""
        if self.api == "chat":
            message = answer.choices[0].message
            calls = [
                (c.id, c.function.name, c.function.arguments) for c in message.tool_calls or []
            ]
            turn: dict[str, Any] = {"role": "assistant", "content": message.content}
            if calls:
                turn["tool_calls"] = [
                    {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                    for i, n, a in calls
                ]
            self.items.append(turn)
            self.items += [
                {"role": "tool", "tool_call_id": i, "content": run_tool(n, a)} for i, n, a in calls
            ]
            text = message.content
        elif self.api == "responses":
            calls = [
                (o.call_id, o.name, o.arguments) for o in answer.output if o.type == "function_call"
            ]
            self.items += [o.model_dump(exclude_none=True) for o in answer.output]
            self.items += [
                {"type": "function_call_output", "call_id": i, "output": run_tool(n, a)}
                for i, n, a in calls
            ]
            text = answer.output_text
        elif self.api == "converse":
            message = answer["output"]["message"]
            blocks = message["content"]
            calls = [
                (b["toolUse"]["toolUseId"], b["toolUse"]["name"], b["toolUse"]["input"])
                for b in blocks
                if "toolUse" in b
            ]
            self.items.append({"role": "assistant", "content": blocks})
            if calls:
                results = [
                    {"toolResult": {"toolUseId": i, "content": [{"text": run_tool(n, a)}]}}
                    for i, n, a in calls
                ]
                self.items.append({"role": "user", "content": results})
            text = "".join(b["text"] for b in blocks if "text" in b)
        else:
            blocks = [b.model_dump(exclude_none=True) for b in answer.content]
            calls = [(b.id, b.name, b.input) for b in answer.content if b.type == "tool_use"]
            self.items.append({"role": "assistant", "content": blocks})
            if calls:
                results = [
                    {"type": "tool_result", "tool_use_id": i, "content": run_tool(n, a)}
                    for i, n, a in calls
                ]
                self.items.append({"role": "user", "content": results})
            text = "".join(b.text for b in answer.content if b.type == "text")
        if not calls:
            self.answer = (text or "").strip()


def _client(args: Any, asynchronous: bool) -> Any:
    if args.api == "converse":
        import boto3

        return boto3.client(
            "bedrock-runtime",
            endpoint_url=args.base_url,
            region_name="us-east-1",
            aws_access_key_id="conformance-dummy",
            aws_secret_access_key="conformance-dummy",
        )
    if args.api == "anthropic":
        import anthropic

        cls = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return cls(base_url=args.base_url, api_key="sk-ant-conformance-dummy")
    import openai

    ocls = openai.AsyncOpenAI if asynchronous else openai.OpenAI
    return ocls(base_url=args.base_url, api_key="sk-conformance-dummy")


def _create(client: Any, api: str) -> Callable[..., Any]:
    if api == "converse":
        return client.converse  # type: ignore[no-any-return]
    if api == "chat":
        return client.chat.completions.create  # type: ignore[no-any-return]
    if api == "responses":
        return client.responses.create  # type: ignore[no-any-return]
    return client.messages.create  # type: ignore[no-any-return]


def _folded(events: Any) -> dict[str, Any]:
    """A ConverseStream's events folded into the answer ``converse`` gives (boto3 has no
    helper for it): each block's text, or its tool use with the input's JSON joined."""
    blocks: dict[int, dict[str, Any]] = {}
    inputs: dict[int, str] = {}
    stop = None
    for event in events:
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            blocks[start["contentBlockIndex"]] = {"toolUse": dict(start["start"]["toolUse"])}
        elif "contentBlockDelta" in event:
            index, delta = (
                event["contentBlockDelta"]["contentBlockIndex"],
                event["contentBlockDelta"]["delta"],
            )
            if "text" in delta:
                block = blocks.setdefault(index, {"text": ""})
                block["text"] += delta["text"]
            elif "toolUse" in delta:
                inputs[index] = inputs.get(index, "") + delta["toolUse"]["input"]
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    for index, text in inputs.items():
        blocks[index]["toolUse"]["input"] = json.loads(text or "{}")
    content = [blocks[i] for i in sorted(blocks)]
    return {"output": {"message": {"role": "assistant", "content": content}}, "stopReason": stop}


def _whole(client: Any, api: str, kw: dict[str, Any]) -> Any:
    """A streamed answer read to its end, as the SDK's stream helpers assemble it."""
    if api == "converse":
        return _folded(client.converse_stream(**kw)["stream"])
    if api == "chat":
        from openai.lib.streaming.chat import ChatCompletionStreamState

        state = ChatCompletionStreamState()
        for chunk in client.chat.completions.create(**kw):
            state.handle_chunk(chunk)
        return state.get_final_completion()
    if api == "responses":
        with client.responses.stream(**kw) as stream:
            return stream.get_final_response()
    with client.messages.stream(**kw) as stream:
        return stream.get_final_message()


async def _awhole(client: Any, api: str, kw: dict[str, Any]) -> Any:
    if api == "chat":
        from openai.lib.streaming.chat import ChatCompletionStreamState

        state = ChatCompletionStreamState()
        async for chunk in await client.chat.completions.create(**kw):
            state.handle_chunk(chunk)
        return state.get_final_completion()
    if api == "responses":
        async with client.responses.stream(**kw) as stream:
            return await stream.get_final_response()
    async with client.messages.stream(**kw) as stream:
        return await stream.get_final_message()


def ask(args: Any, question: str, stream: bool) -> str:
    client, talk = _client(args, False), Conversation(args.api, question)
    for _ in range(MAX_TURNS):
        kw = talk.request(stream)
        talk.take(_whole(client, args.api, kw) if stream else _create(client, args.api)(**kw))
        if talk.answer is not None:
            return talk.answer
    raise RuntimeError("the model did not answer")


async def aask(args: Any, question: str, stream: bool) -> str:
    if args.api == "converse":  # boto3 has no asyncio client
        import asyncio

        return await asyncio.to_thread(ask, args, question, stream)
    client, talk = _client(args, True), Conversation(args.api, question)
    for _ in range(MAX_TURNS):
        kw = talk.request(stream)
        if stream:
            talk.take(await _awhole(client, args.api, kw))
        else:
            talk.take(await _create(client, args.api)(**kw))
        if talk.answer is not None:
            return talk.answer
    raise RuntimeError("the model did not answer")


def main(flush: Callable[[], Any]) -> None:
    """Run the loop as the command line says, print each answer, then ``flush`` the telemetry."""
    scenario.print_answers(__doc__, ask, aask)
    flush()


if __name__ == "__main__":
    raise SystemExit("run a stack's agent.py, which instruments the client first")
