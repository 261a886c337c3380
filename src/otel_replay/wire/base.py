"""What every wire format shares: the parsed request, the reply to render, SSE framing.

A wire module turns an incoming request body into a :class:`WireRequest`
(GenAI messages, system instructions, tool definitions, parameters, whether
to stream) and a recorded model step, as a :class:`Reply`, into a JSON body
or SSE byte chunks.  Replies are built from GenAI messages only, so a step
recorded through one provider renders in any other's format.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Protocol

from .. import attributes as A
from .. import event_stream, json_text
from ..dialects import bodies
from ..runs.model import Step
from .shapes import Obj
from .spelling import Spelled, compact, spell


@dataclasses.dataclass
class WireRequest:
    """An incoming model request, in GenAI terms."""

    messages: list[dict[str, Any]]
    system: list[dict[str, Any]] | None
    tools: list[dict[str, Any]] | None
    params: dict[str, Any]
    model: str | None
    stream: bool
    #: The body as sent (renderers echo some fields, e.g. Responses ``instructions``).
    body: dict[str, Any]


def parse_checked(body: Mapping[str, Any], shape: Obj) -> WireRequest:
    """``body`` checked against its API's ``shape``, then read (see :func:`parse_body`)."""
    shape.check(body)
    return parse_body(body)


def parse_body(body: Mapping[str, Any]) -> WireRequest:
    """A request body of any of the three APIs, read by ``dialects.bodies.request``."""
    genai = bodies.request(body)
    params = {
        k[len(A.REQUEST_PREFIX) :]: v
        for k, v in genai.items()
        if k.startswith(A.REQUEST_PREFIX) and k != A.REQUEST_MODEL
    }
    model = genai.get(A.REQUEST_MODEL)
    return WireRequest(
        messages=list(genai.get(A.INPUT_MESSAGES) or []),
        system=genai.get(A.SYSTEM_INSTRUCTIONS),
        tools=genai.get(A.TOOL_DEFINITIONS),
        params=params,
        model=model if isinstance(model, str) else None,
        stream=body.get("stream") is True,
        body=dict(body),
    )


#: Finish reasons as the providers spell them -> one spelling (OpenAI Chat's).
_FINISH = {
    "stop": "stop",
    "end_turn": "stop",
    "stop_sequence": "stop",
    "completed": "stop",
    "tool_calls": "tool_calls",
    "tool_call": "tool_calls",
    "tool_use": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
    "max_tokens": "length",
    "max_output_tokens": "length",
    "content_filter": "content_filter",
    "refusal": "content_filter",
}


@dataclasses.dataclass
class Reply:
    """A recorded model answer, ready to render in any wire format."""

    #: The GenAI assistant message (``parts``: text, tool_call, reasoning).
    message: dict[str, Any]
    #: ``stop``, ``tool_calls``, ``length`` or ``content_filter``.
    finish_reason: str
    response_id: str | None
    model: str
    input_tokens: int
    output_tokens: int
    #: Seconds since the epoch (the recorded step's start).
    created: int
    #: Seeds made-up ids (a tool call without one) so that they are stable run to run.
    span_id: str
    #: Each tool call's arguments as text: as recorded, or re-spelled (see :mod:`.spelling`).
    spelled: Spelled = dataclasses.field(default_factory=lambda: Spelled([], []))
    #: The recorded step's duration in milliseconds (what Bedrock reports as ``latencyMs``).
    latency_ms: int = 0

    @property
    def parts(self) -> list[dict[str, Any]]:
        return [p for p in self.message.get("parts") or [] if isinstance(p, dict)]

    def text(self) -> str:
        return "".join(str(p.get("content") or "") for p in self.parts if p.get("type") == "text")

    def tool_calls(self) -> list[dict[str, Any]]:
        """Each call as ``{id, name, arguments}`` with arguments as JSON text: the text
        recorded for it where the step holds one (:attr:`spelled`)."""
        out = []
        texts = self.spelled.texts
        for i, p in enumerate(p for p in self.parts if p.get("type") == "tool_call"):
            out.append(
                {
                    # (An id the trace holds, the empty one too, is served as it is.)
                    "id": f"call_{self.span_id}_{i}" if p.get("id") is None else str(p["id"]),
                    "name": str(p.get("name") or ""),
                    "arguments": texts[i] if i < len(texts) else compact(p.get("arguments")),
                    # The Responses item id the trace holds beside the call id, if any.
                    "item_id": str(p.get("item_id") or ""),
                }
            )
        return out

    def id_or(self, prefix: str) -> str:
        return self.response_id or f"{prefix}{self.span_id}"


