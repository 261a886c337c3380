"""A deterministic fake model server (stdlib) for the conformance scenario, with its ground truth.

Endpoints, on 127.0.0.1 only, each in JSON or, with ``"stream": true``, in SSE:

- ``POST /v1/chat/completions``: OpenAI Chat Completions
- ``POST /v1/responses``: OpenAI Responses
- ``POST /v1/messages``: Anthropic Messages
- ``POST /model/{modelId}/converse``: Amazon Bedrock Converse; ``.../converse-stream``:
  ConverseStream, a binary ``application/vnd.amazon.eventstream`` (logged as its events)
- ``GET /v1/models``: a one-model listing; ``GET /healthz``: readiness (not logged)

The model's side of the conversation is scripted by a :class:`scenario.Scenario`
(the default one unless the server is given another): the
turn follows from the number of tool results the request carries (in the
default: two parallel calls, one of which the agent fails; one more call; the answer),
or, in a conversation kept as text (no tool messages), from its
``Observation:``/``Error:`` blocks, one per turn; the order id comes from
the first user message, so that several runs in one process each get their
own conversation.  A request without tools gets the final answer; one that
declares a ``final_answer`` tool gets it as a call of that tool.

A scenario may script failures (:class:`scenario.Retry`): the first request of
a turn in each run is answered with HTTP 429 (``retry-after: 0``), 500 or 503
and an error body in the API's shape, which the client SDK retries; the
retried request gets the turn's answer.

Every request is appended to a JSON-lines log, the ground truth of a case:
the exact request body as text (``body_raw``), the order it is about
(``conversation``), the ``turn``, and the exact response body sent (the whole
SSE text for a stream); a request failed on purpose also has its ``status``
and ``failed: true`` (it is an attempt, not a model call of the run).

    python -m tests.conformance.server --port 18100 --log server.jsonl
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import struct
import threading
import urllib.parse
import zlib
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from tests.conformance import scenario

#: Fixed creation time (2026-01-01T00:00:00Z): the bodies do not depend on the clock.
CREATED = 1767225600
#: (input tokens, output tokens) of each turn.
USAGE = {0: (182, 41), 1: (263, 29), 2: (318, 57)}
RESPONSE_MODELS = {
    "gpt-4o-mini": "gpt-4o-mini-2024-07-18",
    "claude-sonnet-4-5": "claude-sonnet-4-5-20250929",
}
#: The content type of a binary event stream (Bedrock's ConverseStream).
EVENT_STREAM = "application/vnd.amazon.eventstream"
#: How often a serving thread looks for its shutdown.
POLL_S = 0.05
#: Characters per streamed piece of tool-call arguments.
ARGUMENT_PIECE = 7
#: The tool some frameworks take their final answer through (smolagents).
FINAL_ANSWER_TOOL = "final_answer"
#: A block of tool feedback in a text conversation (see :func:`_text_feedback`).
_FEEDBACK = re.compile(r"^(?:Observation|Error):", re.MULTILINE)


def compact(obj: Any) -> str:
    """JSON as the real APIs send it: no spaces, UTF-8 characters as they are."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def words(text: str) -> list[str]:
    """``text`` cut after each space: the deltas a streamed answer comes in."""
    out = [w + " " for w in text.split(" ")]
    out[-1] = out[-1][:-1]
    return [w for w in out if w]


def deltas(t: Turn, text: str) -> list[str]:
    """The deltas a streamed text comes in: its words, or the scenario's pieces."""
    piece = t.scn.parts.piece
    return pieces(text, piece) if piece else words(text)


def argument_deltas(t: Turn, text: str) -> list[str]:
    """The deltas streamed tool-call arguments come in (the scenario's pieces, else 7 characters)."""
    return pieces(text, t.scn.parts.piece or ARGUMENT_PIECE)


