"""A candidate model: an OpenAI-compatible endpoint asked what a recorded model was asked.

``CandidateModel.parse("openai:gpt-4.1-mini@http://127.0.0.1:8000/v1")`` names
one; calling it as the pinned model and a ``--live`` model are called,
``model(messages, *, system=None, tools=None, **params)``, sends the GenAI
request through the OpenAI SDK's Chat Completions and returns the answer as a
GenAI assistant message.  :meth:`CandidateModel.ask` returns the usage and
the time taken beside it.

The request is the recorded one written in the Chat Completions wire: the
system instructions as the first message, text parts as text, tool calls and
their results as ``tool_calls`` and ``tool`` messages, tool definitions as
functions, and the recorded parameters the API takes (``temperature``,
``top_p``, ``max_tokens``, ``seed``, ``stop``, the penalties).  A part the
wire cannot carry (an image, a file) is refused with
:class:`CandidateRefused` naming it, not left out: the candidate would be
asked something else than the recorded model was.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .. import messages as M
from ..dialects.bodies import response as response_attributes
from .matchers import split_system

#: GenAI request parameter -> the Chat Completions field it is sent as.
CHAT_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "max_tokens": "max_tokens",
    "seed": "seed",
    "stop_sequences": "stop",
    "frequency_penalty": "frequency_penalty",
    "presence_penalty": "presence_penalty",
}
#: Providers a candidate model may name.
PROVIDERS = ("openai",)


class CandidateRefused(ValueError):
    """The recorded request cannot be sent to the candidate as it was made (data missing,
    a part the wire does not carry)."""


class CandidateFailed(RuntimeError):
    """The candidate's endpoint failed (an HTTP error, no answer, an unreadable answer)."""


@dataclasses.dataclass
class Asked:
    """One answer of the candidate: the GenAI assistant message, tokens and time taken."""

    message: dict[str, Any]
    input_tokens: int | None
    output_tokens: int | None
    latency_ms: float


def _text(parts: Sequence[Any]) -> str:
    return "".join(str(p.get("content", "")) for p in parts if p.get("type") == "text")


def _sendable(part: Mapping[str, Any], role: str) -> None:
    if part.get("type") not in ("text", "tool_call", "tool_call_response", "reasoning"):
        raise CandidateRefused(
            f"a {role} message holds a {part.get('type')!r} part, which the Chat Completions "
            "request of this slice does not carry"
        )


def chat_messages(
    messages: Sequence[Mapping[str, Any]], system: Any = None
) -> list[dict[str, Any]]:
    """GenAI messages (and system instructions) as Chat Completions messages.

    A call or result recorded without an id gets ``call_N`` by order, the same
    for a call and the result after it, as the API wants them paired.
    """
    parts, rest = split_system(M.normalize(messages), system)
    out: list[dict[str, Any]] = []
    if parts:
        out.append({"role": "system", "content": _text(parts)})
    pending: list[str] = []  # ids of calls made, waiting for their results
    made = 0
    for message in rest:
        role = str(message.get("role") or "user")
        body = [p for p in message.get("parts") or [] if isinstance(p, Mapping)]
        for p in body:
            _sendable(p, role)
        results = [p for p in body if p.get("type") == "tool_call_response"]
        if results:
            for p in results:
                call_id = p.get("id") or (pending.pop(0) if pending else f"call_{made}")
                if call_id in pending:
                    pending.remove(call_id)
                response = p.get("response")
                content = response if isinstance(response, str) else json.dumps(response)
                out.append({"role": "tool", "tool_call_id": str(call_id), "content": content})
            continue
        chat: dict[str, Any] = {"role": "system" if role == "developer" else role}
        text = _text(body)
        calls = []
        for p in body:
            if p.get("type") != "tool_call":
                continue
            made += 1
            call_id = str(p.get("id") or f"call_{made}")
            pending.append(call_id)
            arguments = p.get("arguments")
            calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {
                        "name": str(p.get("name")),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments if arguments is not None else {}),
                    },
                }
            )
        chat["content"] = text if text or not calls else None
        if calls:
            chat["tool_calls"] = calls
        out.append(chat)
    return out


def chat_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """GenAI tool definitions as Chat Completions functions."""
    if not tools:
        return None
    out = []
    for tool in tools:
        d = M.tool_definition(tool)
        fn = {k: d[k] for k in ("name", "description", "parameters") if d.get(k) is not None}
        out.append({"type": "function", "function": fn})
    return out