def reply_from_step(step: Step, request: WireRequest) -> Reply:
    """The reply a recorded model step gives (its first output message)."""
    m = step.model
    assert m is not None and m.output_messages
    message = m.output_messages[0]
    recorded = message.get("finish_reason") or next(iter(m.finish_reasons or []), None)
    finish = _FINISH.get(str(recorded)) if recorded else None
    if finish is None:  # none recorded (or one of no API's): told by the parts
        has_calls = any(
            isinstance(p, Mapping) and p.get("type") == "tool_call"
            for p in message.get("parts") or []
        )
        finish = "tool_calls" if has_calls else "stop"
    # The parts Reply.tool_calls renders, in its order.
    calls = [
        p
        for p in message.get("parts") or []
        if isinstance(p, dict) and p.get("type") == "tool_call"
    ]
    spelled = spell(step, calls)
    return Reply(
        message=message,
        finish_reason=finish,
        response_id=m.response_id,
        model=m.response_model or m.request_model or request.model or "unknown",
        input_tokens=_int(m.usage.get("input_tokens")),
        output_tokens=_int(m.usage.get("output_tokens")),
        created=step.start_ns // 1_000_000_000,
        span_id=step.span_id,
        spelled=spelled,
        latency_ms=max(0, (step.end_ns - step.start_ns) // 1_000_000),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def call_input(call: Mapping[str, str]) -> tuple[dict[str, Any], bool]:
    """A call's arguments (:meth:`Reply.tool_calls`) as the object an API with an ``input``
    object carries, and whether the text spells it (else the input is ``{}``: arguments
    that are no JSON object, which such an API cannot carry)."""
    try:
        value = json_text.loads(call["arguments"])
    except ValueError:
        return {}, False
    return (value, True) if isinstance(value, dict) else ({}, False)


def text_pieces(text: str) -> list[str]:
    """Text cut into word-sized stream deltas (each word with the spaces after it)."""
    return [w for w in re.findall(r"\s*\S+\s*|\s+", text) if w] or [""]


def json_pieces(text: str, size: int = 7) -> list[str]:
    """Tool-call arguments cut into stream deltas (the size is arbitrary; clients join them)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def sse(data: Mapping[str, Any] | str, event: str | None = None) -> bytes:
    """One server-sent event: ``event:`` line (optional), one ``data:`` line, blank line."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {text}\n\n".encode()


#: The content type of a server-sent event stream.
SSE_TYPE = "text/event-stream; charset=utf-8"


class Wire(Protocol):
    """A wire format module: parse a request, render a reply, shape an error."""

    name: str
    path: str
    #: The content type of its streamed answers (:func:`render_sse`'s chunks).
    stream_type: str

    def parse(self, body: Mapping[str, Any]) -> WireRequest: ...

    def spells_arguments(self, request: WireRequest) -> bool: ...

    def render_json(self, reply: Reply, request: WireRequest) -> dict[str, Any]: ...

    def render_sse(self, reply: Reply, request: WireRequest) -> Iterator[bytes]: ...

    def render_error(
        self, status: int, envelope: Mapping[str, Any]
    ) -> tuple[list[tuple[str, str]], dict[str, Any]]: ...


def same_error(
    status: int, envelope: Mapping[str, Any]
) -> tuple[list[tuple[str, str]], dict[str, Any]]:
    """An error answer as the engine shapes it (Anthropic's envelope, which the OpenAI SDK
    reads too): no header of its own."""
    return [], dict(envelope)


def stream_begun(chunks: Iterable[bytes]) -> list[bytes]:
    """The events of a rendered stream up to its last delta of the answer (a Chat Completions
    chunk carrying text or a call, a Responses ``*.delta``, an Anthropic
    ``content_block_delta``, a Bedrock ``contentBlockDelta``): a stream cut partway, what
    came before the cut, with none of the events that end an answer (finish reason, usage,
    ``[DONE]``, completed, stop)."""
    kept = list(chunks)
    for i in range(len(kept) - 1, -1, -1):
        if _carries_delta(kept[i]):
            return kept[: i + 1]
    return []


def _carries_delta(chunk: bytes) -> bool:
    if event_stream.looks_like(chunk):  # a Bedrock event (one message a chunk)
        try:
            (frame,) = event_stream.frames(chunk)
        except (ValueError, TypeError):
            return False
        return frame.header(":event-type") == "contentBlockDelta"
    for line in chunk.decode("utf-8", "replace").splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        event = json.loads(line[6:])
        kind = str(event.get("type", ""))
        if kind.endswith(".delta") or kind == "content_block_delta":
            return True
        for choice in event.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content") or delta.get("tool_calls"):
                return True
    return False
