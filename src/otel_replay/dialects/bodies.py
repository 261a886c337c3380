"""Provider request and response bodies -> GenAI attributes.

Some stacks record the raw body of a model call instead of (or besides) its
messages: OpenInference's ``input.value``/``output.value``, logfire's
``request_data``/``response_data``.  The bodies read here: OpenAI Chat
Completions and Responses, Anthropic Messages; requests of Amazon Bedrock's
Converse too (the replay server reads them).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import json_text
from .. import messages as M
from .span import GenAI, put

#: Request body field -> GenAI ``gen_ai.request.<name>``.
_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "max_tokens": "max_tokens",
    "max_completion_tokens": "max_tokens",
    "max_output_tokens": "max_tokens",
    "seed": "seed",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
    "stop": "stop_sequences",
    "stop_sequences": "stop_sequences",
    "n": "choice.count",
    "stream": "stream",
    # Bedrock Converse's ``inferenceConfig``
    "maxTokens": "max_tokens",
    "topP": "top_p",
    "stopSequences": "stop_sequences",
}


def params(body: Mapping[str, Any]) -> GenAI:
    """``gen_ai.request.*`` from request parameters (a body or invocation parameters)."""
    out: GenAI = {}
    for field, name in _PARAMS.items():
        if field not in body:
            continue  # most are not given: told before reading or checking them
        value = body[field]
        if isinstance(value, str) and name == "stop_sequences":
            value = [value]
        if isinstance(value, (int, float, str, list)) and not isinstance(value, dict):
            put(out, A.REQUEST_PREFIX + name, value)
    return out


def request(body: Any) -> GenAI:
    """GenAI attributes of a request body (model, params, system, messages, tools)."""
    if type(body) is not dict and not isinstance(body, Mapping):  # (dict: no ABC check)
        return {}
    out: GenAI = {}
    put(out, A.REQUEST_MODEL, body.get("model") if isinstance(body.get("model"), str) else None)
    out.update({k: v for k, v in params(body).items() if k not in out})
    config = body.get("inferenceConfig")  # Bedrock Converse: the parameters apart
    if isinstance(config, Mapping):
        out.update({k: v for k, v in params(config).items() if k not in out})
    system = body.get("system", body.get("instructions"))
    if isinstance(system, (str, list)):
        put(out, A.SYSTEM_INSTRUCTIONS, M.system_parts(system))
    if isinstance(body.get("messages"), list):
        put(out, A.INPUT_MESSAGES, messages(body["messages"]))
    elif "input" in body:
        put(out, A.INPUT_MESSAGES, M.from_items(body["input"]))
    tools = body.get("tools")
    config = body.get("toolConfig")  # Bedrock Converse: ``toolConfig.tools``
    if tools is None and isinstance(config, Mapping):
        tools = config.get("tools")
    if isinstance(tools, list):
        put(
            out, A.TOOL_DEFINITIONS, [M.tool_definition(t) for t in tools if isinstance(t, Mapping)]
        )
    return out


def messages(items: list[Any]) -> list[dict[str, Any]]:
    """Chat-style messages (OpenAI or Anthropic) in the GenAI shape."""
    return [
        M.normalize_message(m) for m in items if type(m) is dict or isinstance(m, Mapping)
    ]  # (a dict is a Mapping, told without the ABC check)


def usage_details(usage: Mapping[str, Any]) -> GenAI:
    """Reasoning and prompt-cache token counts of an OpenAI or Anthropic ``usage`` object."""

    def detail(parent: str, key: str) -> Any:
        details = usage.get(parent)
        return details.get(key) if isinstance(details, Mapping) else None

    out: GenAI = {}
    for key, value in (
        (
            A.USAGE_REASONING_OUTPUT_TOKENS,
            detail("completion_tokens_details", "reasoning_tokens")  # Chat Completions
            or detail("output_tokens_details", "reasoning_tokens"),  # Responses
        ),
        (
            A.USAGE_CACHE_READ_INPUT_TOKENS,
            detail("prompt_tokens_details", "cached_tokens")
            or detail("input_tokens_details", "cached_tokens")
            or usage.get("cache_read_input_tokens"),  # Anthropic
        ),
        (A.USAGE_CACHE_CREATION_INPUT_TOKENS, usage.get("cache_creation_input_tokens")),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            out[key] = value
    return out


def _response_object(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and value.get("object") == "response"
        and isinstance(value.get("output"), list)
    )


def response(body: Any) -> GenAI:
    """GenAI attributes of a response body: output messages, finish reasons, usage, ids.

    A list is read as the output messages themselves, or, when it holds whole
    Responses ``Response`` objects (openai-agents streaming a chat model under
    OpenInference), as their output items, or, when it holds tool calls alone
    (CrewAI's events: Chat Completions ``tool_calls`` or ``{id, name,
    arguments}``), as the answer that makes them.
    """
    if isinstance(body, list):
        out: GenAI = {}
        if body and all(_response_object(b) for b in body):
            put(out, A.OUTPUT_MESSAGES, M.from_items([i for b in body for i in b["output"]]))
        elif body and all(_is_tool_call(b) for b in body):
            put(out, A.OUTPUT_MESSAGES, messages([{"role": "assistant", "tool_calls": body}]))
        else:
            put(out, A.OUTPUT_MESSAGES, messages(body))
        return out
    if not isinstance(body, Mapping):
        return {}
    out = {}
    put(out, A.RESPONSE_ID, body.get("id") if isinstance(body.get("id"), str) else None)
    put(out, A.RESPONSE_MODEL, body.get("model") if isinstance(body.get("model"), str) else None)
    usage = body.get("usage")
    if isinstance(usage, Mapping):
        put(out, A.USAGE_INPUT_TOKENS, usage.get("input_tokens", usage.get("prompt_tokens")))
        put(out, A.USAGE_OUTPUT_TOKENS, usage.get("output_tokens", usage.get("completion_tokens")))
        out.update(usage_details(usage))
    if isinstance(body.get("choices"), list):  # OpenAI Chat Completions
        outputs, reasons = [], []
        for choice in body["choices"]:
            if not isinstance(choice, Mapping) or not isinstance(choice.get("message"), Mapping):
                continue
            msg = M.normalize_message(choice["message"])
            if choice.get("finish_reason"):
                msg["finish_reason"] = choice["finish_reason"]
                reasons.append(choice["finish_reason"])
            outputs.append(msg)
        put(out, A.OUTPUT_MESSAGES, outputs)
        put(out, A.RESPONSE_FINISH_REASONS, reasons)
    elif isinstance(body.get("output"), list):  # OpenAI Responses
        put(out, A.OUTPUT_MESSAGES, M.from_items(body["output"]))
    elif isinstance(body.get("content"), list):  # Anthropic Messages
        msg = M.normalize_message(
            {"role": body.get("role", "assistant"), "content": body["content"]}
        )
        if body.get("stop_reason"):
            msg["finish_reason"] = body["stop_reason"]
            put(out, A.RESPONSE_FINISH_REASONS, [body["stop_reason"]])
        put(out, A.OUTPUT_MESSAGES, [msg])
    elif isinstance(body.get("message"), Mapping):  # one message (logfire's response_data)
        put(out, A.OUTPUT_MESSAGES, [M.normalize_message(body["message"])])
    return out


def _is_tool_call(item: Any) -> bool:
    """A tool call object: ``{id, type: function, function: {name, arguments}}`` or
    ``{id, name, arguments}``."""
    if not isinstance(item, Mapping) or "role" in item or not isinstance(item.get("id"), str):
        return False
    if item.get("type", "function") != "function":
        return False
    fn = item.get("function")
    fn = fn if isinstance(fn, Mapping) else item
    return isinstance(fn.get("name"), str) and "arguments" in fn


def sse_response(data: bytes) -> dict[str, Any] | None:
    """A streamed answer (server-sent events) folded into the JSON body the API would have sent.

    OpenAI Chat Completions chunks, Anthropic Messages events and OpenAI
    Responses events (whose ``response.completed`` carries the whole
    response).  None when the stream is none of those.
    """
    events: list[dict[str, Any]] = []
    # Lines split as bytes: an SSE line ends at CR or LF only, and text's splitlines also
    # ends one at U+0085, U+2028 and the like, which a JSON string may hold unescaped.
    for raw in data.splitlines():
        line = raw.decode("utf-8", "replace")
        if not line.startswith("data:"):
            continue
        text = line[5:].strip()
        if not text or text == "[DONE]":
            continue
        try:
            event = json_text.loads(text)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    if not events:
        return None
    if events[0].get("object") == "chat.completion.chunk":
        return _fold_chat(events)
    kinds = [e.get("type") for e in events]
    if "message_start" in kinds:
        return _fold_anthropic(events)
    for event in reversed(events):
        if event.get("type") in ("response.completed", "response.incomplete"):
            response = event.get("response")
            return dict(response) if isinstance(response, Mapping) else None
    return None


def _fold_chat(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """Chunks folded into the answer, each choice (``n`` > 1) apart by its index."""
    folded: dict[int, dict[str, Any]] = {}  # choice index -> its text, calls, finish
    usage = None
    for chunk in chunks:
        if isinstance(chunk.get("usage"), Mapping):
            usage = chunk["usage"]
        for choice in M.listed(chunk.get("choices")):
            if not isinstance(choice, Mapping):
                continue
            at = choice.get("index", 0)
            one = folded.setdefault(
                at if type(at) is int else 0, {"text": [], "calls": {}, "finish": None}
            )
            delta = choice.get("delta") or {}
            one["text"].append(delta.get("content") or "")
            calls = one["calls"]
            for tc in M.listed(delta.get("tool_calls")):
                slot = calls.setdefault(
                    int(tc.get("index", 0)),
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] = tc.get("id") or slot["id"]
                fn = tc.get("function") or {}
                slot["function"]["name"] += fn.get("name") or ""
                slot["function"]["arguments"] += fn.get("arguments") or ""
            one["finish"] = choice.get("finish_reason") or one["finish"]
    choices = []
    for at in sorted(folded) or [0]:
        one = folded.get(at) or {"text": [], "calls": {}, "finish": None}
        message: dict[str, Any] = {"role": "assistant", "content": "".join(one["text"]) or None}
        if one["calls"]:
            message["tool_calls"] = [one["calls"][i] for i in sorted(one["calls"])]
        choices.append({"index": at, "message": message, "finish_reason": one["finish"]})
    first = chunks[0]
    return {"id": first.get("id"), "model": first.get("model"), "choices": choices, "usage": usage}


def _fold_anthropic(events: list[dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    usage: dict[str, Any] = {}
    for e in events:
        kind = e.get("type")
        if kind == "message_start" and isinstance(e.get("message"), Mapping):
            message = dict(e["message"])
            usage.update(message.get("usage") or {})
        elif kind == "content_block_start":
            blocks[int(e.get("index", 0))] = dict(e.get("content_block") or {})
        elif kind == "content_block_delta":
            i, delta = int(e.get("index", 0)), e.get("delta") or {}
            block = blocks.setdefault(i, {"type": "text", "text": ""})
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + (delta.get("text") or "")
            elif delta.get("type") == "input_json_delta":
                partial[i] = partial.get(i, "") + (delta.get("partial_json") or "")
            elif delta.get("type") == "thinking_delta":
                block["thinking"] = block.get("thinking", "") + (delta.get("thinking") or "")
        elif kind == "message_delta":
            message.update(e.get("delta") or {})
            usage.update(e.get("usage") or {})
    for i, text in partial.items():
        try:
            blocks[i]["input"] = json_text.loads(text) if text else {}
        except ValueError:
            blocks[i]["input"] = {}
    message["content"] = [blocks[i] for i in sorted(blocks)]
    message["usage"] = usage
    return message