def chat_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded request parameters the Chat Completions API takes, by its names."""
    out = {}
    for name, value in params.items():
        field = CHAT_PARAMS.get(name)
        if field is not None and value is not None:
            out[field] = value
    return out


def answer_message(body: Mapping[str, Any]) -> tuple[dict[str, Any], int | None, int | None]:
    """A Chat Completions response body as (GenAI assistant message, input, output tokens)."""
    attrs = response_attributes(body)
    outputs = attrs.get("gen_ai.output.messages")
    if not isinstance(outputs, list) or not outputs:
        raise CandidateFailed("the candidate's answer holds no message")
    usage = body.get("usage") if isinstance(body.get("usage"), Mapping) else {}
    assert isinstance(usage, Mapping)

    def tokens(key: str) -> int | None:
        value = usage.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    message = dict(outputs[0])
    message.pop("finish_reason", None)
    return message, tokens("prompt_tokens"), tokens("completion_tokens")


@dataclasses.dataclass
class CandidateModel:
    """An OpenAI-compatible model to ask in place of the recorded one.

    ``base_url`` None: ``OPENAI_BASE_URL``, else the SDK's default (the
    OpenAI API).  The key is ``OPENAI_API_KEY``; a candidate named with a
    base URL needs none (a local server), and is sent a placeholder.
    ``overrides`` are request parameters set on every request
    (``--set temperature=0``), over the recorded ones.
    """

    provider: str
    model: str
    base_url: str | None = None
    overrides: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    timeout: float = 60.0
    max_retries: int = 2
    _client: Any = dataclasses.field(default=None, repr=False, compare=False)

    @classmethod
    def parse(cls, spec: str, overrides: Mapping[str, Any] | None = None) -> CandidateModel:
        """``PROVIDER:MODEL`` or ``PROVIDER:MODEL@BASE_URL``; ``ValueError`` naming what is
        wrong."""
        provider, sep, rest = spec.partition(":")
        if not sep or provider not in PROVIDERS:
            raise ValueError(
                f"{spec!r}: give the model as PROVIDER:MODEL[@BASE_URL], PROVIDER one of "
                + ", ".join(PROVIDERS)
            )
        model, at, base_url = rest.partition("@")
        if not model or (at and not base_url.startswith(("http://", "https://"))):
            raise ValueError(f"{spec!r}: give the model as {provider}:MODEL[@http(s)://HOST/...]")
        return cls(provider, model, base_url or None, dict(overrides or {}))

    @property
    def label(self) -> str:
        """How tables and JSON name the candidate: ``openai:MODEL`` and its overrides."""
        said = ", ".join(f"{k}={json.dumps(v)}" for k, v in self.overrides.items())
        return f"{self.provider}:{self.model}" + (f" ({said})" if said else "")

    def client(self) -> Any:
        """The OpenAI SDK client, made on first use."""
        if self._client is None:
            try:
                import openai
            except ImportError:
                raise CandidateRefused(
                    "a candidate model is asked through the OpenAI SDK: pip install openai"
                ) from None
            key = os.environ.get("OPENAI_API_KEY")
            if not key and self.base_url is None and not os.environ.get("OPENAI_BASE_URL"):
                raise CandidateRefused(
                    f"{self.label}: OPENAI_API_KEY is not set (a local server needs none: "
                    "name it, openai:MODEL@http://127.0.0.1:PORT/v1)"
                )
            self._client = openai.OpenAI(
                api_key=key or "unused",
                base_url=self.base_url,
                timeout=self.timeout,
                max_retries=self.max_retries,
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def request(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> dict[str, Any]:
        """The Chat Completions request body this call sends (no ``stream``)."""
        body: dict[str, Any] = {"model": self.model, "messages": chat_messages(messages, system)}
        functions = chat_tools(tools)
        if functions:
            body["tools"] = functions
        body.update(chat_params({k: v for k, v in params.items() if k != "model"}))
        body.update(self.overrides)
        return body

    def ask(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        system: Any = None,
        tools: Sequence[Mapping[str, Any]] | None = None,
        **params: Any,
    ) -> Asked:
        """The candidate's answer to this request, its tokens and time taken."""
        body = self.request(messages, system=system, tools=tools, **params)
        client = self.client()
        import openai

        began = time.perf_counter()
        # Parameters go as extra body fields: one the SDK does not name (a server's own,
        # given with --set) is sent as given, not refused.
        named = {k: body.pop(k) for k in ("model", "messages", "tools") if k in body}
        try:
            completion = client.chat.completions.create(**named, extra_body=body)
            answer = completion.model_dump(mode="json", exclude_none=True)
        except openai.APIError as exc:
            raise CandidateFailed(f"{type(exc).__name__}: {_first_line(str(exc))}") from exc
        except (AttributeError, ValueError) as exc:  # a body the SDK could not read as one
            raise CandidateFailed(f"the candidate's answer is unreadable: {exc}") from exc
        took = (time.perf_counter() - began) * 1000
        message, tokens_in, tokens_out = answer_message(answer)
        return Asked(message, tokens_in, tokens_out, took)

    def respond(self, messages: Sequence[Mapping[str, Any]], **given: Any) -> dict[str, Any]:
        """The answer alone (``system=``, ``tools=`` and parameters as :meth:`ask` takes
        them): a model as the pinned model and ``--live`` are called."""
        return self.ask(messages, **given).message

    __call__ = respond


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"
