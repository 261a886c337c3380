"""Test helper: a newcomer's own agent, in every shape an agent takes its model.

``AGENT`` is the text of a module a user would write (saved as
``weather_agent.py`` in a temporary directory): the OpenAI or Anthropic SDK,
two tools recorded with ``@otel_replay.tool``, the run in ``agent_run``.  Its
entry points take the model each way :func:`otel_replay.call_agent` knows,
sync and async: ``client=``, ``base_url=``, none (a client it makes from the
provider variables), and ``model=`` (the pinned model, GenAI messages).

``model_server(provider)`` is a model on 127.0.0.1 speaking that provider's
API (asks for one tool, then the other, then answers); :func:`record` records
the agent against it through ``RecordingTransport``, as the README does.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx2

from _http import serving
from _recording import recording

QUESTION = "What is the weather and the time in Paris?"
FINAL = "It is 18 C and sunny in Paris, and the time there is 14:00."

AGENT = '''\
"""The weather agent: two tools, the model through the SDK."""

import importlib
import json

import otel_replay

PROVIDER = {provider!r}
SDK = importlib.import_module(PROVIDER)  # the one SDK the agent is written on
MODEL = "gpt-4o-mini" if PROVIDER == "openai" else "claude-3-5-haiku-latest"
TOOLS = [
    {{"name": "get_weather", "description": "Weather in a city.",
      "parameters": {{"type": "object", "properties": {{"city": {{"type": "string"}}}}}}}},
    {{"name": "get_time", "description": "Local time in a city.",
      "parameters": {{"type": "object", "properties": {{"city": {{"type": "string"}}}}}}}},
]


@otel_replay.tool
def get_weather(city):
    return {{"city": city, "temperature_c": 18, "sky": "sunny"}}


@otel_replay.tool
def get_time(city):
    return {{"city": city, "time": "14:00"}}


def _run_tool(call_id, name, arguments):
    with otel_replay.tool_call_id(call_id):
        fn = get_weather if name == "get_weather" else get_time
        return json.dumps(fn(**arguments))


# --- one turn, per API ----------------------------------------------------------------------
def _openai_request(messages):
    tools = [{{"type": "function", "function": t}} for t in TOOLS]
    return dict(model=MODEL, messages=messages, tools=tools)


def _openai_turn(messages, reply):
    message = reply.choices[0].message
    messages.append(message.model_dump(exclude_none=True))
    calls = [(c.id, c.function.name, json.loads(c.function.arguments))
             for c in message.tool_calls or []]
    for call_id, name, arguments in calls:
        messages.append({{"role": "tool", "tool_call_id": call_id,
                          "content": _run_tool(call_id, name, arguments)}})
    return None if calls else message.content


def _anthropic_request(messages):
    tools = [{{"name": t["name"], "description": t["description"],
               "input_schema": t["parameters"]}} for t in TOOLS]
    return dict(model=MODEL, max_tokens=512, messages=messages, tools=tools)


def _anthropic_turn(messages, reply):
    messages.append({{"role": "assistant", "content": [b.model_dump(exclude_none=True)
                                                       for b in reply.content]}})
    calls = [(b.id, b.name, b.input) for b in reply.content if b.type == "tool_use"]
    if not calls:
        return "".join(b.text for b in reply.content if b.type == "text")
    messages.append({{"role": "user", "content": [
        {{"type": "tool_result", "tool_use_id": i, "content": _run_tool(i, n, a)}}
        for i, n, a in calls
    ]}})
    return None


def _first(question):
    return [{{"role": "user", "content": question}}]


# --- the loop, sync and async ---------------------------------------------------------------
def _loop(question, client):
    messages = _first(question)
    with otel_replay.agent_run("weather", input=question) as run:
        for _ in range(6):
            if PROVIDER == "openai":
                reply = client.chat.completions.create(**_openai_request(messages))
                answer = _openai_turn(messages, reply)
            else:
                reply = client.messages.create(**_anthropic_request(messages))
                answer = _anthropic_turn(messages, reply)
            if answer is not None:
                run.record(answer)
                return answer
    raise RuntimeError("the agent did not finish")


async def _aloop(question, client):
    messages = _first(question)
    with otel_replay.agent_run("weather", input=question) as run:
        for _ in range(6):
            if PROVIDER == "openai":
                reply = await client.chat.completions.create(**_openai_request(messages))
                answer = _openai_turn(messages, reply)
            else:
                reply = await client.messages.create(**_anthropic_request(messages))
                answer = _anthropic_turn(messages, reply)
            if answer is not None:
                run.record(answer)
                return answer
    raise RuntimeError("the agent did not finish")


def _make(base_url=None, asynchronous=False):
    if PROVIDER == "openai":
        cls = SDK.AsyncOpenAI if asynchronous else SDK.OpenAI
    else:
        cls = SDK.AsyncAnthropic if asynchronous else SDK.Anthropic
    return cls(base_url=base_url) if base_url else cls()


# --- the shapes -----------------------------------------------------------------------------
def run_agent(question, client):
    return _loop(question, client)


async def run_agent_async(question, client):
    return await _aloop(question, client)


def run_base_url(question, base_url):
    return _loop(question, _make(base_url))


async def run_base_url_async(question, base_url):
    return await _aloop(question, _make(base_url, asynchronous=True))


def run_env(question):
    return _loop(question, _make())


async def run_env_async(question):
    return await _aloop(question, _make(asynchronous=True))


def _model_loop(question, model):
    messages = [{{"role": "user", "parts": [{{"type": "text", "content": question}}]}}]
    with otel_replay.agent_run("weather", input=question) as run:
        for _ in range(6):
            reply = model(messages)
            messages.append(reply)
            calls = [p for p in reply.get("parts") or [] if p.get("type") == "tool_call"]
            if not calls:
                answer = "".join(p.get("content") or "" for p in reply["parts"]
                                 if p.get("type") == "text")
                run.record(answer)
                return answer
            for call in calls:
                arguments = call["arguments"]
                if isinstance(arguments, str):
                    arguments = json.loads(arguments)
                result = _run_tool(call["id"], call["name"], arguments)
                messages.append({{"role": "tool", "parts": [
                    {{"type": "tool_call_response", "id": call["id"], "response": result}}
                ]}})
    raise RuntimeError("the agent did not finish")


def run_model(question, model):
    return _model_loop(question, model)


async def run_model_async(question, model):
    return _model_loop(question, model)
'''

#: Entry point of each shape, sync and async.
SHAPES = {
    "client": ("run_agent", "run_agent_async"),
    "base_url": ("run_base_url", "run_base_url_async"),
    "own_client": ("run_env", "run_env_async"),
    "model": ("run_model", "run_model_async"),
}
PROVIDERS = ("openai", "anthropic")


def shape_cases(options: tuple[str | None, ...], *, quick: str = "each") -> list[Any]:
    """pytest params ``(provider, entry[, option])``: every provider and entry point, with
    each option (None: no option argument).

    The default tier runs one provider and mode per shape and option (``quick="each"``),
    or one shape per option (``quick="one"``), turning with the option so that the shapes
    meet both providers, sync and async; the rest is the slow tier.
    """
    import pytest

    cases = []
    for k, option in enumerate(options):
        for j, names in enumerate(SHAPES.values()):
            combos = [(p, e) for p in PROVIDERS for e in names]
            chosen = combos[(k + j) % len(combos)] if quick == "each" or j == k else None
            for provider, entry in combos:
                marks = () if (provider, entry) == chosen else (pytest.mark.slow,)
                name = "-".join(x for x in (option, provider, entry) if x)
                args = (provider, entry) if option is None else (provider, entry, option)
                cases.append(pytest.param(*args, id=name, marks=marks))
    return cases


def write_agent(directory: Path, provider: str, name: str = "weather_agent") -> Path:
    """The agent module, saved as a user saves theirs."""
    path = directory / f"{name}.py"
    path.write_text(AGENT.format(provider=provider), encoding="utf-8")
    return path


def import_agent(path: Path) -> ModuleType:
    """The module at ``path``, imported under a name of its own (one per file)."""
    name = f"_weather_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


# --- the model server -----------------------------------------------------------------------
def _tool_results(body: dict[str, Any]) -> int:
    count = 0
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            count += 1
        content = message.get("content")
        if isinstance(content, list):
            count += sum(1 for b in content if b.get("type") == "tool_result")
    return count


_SCRIPT = [("call", "get_weather"), ("call", "get_time"), ("say", FINAL)]


def _openai_reply(turn: int) -> dict[str, Any]:
    kind, value = _SCRIPT[turn]
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if kind == "call":
        message["tool_calls"] = [
            {
                "id": f"call_{turn}",
                "type": "function",
                "function": {"name": value, "arguments": json.dumps({"city": "Paris"})},
            }
        ]
    else:
        message["content"] = value
    return {
        "id": f"chatcmpl-{turn}",
        "object": "chat.completion",
        "created": 1_790_000_000 + turn,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if kind == "call" else "stop",
            }
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 8, "total_tokens": 28},
    }


def _anthropic_reply(turn: int) -> dict[str, Any]:
    kind, value = _SCRIPT[turn]
    block: dict[str, Any] = (
        {"type": "tool_use", "id": f"toolu_{turn}", "name": value, "input": {"city": "Paris"}}
        if kind == "call"
        else {"type": "text", "text": value}
    )
    return {
        "id": f"msg_{turn}",
        "type": "message",
        "role": "assistant",
        "model": "claude-3-5-haiku-latest",
        "content": [block],
        "stop_reason": "tool_use" if kind == "call" else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 20, "output_tokens": 8},
    }


@contextlib.contextmanager
def model_server(provider: str) -> Iterator[str]:
    """The base URL a client of ``provider`` takes (``/v1`` for OpenAI), on 127.0.0.1."""

    def answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        length = int(handler.headers.get("Content-Length") or 0)
        body = json.loads(handler.rfile.read(length) or b"{}")
        turn = min(_tool_results(body), len(_SCRIPT) - 1)
        reply = _openai_reply(turn) if provider == "openai" else _anthropic_reply(turn)
        return 200, "application/json", json.dumps(reply).encode()

    with serving(answer) as url:
        yield url + "/v1" if provider == "openai" else url


def record(path: Path, module: ModuleType, provider: str) -> str:
    """Run the agent's ``client=`` entry point once against the model server, recorded
    byte for byte through ``RecordingTransport`` into ``path``; its answer."""
    import anthropic
    import openai

    import otel_replay

    http = httpx2.Client(transport=otel_replay.RecordingTransport(httpx2.HTTPTransport()))
    with model_server(provider) as url, recording(path):
        client: Any = (
            openai.OpenAI(api_key="sk-test", base_url=url, http_client=http)
            if provider == "openai"
            else anthropic.Anthropic(api_key="sk-ant-test", base_url=url, http_client=http)
        )
        answer: str = module.run_agent(QUESTION, client)
    return answer
