"""The conformance agent as a hand-written tool loop on LiteLLM's ``completion()``.

Written as LiteLLM's function-calling guide shows it: call
``litellm.completion`` (``acompletion`` under asyncio; with ``stream=True``
the chunks are put back together with ``litellm.stream_chunk_builder``),
append the assistant message, run each tool call and append a ``tool``
message with its result, or with the error when the tool raises; until the
model answers.  ``--api anthropic`` talks to the Anthropic Messages API
and ``--api responses`` to the OpenAI Responses API, through the same loop
(LiteLLM translates).  Each stack's ``agent.py`` sets
up its tracing and calls :func:`main`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import litellm
import scenario

# LiteLLM prints its help text to stdout when a call fails, among the answers: not here.
litellm.suppress_debug_info = True

#: ``openai/responses/...``: LiteLLM's route of ``completion()`` through the Responses API.
MODELS = {
    "chat": "openai/gpt-4o-mini",
    "responses": "openai/responses/gpt-4o-mini",
    "anthropic": "anthropic/claude-sonnet-4-5",
}
#: Model calls per run before giving up (the scenario needs three).
MAX_TURNS = 6


def run_tool(call: Any) -> str:
    """The tool call's result as the text sent back to the model, or the error it raised."""
    try:
        result = scenario.TOOLS[call.function.name](**json.loads(call.function.arguments))
    except Exception as e:
        return f"Error: {e}"
    return json.dumps(result, ensure_ascii=False)


def _request(args: Any, messages: list[Any]) -> dict[str, Any]:
    return {
        "model": MODELS[args.api],
        "messages": messages,
        "tools": scenario.openai_tools(),
        "api_base": args.base_url,
        "api_key": "sk-conformance-dummy",
        "temperature": 0,
        "max_tokens": 1024,
    }


def _start(question: str) -> list[Any]:
    return [
        {"role": "system", "content": scenario.SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]


def _answered(messages: list[Any], message: Any) -> bool:
    """Append the model's message and the results of the tools it calls; True when it is done."""
    messages.append(message)
    if not message.tool_calls:
        return True
    for call in message.tool_calls:
        messages.append(
            {
                "role": "tool",
                "tool_call_id": call.id,
                "name": call.function.name,
                "content": run_tool(call),
            }
        )
    return False


def ask(args: Any, question: str, stream: bool) -> str:
    messages = _start(question)
    for _ in range(MAX_TURNS):
        if stream:
            chunks = list(litellm.completion(**_request(args, messages), stream=True))
            response = litellm.stream_chunk_builder(chunks, messages=messages)
        else:
            response = litellm.completion(**_request(args, messages))
        message = response.choices[0].message
        if _answered(messages, message):
            return str(message.content)
    raise RuntimeError("the model did not answer")


async def aask(args: Any, question: str, stream: bool) -> str:
    messages = _start(question)
    for _ in range(MAX_TURNS):
        if stream:
            response_stream = await litellm.acompletion(**_request(args, messages), stream=True)
            chunks = [chunk async for chunk in response_stream]
            response = litellm.stream_chunk_builder(chunks, messages=messages)
        else:
            response = await litellm.acompletion(**_request(args, messages))
        message = response.choices[0].message
        if _answered(messages, message):
            return str(message.content)
    raise RuntimeError("the model did not answer")


def main(flush: Callable[[], Any]) -> None:
    """Run the agent as the command line says, print each answer, then ``flush`` the telemetry."""
    args = scenario.agent_arguments(__doc__)
    questions = scenario.QUESTIONS[: args.runs]
    stream = args.mode in ("stream", "async_stream")
    if args.mode in ("sync", "stream"):
        answers = [scenario.said(lambda q=q: ask(args, q, stream)) for q in questions]
    else:
        answers = asyncio.run(_run_async(args, questions, stream))
    for answer in answers:
        print(answer)
    # LiteLLM runs the logging callbacks of sync calls in a thread pool: let them finish.
    from litellm.litellm_core_utils.thread_pool_executor import executor

    executor.shutdown(wait=True)
    flush()


async def _run_async(args: Any, questions: tuple[str, ...], stream: bool) -> list[str]:
    from litellm.litellm_core_utils.logging_worker import GLOBAL_LOGGING_WORKER

    if args.concurrent:
        answers = list(
            await asyncio.gather(*(scenario.or_raised(aask(args, q, stream)) for q in questions))
        )
    else:
        answers = [await scenario.or_raised(aask(args, q, stream)) for q in questions]
    # ...and those of async calls in a worker on this event loop: wait for them before it closes.
    await GLOBAL_LOGGING_WORKER.flush()
    return answers