def _texts(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return ""


class Turn:
    """What the model answers one request: the scripted calls or the final text."""

    def __init__(
        self, body: dict[str, Any], tool_results: int, scn: scenario.Scenario = scenario.DEFAULT
    ) -> None:
        self.body, self.scn = body, scn
        self.order_id = scenario.order_in(_first_user_text(body))
        self.react = not body.get("tools") and _asks_react(body)
        self.code = not body.get("tools") and not self.react and _asks_code(body)
        if self.react or self.code:
            # A ReAct prompt: one action per answer, the results come back as text.
            self.turn = _text_feedback(body)
        elif not body.get("tools"):
            self.turn = len(scn.turns)
        elif tool_results:
            self.turn = scn.turn_of(tool_results)
        else:
            self.turn = min(_text_feedback(body, blocks=True), len(scn.turns))
        #: (the name the request declares, arguments, their spelling, call id) per call.
        self.calls = [
            (_declared(body, c.tool), args, c.spelling, self._id(i))
            for i, (c, args) in enumerate(scn.calls_of_turn(self.turn, self.order_id))
        ]
        if not self.calls and FINAL_ANSWER_TOOL in _declared_names(body):
            # A framework that takes its answer as a tool call (smolagents) gets it so.
            answer = {"answer": scn.final_answer(self.order_id)}
            final_id = (
                f"call_{FINAL_ANSWER_TOOL}_{scenario.digits(self.order_id)}"
                if scn.ids == "named"
                else scn.call_id(self.turn, 0, self.order_id)
            )
            self.calls = [(FINAL_ANSWER_TOOL, answer, scenario.Spelling(), final_id)]
        if self.react or self.code:
            self.calls = []
            make = scn.react_text if self.react else scn.code_text
            self.text = _stopped(make(self.turn, self.order_id), body.get("stop"))
        else:
            self.text = None if self.calls else scn.final_answer(self.order_id)
        #: Text beside the calls (Chat Completions and Responses; Anthropic has its own).
        self.beside = scn.beside if self.calls else None
        self.model = RESPONSE_MODELS.get(body.get("model", ""), body.get("model"))
        self.suffix = f"{scenario.digits(self.order_id)}_{self.turn + 1}"

    @property
    def final(self) -> bool:
        """Whether this answer ends the run (the answer, as text or as a ``final_answer`` call)."""
        answer = self.scn.final_answer(self.order_id)
        return (self.text is not None and answer in self.text) or any(
            c[0] == FINAL_ANSWER_TOOL for c in self.calls
        )

    def _id(self, index: int) -> str:
        """The model's id of this turn's ``index``-th call (the same in every API shape)."""
        return self.scn.call_id(self.turn, index, self.order_id)

    def call_id_on(self, api: str, index: int) -> str:
        """The id of this turn's ``index``-th call on ``api`` (``chat``, ``responses``,
        ``anthropic``, ``converse``): a ``named`` id takes Anthropic's ``toolu`` prefix
        there (Bedrock's ``tooluse`` on ``converse``), and an
        ``empty`` one is a ``counter`` id where the API wants an id."""
        call_id = self.calls[index][3]
        if api in ("anthropic", "converse") and self.scn.ids == "named":
            prefix = "toolu" if api == "anthropic" else "tooluse"
            return f"{prefix}_{call_id.split('_', 1)[1]}"
        if api != "chat" and not call_id:
            return f"call_{index}"
        return call_id

    def item_id(self, index: int) -> str:
        """The id of the Responses ``function_call`` item of this turn's ``index``-th call
        (unique in its run, whatever the call ids are)."""
        call_id = self.calls[index][3]
        if self.scn.ids == "named":
            return f"fc_{call_id.split('_', 1)[1]}_{self.turn + 1}"
        return f"fc_{scenario.digits(self.order_id)}_{self.turn + 1}_{index}"

    @property
    def usage(self) -> tuple[int, int]:
        return USAGE[min(self.turn, 2)]


def is_converse(path: str) -> bool:
    """Whether ``path`` is Bedrock's Converse API (``/model/{modelId}/converse[-stream]``)."""
    return path.endswith(("/converse", "/converse-stream"))


def _declared_names(body: dict[str, Any]) -> list[str]:
    declared = []
    for tool in body.get("tools") or []:
        if isinstance(tool, dict):
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if isinstance(fn.get("name"), str):
                declared.append(fn["name"])
    return declared


def _text_feedback(body: dict[str, Any], blocks: bool = False) -> int:
    """How many times the agent told the model, in plain text, what its tools did.

    Frameworks that keep the conversation as text (smolagents, ReAct prompts)
    send no tool messages: each turn's results come back in a message of its
    own (or appended to the model's answer) as an ``Observation:`` (or, when
    a tool raised, ``Error:``) block.  A message counts once, whatever
    instructions it repeats; the system prompt's examples are not counted.

    ``blocks``: each block counts, not each message.  An agent that declares
    its tools (smolagents' ``ToolCallingAgent``) keeps no trace of a step whose
    tool raised but its ``Error:`` block, which it joins to the message before
    (the previous step's ``Observation:``): that message holds two turns.  A
    code agent's step may end in an error after printing, which it sends as
    ``Observation:`` (the logs) then ``Error:``, one turn: it counts messages.
    """
    items = body.get("messages", body.get("input"))
    if not isinstance(items, list):
        return 0
    texts = [
        _texts(m.get("content"))
        for m in items
        if isinstance(m, dict) and m.get("role") not in ("system", "developer")
    ]
    if blocks:
        return sum(len(_FEEDBACK.findall(t)) for t in texts)
    return sum(1 for t in texts if _FEEDBACK.search(t))


def _prompt_texts(body: dict[str, Any]) -> list[str]:
    """The texts of a request's messages and system prompt."""
    items = body.get("messages", body.get("input"))
    texts = [_texts(body.get("system"))]
    if isinstance(items, list):
        texts += [_texts(m.get("content")) for m in items if isinstance(m, dict)]
    return texts


def _asks_react(body: dict[str, Any]) -> bool:
    """A request whose prompt asks for ReAct's ``Action Input:`` lines, not tool calls."""
    return any(scenario.REACT_ACTION in t for t in _prompt_texts(body))


def _asks_code(body: dict[str, Any]) -> bool:
    """A request whose prompt asks for code that calls the tools (smolagents' CodeAgent)."""
    return any(scenario.CODE_OPEN in t and "final_answer(" in t for t in _prompt_texts(body))


def _stopped(text: str, stop: Any) -> str:
    """``text`` cut before the first of the request's stop sequences, as the APIs do."""
    for seq in [stop] if isinstance(stop, str) else stop if isinstance(stop, list) else []:
        if isinstance(seq, str) and seq and seq in text:
            text = text[: text.index(seq)]
    return text


def _declared(body: dict[str, Any], name: str) -> str:
    """The request's name for the scenario's tool ``name``, as a model would call it.

    Frameworks may declare a tool under a longer name (Semantic Kernel:
    ``OrderPlugin-lookup_order``); the model calls the name it was given.
    """
    declared = _declared_names(body)
    if name in declared:
        return name
    longer = [d for d in declared if scenario.tool_of(d) == name]
    return longer[0] if len(longer) == 1 else name


def _first_user_text(body: dict[str, Any]) -> str:
    items = body.get("messages", body.get("input"))
    if isinstance(items, str):
        return items
    for m in items or []:
        if isinstance(m, dict) and m.get("role") == "user":
            text = _texts(m.get("content"))
            if text:
                return text
    return ""


# --- OpenAI Chat Completions --------------------------------------------------------------


def chat_results(body: dict[str, Any]) -> int:
    return sum(1 for m in body.get("messages") or [] if m.get("role") == "tool")


def chat_usage(t: Turn) -> dict[str, Any]:
    p, c = t.usage
    return {
        "prompt_tokens": p,
        "completion_tokens": c,
        "total_tokens": p + c,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def _chat_base(t: Turn, kind: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{t.suffix}",
        "object": kind,
        "created": CREATED,
        "model": t.model,
        "system_fingerprint": "fp_conformance",
        "service_tier": "default",
    }


def chat_json(t: Turn) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": t.text if t.text is not None else t.beside,
        "refusal": None,
        "annotations": [],
    }
    if t.calls:
        message["tool_calls"] = [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": spelling.spell(args)},
            }
            for name, args, spelling, call_id in t.calls
        ]
    finish = "tool_calls" if t.calls else "stop"
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": finish}
    return {**_chat_base(t, "chat.completion"), "choices": [choice], "usage": chat_usage(t)}


def chat_sse(t: Turn) -> Iterator[str]:
    include_usage = bool((t.body.get("stream_options") or {}).get("include_usage"))
    base = _chat_base(t, "chat.completion.chunk")

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        d = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None}]}
        d["choices"][0]["finish_reason"] = finish
        if include_usage:
            d["usage"] = None
        return f"data: {compact(d)}\n\n"

    if t.calls:
        if t.beside is not None:
            yield chunk({"role": "assistant", "content": "", "refusal": None})
            for w in deltas(t, t.beside):
                yield chunk({"content": w})
        for i, (name, args, spelling, call_id) in enumerate(t.calls):
            start = {
                "index": i,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            first = i == 0 and t.beside is None
            head = {"role": "assistant", "content": None, "refusal": None} if first else {}
            yield chunk({**head, "tool_calls": [start]})
            for piece in argument_deltas(t, spelling.spell(args)):
                yield chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
        yield chunk({}, "tool_calls")
    else:
        assert t.text is not None
        yield chunk({"role": "assistant", "content": "", "refusal": None})
        for w in deltas(t, t.text):
            yield chunk({"content": w})
        yield chunk({}, "stop")
    if include_usage:
        yield f"data: {compact({**base, 'choices': [], 'usage': chat_usage(t)})}\n\n"
    yield "data: [DONE]\n\n"


# --- OpenAI Responses ------------------------------------------------------------------


def responses_results(body: dict[str, Any]) -> int:
    items = body.get("input")
    if not isinstance(items, list):
        return 0
    return sum(1 for i in items if isinstance(i, dict) and i.get("type") == "function_call_output")


def _responses_message(t: Turn, text: str | None) -> dict[str, Any]:
    texts = [text] if text is None else t.scn.parts.cut(text)
    return {
        "type": "message",
        "id": f"msg_{t.suffix}",
        "status": "completed",
        "role": "assistant",
        "content": [
            {"type": "output_text", "text": p, "annotations": [], "logprobs": []} for p in texts
        ],
    }


def responses_output(t: Turn) -> list[dict[str, Any]]:
    if t.calls:
        beside = [_responses_message(t, t.beside)] if t.beside is not None else []
        return beside + [
            {
                "type": "function_call",
                "id": t.item_id(i),
                "call_id": t.call_id_on("responses", i),
                "name": name,
                "arguments": spelling.spell(args),
                "status": "completed",
            }
            for i, (name, args, spelling, _) in enumerate(t.calls)
        ]
    return [_responses_message(t, t.text)]


def responses_obj(
    t: Turn, status: str = "completed", output: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    b = t.body
    p, c = t.usage
    usage = {
        "input_tokens": p,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": c,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": p + c,
    }
    return {
        "id": f"resp_{t.suffix}",
        "object": "response",
        "created_at": CREATED,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": b.get("instructions"),
        "max_output_tokens": b.get("max_output_tokens"),
        "model": t.model,
        "output": responses_output(t) if output is None else output,
        "parallel_tool_calls": b.get("parallel_tool_calls", True),
        "previous_response_id": None,
        "reasoning": {"effort": None, "summary": None},
        "service_tier": "default",
        "store": False,
        "temperature": b.get("temperature", 1.0),
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": b.get("tool_choice", "auto"),
        "tools": b.get("tools") or [],
        "top_p": b.get("top_p", 1.0),
        "truncation": "disabled",
        "usage": usage if status == "completed" else None,
        "user": None,
        "metadata": {},
    }


def responses_sse(t: Turn) -> Iterator[str]:
    seq = 0

    def event(kind: str, **payload: Any) -> str:
        nonlocal seq
        d = {"type": kind, "sequence_number": seq, **payload}
        seq += 1
        return f"event: {kind}\ndata: {compact(d)}\n\n"

    yield event("response.created", response=responses_obj(t, "in_progress", []))
    yield event("response.in_progress", response=responses_obj(t, "in_progress", []))
    for index, item in enumerate(responses_output(t)):
        at = {"item_id": item["id"], "output_index": index}
        if item["type"] == "function_call":
            added = {**item, "arguments": "", "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=added)
            for piece in argument_deltas(t, item["arguments"]):
                yield event("response.function_call_arguments.delta", **at, delta=piece)
            yield event("response.function_call_arguments.done", **at, arguments=item["arguments"])
        else:
            added = {**item, "content": [], "status": "in_progress"}
            yield event("response.output_item.added", output_index=index, item=added)
            for ci, part in enumerate(item["content"]):
                empty = {**part, "text": ""}
                yield event("response.content_part.added", **at, content_index=ci, part=empty)
                for w in deltas(t, part["text"]):
                    yield event(
                        "response.output_text.delta", **at, content_index=ci, delta=w, logprobs=[]
                    )
                yield event(
                    "response.output_text.done",
                    **at,
                    content_index=ci,
                    text=part["text"],
                    logprobs=[],
                )
                yield event("response.content_part.done", **at, content_index=ci, part=part)
        yield event("response.output_item.done", output_index=index, item=item)
    yield event("response.completed", response=responses_obj(t))


# --- Anthropic Messages ----------------------------------------------------------------


def anthropic_results(body: dict[str, Any]) -> int:
    return sum(
        1
        for m in body.get("messages") or []
        if m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and b.get("type") == "tool_result"
    )


def anthropic_content(t: Turn) -> tuple[list[dict[str, Any]], str]:
    if not t.calls:
        assert t.text is not None
        return [{"type": "text", "text": p} for p in t.scn.parts.cut(t.text)], "end_turn"
    beside = t.scn.anthropic_beside
    blocks: list[dict[str, Any]] = (
        [] if beside is None else [{"type": "text", "text": p} for p in t.scn.parts.cut(beside)]
    )
    for i, (name, args, spelling, _) in enumerate(t.calls):
        tool_id = t.call_id_on("anthropic", i)
        blocks.append(
            {"type": "tool_use", "id": tool_id, "name": name, "input": spelling.ordered(args)}
        )
    return blocks, "tool_use"


def anthropic_usage(t: Turn, output: int) -> dict[str, Any]:
    return {
        "input_tokens": t.usage[0],
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 0,
        "output_tokens": output,
        "service_tier": "standard",
    }


def anthropic_json(t: Turn) -> dict[str, Any]:
    content, stop = anthropic_content(t)
    return {
        "id": f"msg_{t.suffix}",
        "type": "message",
        "role": "assistant",
        "model": t.model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": anthropic_usage(t, t.usage[1]),
    }


def anthropic_sse(t: Turn) -> Iterator[str]:
    content, stop = anthropic_content(t)

    def event(kind: str, **payload: Any) -> str:
        return f"event: {kind}\ndata: {compact({'type': kind, **payload})}\n\n"

    start = {**anthropic_json(t), "content": [], "stop_reason": None}
    start["usage"] = anthropic_usage(t, 1)
    yield event("message_start", message=start)
    calls = iter(t.calls)
    for index, block in enumerate(content):
        if block["type"] == "text":
            yield event(
                "content_block_start", index=index, content_block={"type": "text", "text": ""}
            )
            if index == 0:
                yield event("ping")
            for w in deltas(t, block["text"]):
                yield event(
                    "content_block_delta", index=index, delta={"type": "text_delta", "text": w}
                )
        else:
            empty = {**block, "input": {}}
            yield event("content_block_start", index=index, content_block=empty)
            _, args, spelling, _ = next(calls)
            for piece in argument_deltas(t, spelling.spell(args)):
                delta = {"type": "input_json_delta", "partial_json": piece}
                yield event("content_block_delta", index=index, delta=delta)
        yield event("content_block_stop", index=index)
    yield event(
        "message_delta",
        delta={"stop_reason": stop, "stop_sequence": None},
        usage={"output_tokens": t.usage[1]},
    )
    yield event("message_stop")


# --- Amazon Bedrock Converse -------------------------------------------------------------

#: The latency a Converse answer reports (``metrics.latencyMs``).
CONVERSE_LATENCY_MS = 412


def converse_model(path: str) -> str:
    """The model id of a Converse path (``/model/{modelId}/converse[-stream]``), unquoted."""
    return urllib.parse.unquote(path.split("/model/", 1)[-1].rsplit("/", 1)[0])


def converse_view(body: dict[str, Any], path: str) -> dict[str, Any]:
    """A Converse request as :class:`Turn` reads requests: its tools' specs as ``tools``,
    the model of its path as ``model``, whether it streams as ``stream``."""
    config = body.get("toolConfig") if isinstance(body.get("toolConfig"), dict) else {}
    tools = [
        t["toolSpec"] for t in config.get("tools") or [] if isinstance(t, dict) and "toolSpec" in t
    ]
    return {
        **body,
        "tools": tools,
        "model": converse_model(path),
        "stream": path.endswith("/converse-stream"),
    }


def converse_results(body: dict[str, Any]) -> int:
    return sum(
        1
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user" and isinstance(m.get("content"), list)
        for b in m["content"]
        if isinstance(b, dict) and "toolResult" in b
    )


def converse_content(t: Turn) -> tuple[list[dict[str, Any]], str]:
    """The answer's content blocks (text in the scenario's parts, the text beside calls as
    on Anthropic Messages, whose models Converse serves) and its stop reason."""
    if not t.calls:
        assert t.text is not None
        return [{"text": p} for p in t.scn.parts.cut(t.text)], "end_turn"
    beside = t.scn.anthropic_beside
    blocks: list[dict[str, Any]] = (
        [] if beside is None else [{"text": p} for p in t.scn.parts.cut(beside)]
    )
    for i, (name, args, spelling, _) in enumerate(t.calls):
        use = {
            "toolUseId": t.call_id_on("converse", i),
            "name": name,
            "input": spelling.ordered(args),
        }
        blocks.append({"toolUse": use})
    return blocks, "tool_use"


def converse_usage(t: Turn) -> dict[str, Any]:
    p, c = t.usage
    return {"inputTokens": p, "outputTokens": c, "totalTokens": p + c}


def converse_json(t: Turn) -> dict[str, Any]:
    content, stop = converse_content(t)
    return {
        "output": {"message": {"role": "assistant", "content": content}},
        "stopReason": stop,
        "usage": converse_usage(t),
        "metrics": {"latencyMs": CONVERSE_LATENCY_MS},
    }


def converse_events(t: Turn) -> Iterator[tuple[str, dict[str, Any]]]:
    """A ConverseStream answer's events, ``(event type, payload)``: a text block is its
    deltas alone (as Bedrock sends it), a tool use starts with its id and name and streams
    its input as JSON text in pieces (the scenario's spelling)."""
    content, stop = converse_content(t)
    yield "messageStart", {"role": "assistant"}
    calls = iter(t.calls)
    for index, block in enumerate(content):
        at = {"contentBlockIndex": index}
        if "text" in block:
            for w in deltas(t, block["text"]):
                yield "contentBlockDelta", {**at, "delta": {"text": w}}
        else:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            yield "contentBlockStart", {**at, "start": start}
            _, args, spelling, _ = next(calls)
            for piece in argument_deltas(t, spelling.spell(args)):
                yield "contentBlockDelta", {**at, "delta": {"toolUse": {"input": piece}}}
        yield "contentBlockStop", at
    yield "messageStop", {"stopReason": stop}
    metrics = {"latencyMs": CONVERSE_LATENCY_MS}
    yield "metadata", {"usage": converse_usage(t), "metrics": metrics}


def converse_logged(kind: str, payload: str) -> str:
    """How the log holds one event of a Converse stream (its frames are binary): ``event:``
    its type, ``data:`` ``{type: payload}`` as boto3 yields it."""
    return f'event: {kind}\ndata: {{"{kind}":{payload}}}\n\n'


def converse_sse(t: Turn) -> Iterator[str]:
    """A ConverseStream answer as the log holds it (see :func:`converse_logged`)."""
    for kind, payload in converse_events(t):
        yield converse_logged(kind, compact(payload))


def _header(name: str, val: str) -> bytes:
    raw = val.encode()
    return bytes([len(name)]) + name.encode() + b"\x07" + struct.pack(">H", len(raw)) + raw


def event_frame(headers: dict[str, str], payload: bytes) -> bytes:
    """One ``application/vnd.amazon.eventstream`` message: prelude (total and headers
    lengths) and its CRC32, string headers, payload, message CRC32."""
    head = b"".join(_header(k, v) for k, v in headers.items())
    prelude = struct.pack(">II", 16 + len(head) + len(payload), len(head))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + payload
    return message + struct.pack(">I", zlib.crc32(message))


def converse_frames(t: Turn) -> list[tuple[bytes, str]]:
    """A ConverseStream answer's frames, each with the text the log holds for it."""
    out = []
    for kind, payload in converse_events(t):
        headers = {
            ":event-type": kind,
            ":content-type": "application/json",
            ":message-type": "event",
        }
        data = compact(payload)
        out.append((event_frame(headers, data.encode()), converse_logged(kind, data)))
    return out


# --- scripted failures -----------------------------------------------------------------

#: What each scripted failure's status says, per API shape: (OpenAI type and code, Anthropic type).
_FAILURES = {
    429: (
        "Rate limit reached for gpt-4o-mini: retry after 0 s.",
        "rate_limit_exceeded",
        "rate_limit_error",
    ),
    500: ("The server had an error while processing your request.", "server_error", "api_error"),
    503: (
        "The engine is currently overloaded, please try again.",
        "server_error",
        "overloaded_error",
    ),
}


#: Bedrock's error type (``x-amzn-ErrorType``) for each scripted failure's status.
_BEDROCK_ERRORS = {
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}


def failure_body(path: str, status: int) -> str:
    """The error body a real API answers ``status`` with, in the shape of the API at ``path``."""
    message, code, kind = _FAILURES[status]
    if is_converse(path):
        return compact({"message": message})
    if path.endswith("/messages"):
        return compact({"type": "error", "error": {"type": kind, "message": message}})
    error = {"message": message, "type": "requests" if status == 429 else code, "param": None}
    return compact({"error": {**error, "code": code}})


#: Headers of a scripted failure: retry now (``retry-after: 0``; ``retry-after-ms: 1`` for
#: the SDKs that read it first, so that a retry waits no backoff), and ``x-should-retry``
#: as the APIs send it.
FAILURE_HEADERS = [("retry-after", "0"), ("retry-after-ms", "1"), ("x-should-retry", "true")]


# --- HTTP ------------------------------------------------------------------------------

Route = tuple[
    Callable[[dict[str, Any]], int],
    Callable[[Turn], dict[str, Any]],
    Callable[[Turn], Iterator[str]],
]
ROUTES: dict[str, Route] = {
    "/chat/completions": (chat_results, chat_json, chat_sse),
    "/responses": (responses_results, responses_obj, responses_sse),
    "/messages": (anthropic_results, anthropic_json, anthropic_sse),
    "/converse": (converse_results, converse_json, converse_sse),
    "/converse-stream": (converse_results, converse_json, converse_sse),
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # close-delimited: the simplest framing for SSE
    server_version = "conformance-model/1.0"
    sys_version = ""
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(
        self, status: int, ctype: str, body: str, headers: list[tuple[str, str]] | None = None
    ) -> str:
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_conformance")
        for name, val in headers or []:
            self.send_header(name, val)
        self.end_headers()
        self.wfile.write(data)
        return body

    def _send_sse(self, events: Iterator[str], write: int = 0) -> str:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("x-request-id", "req_conformance")
        self.end_headers()
        sent = []
        for e in events:
            data = e.encode()
            # ``write`` bytes at a time: a character or an event may span two writes.
            for at in range(0, len(data), write or len(data) or 1):
                self.wfile.write(data[at : at + (write or len(data))])
                self.wfile.flush()
            sent.append(e)
        return "".join(sent)

    def _send_cut(
        self, cut: str, whole: str, stream: bool, frames: list[tuple[bytes, str]] | None = None
    ) -> str:
        """Close the connection ``before`` any answer, or partway through ``whole`` (``body``,
        ``stream``: half its bytes, a character possibly cut, of the length promised); what
        was sent.  ``frames``: a binary event stream's (frame, logged text), cut so."""
        self.close_connection = True
        if cut == "before":
            return ""
        if frames is not None:
            return self._send_frames_cut(frames)
        data = whole.encode()
        self.send_response(200)
        ctype = "text/event-stream; charset=utf-8" if stream else "application/json"
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", "req_conformance")
        self.end_headers()
        sent = data[: len(data) // 2]
        self.wfile.write(sent)
        self.wfile.flush()
        return sent.decode(errors="ignore")

    def _send_chunked(self, data: bytes, write: int, whole: bool) -> None:
        """``data`` as an HTTP/1.1 chunked body (Bedrock's event streams come so), one chunk
        per ``write`` bytes (0: one); ``whole`` false: broken off, no last chunk, the
        connection closed."""
        self.protocol_version = "HTTP/1.1"  # this response only: chunked needs 1.1
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", EVENT_STREAM)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.send_header("x-amzn-RequestId", "req_conformance")
        self.end_headers()
        for at in range(0, len(data), write or len(data) or 1):
            piece = data[at : at + (write or len(data))]
            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            self.wfile.flush()
        if whole:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def _send_frames(self, frames: list[tuple[bytes, str]], write: int = 0) -> str:
        """A binary event stream (Converse); its frames as the log holds them."""
        self._send_chunked(b"".join(f for f, _ in frames), write, whole=True)
        return "".join(text for _, text in frames)

    def _send_frames_cut(self, frames: list[tuple[bytes, str]]) -> str:
        """Half the bytes of a binary event stream, then the connection closes inside its
        chunked body (botocore ends a stream quietly where its body ends, but raises on a
        chunked body broken off); the log holds the frames sent whole, and the start of
        the one the cut ends inside."""
        data = b"".join(f for f, _ in frames)
        self._send_chunked(data[: len(data) // 2], 0, whole=False)
        left, logged = len(data) // 2, []
        for frame, text in frames:
            if left >= len(frame):
                logged.append(text)
                left -= len(frame)
            else:
                logged.append(text[: len(text) * left // len(frame)])
                break
        return "".join(logged)

    def do_GET(self) -> None:
        if self.path == "/healthz":
            self._send(200, "application/json", '{"ok":true}')
            return
        if self.path.startswith("/v1/models"):
            model = {"id": "gpt-4o-mini", "object": "model", "created": CREATED, "owned_by": "fake"}
            text = self._send(200, "application/json", compact({"object": "list", "data": [model]}))
        else:
            text = self._send(404, "application/json", '{"error":{"message":"not found"}}')
        self.server.record({"method": "GET", "path": self.path, "response_raw": text})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
        path = self.path.split("?", 1)[0]
        record: dict[str, Any] = {"method": "POST", "path": self.path, "body_raw": raw}
        route = next((r for suffix, r in ROUTES.items() if path.endswith(suffix)), None)
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        converse = is_converse(path)
        if converse and isinstance(body, dict):
            body = converse_view(body, path)
        if route is None or not isinstance(body, dict):
            error = compact({"error": {"message": f"cannot answer {path}"}})
            record["response_raw"] = self._send(404, "application/json", error)
            self.server.record(record)
            return
        results, as_json, as_sse = route
        t = Turn(body, results(body), self.server.scenario)
        record.update(conversation=t.order_id, turn=t.turn, final=t.final)
        retry = self.server.scenario.retry_at(t.turn)
        failing = retry is not None and self.server.fails(t.order_id, t.turn, retry.times)
        if retry is not None and failing and retry.cut:
            # The connection closed before the answer, or partway through it.
            stream = bool(body.get("stream"))
            whole = "".join(as_sse(t)) if stream else compact(as_json(t))
            cut = "before" if retry.cut == "body" and stream else retry.cut
            record.update(failed=True, final=False, cut=cut)
            frames = converse_frames(t) if converse and stream else None
            record["response_raw"] = self._send_cut(cut, whole, stream, frames)
        elif retry is not None and failing:
            # A retryable failure before the turn's answer: the client tries again.
            text = failure_body(path, retry.status)
            record.update(status=retry.status, failed=True, final=False)
            headers = FAILURE_HEADERS
            if converse:
                headers = [*headers, ("x-amzn-ErrorType", _BEDROCK_ERRORS[retry.status])]
            record["response_raw"] = self._send(retry.status, "application/json", text, headers)
        elif converse and body.get("stream"):
            frames = converse_frames(t)
            record["response_raw"] = self._send_frames(frames, self.server.scenario.parts.write)
        elif body.get("stream"):
            record["response_raw"] = self._send_sse(as_sse(t), self.server.scenario.parts.write)
        else:
            record["response_raw"] = self._send(200, "application/json", compact(as_json(t)))
        self.server.record(record)


class _Server(ThreadingHTTPServer):
    # A handler logs its exchange after the client has its answer: closing the server
    # waits for the handlers, so the log is whole once the ``with`` is over.
    daemon_threads = False
    block_on_close = True

    def __init__(self, log_path: Path, port: int, scn: scenario.Scenario) -> None:
        super().__init__(("127.0.0.1", port), _Handler)
        self.log_path = log_path
        self.scenario = scn
        self.lock = threading.Lock()
        self.seq = 0
        #: (conversation, turn) -> the scripted failures already answered.
        self.failed: dict[tuple[str, int], int] = {}

    def fails(self, conversation: str, turn: int, times: int) -> bool:
        """Whether this request of ``conversation`` at ``turn`` gets a scripted failure: the
        first ``times`` requests of the turn do."""
        with self.lock:
            done = self.failed.get((conversation, turn), 0)
            if done >= times:
                return False
            self.failed[(conversation, turn)] = done + 1
            return True

    def record(self, record: dict[str, Any]) -> None:
        with self.lock:
            self.seq += 1
            with self.log_path.open("a", encoding="utf-8") as f:
                f.write(json.dumps({"seq": self.seq, **record}, ensure_ascii=False) + "\n")


_B = TypeVar("_B", bound="Background")


class Background:
    """An HTTP server of this module's kind, serving from a thread while the ``with`` lasts."""

    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, args=(POLL_S,), daemon=True)

    @property
    def url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self: _B) -> _B:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class ModelServer(Background):
    """The fake model server on 127.0.0.1 (a free port unless given), logging to ``log_path``.

    Its :attr:`url` is the base URL of the Anthropic clients; the OpenAI
    clients want ``/v1`` after it.  It scripts the model of ``scn`` (the default scenario
    unless given).
    """

    def __init__(
        self, log_path: Path, port: int = 0, scn: scenario.Scenario = scenario.DEFAULT
    ) -> None:
        super().__init__(_Server(log_path, port, scn))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--port", type=int, default=18100)
    ap.add_argument("--log", type=Path, required=True)
    ap.add_argument("--scenario", default="default", help="default, a named one, or seed-N")
    a = ap.parse_args()
    with ModelServer(a.log, a.port, scenario.scenario_named(a.scenario)) as server:
        print(f"model server on {server.url}, logging to {a.log}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()
