"""A candidate model: an OpenAI- or Anthropic-compatible endpoint asked what a recorded
model was asked.

``CandidateModel.parse("openai:gpt-4.1-mini@http://127.0.0.1:8000/v1")`` (or
``anthropic:MODEL[@BASE_URL]``) names one; calling it as the pinned model
and a ``--live`` model are called, ``model(messages, *, system=None,
tools=None, **params)``, sends the GenAI request through the provider's SDK
(Chat Completions, Messages) and returns the answer as a GenAI assistant
message.  :meth:`CandidateModel.ask` returns the usage and the time taken
beside it.

The request is the recorded one written in the provider's wire: the system
instructions as the first message (OpenAI) or ``system`` (Anthropic), text
parts as text, tool calls and their results as ``tool_calls`` and ``tool``
messages (OpenAI) or ``tool_use`` and ``tool_result`` blocks (Anthropic),
tool definitions as functions (tools with an ``input_schema``), and the
recorded parameters the API takes.  A part the wire cannot carry (an image,
a file) is refused with :class:`CandidateRefused` naming it, not left out:
the candidate would be asked something else than the recorded model was.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .. import attributes as A
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
#: GenAI request parameter -> the Anthropic Messages field it is sent as.
MESSAGES_PARAMS = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "max_tokens": "max_tokens",
    "stop_sequences": "stop_sequences",
}
#: Anthropic's API wants ``max_tokens``: sent when the recording has none.
DEFAULT_MAX_TOKENS = 4096
#: Providers a candidate model may name, and the variable its key is read from.
PROVIDERS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


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


def api_params(params: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, Any]:
    """The recorded request parameters an API takes (``names``: GenAI name -> its field)."""
    out = {}
    for name, value in params.items():
        field = names.get(name)
        if field is not None and value is not None:
            out[field] = value
    return out


def anthropic_messages(
    messages: Sequence[Mapping[str, Any]], system: Any = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """GenAI messages (and system instructions) as Anthropic Messages: the system text,
    and the turns, a turn's tool results in one user message as the API wants them."""
    parts, rest = split_system(M.normalize(messages), system)
    out: list[dict[str, Any]] = []
    for message in rest:
        role = "assistant" if message.get("role") == "assistant" else "user"
        blocks: list[dict[str, Any]] = []
        for p in message.get("parts") or []:
            if not isinstance(p, Mapping):
                continue
            _sendable(p, role)
            kind = p.get("type")
            if kind == "text" and p.get("content"):
                blocks.append({"type": "text", "text": str(p["content"])})
            elif kind == "tool_call":
                arguments = M.parse_arguments(p.get("arguments"))
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": str(p.get("id")),
                        "name": str(p.get("name")),
                        "input": arguments if isinstance(arguments, Mapping) else {},
                    }
                )
            elif kind == "tool_call_response":
                response = p.get("response")
                content = response if isinstance(response, str) else json.dumps(response)
                blocks.append(
                    {"type": "tool_result", "tool_use_id": str(p.get("id")), "content": content}
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)  # the API wants the roles to take turns
        else:
            out.append({"role": role, "content": blocks})
    return (_text(parts) if parts else None), out


def anthropic_tools(tools: Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]] | None:
    """GenAI tool definitions as Anthropic tools."""
    if not tools:
        return None
    out = []
    for tool in tools:
        d = M.tool_definition(tool)
        one = {"name": d.get("name"), "input_schema": d.get("parameters") or {"type": "object"}}
        if d.get("description"):
            one["description"] = d["description"]
        out.append(one)
    return out


def answer_message(body: Mapping[str, Any]) -> tuple[dict[str, Any], int | None, int | None]:
    """A Chat Completions or Messages response body as (GenAI assistant message, input
    tokens, output tokens)."""
    attrs = response_attributes(body)
    outputs = attrs.get(A.OUTPUT_MESSAGES)
    if not isinstance(outputs, list) or not outputs:
        raise CandidateFailed("the candidate's answer holds no message")

    def tokens(key: str) -> int | None:
        value = attrs.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    message = dict(outputs[0])  # its finish_reason kept, as a recording keeps it
    return message, tokens(A.USAGE_INPUT_TOKENS), tokens(A.USAGE_OUTPUT_TOKENS)


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
        """The provider's SDK client, made on first use."""
        if self._client is None:
            try:
                # One of PROVIDERS (checked when the --model spec was parsed): a fixed name.
                sdk: Any = importlib.import_module(self.provider)
            except ImportError:
                raise CandidateRefused(
                    f"a candidate model is asked through the {self.provider} SDK: "
                    f"pip install {self.provider}"
                ) from None
            variable = PROVIDERS[self.provider]
            key = os.environ.get(variable)
            base = os.environ.get(f"{self.provider.upper()}_BASE_URL")
            if not key and self.base_url is None and not base:
                raise CandidateRefused(
                    f"{self.label}: {variable} is not set (a local server needs none: "
                    f"name it, {self.provider}:MODEL@http://127.0.0.1:PORT)"
                )
            make = sdk.OpenAI if self.provider == "openai" else sdk.Anthropic
            self._client = make(
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
        """The request body this call sends, in the provider's wire (no ``stream``)."""
        given = {k: v for k, v in params.items() if k != "model"}
        body: dict[str, Any] = {"model": self.model}
        if self.provider == "anthropic":
            said, body["messages"] = anthropic_messages(messages, system)
            if said:
                body["system"] = said
            functions = anthropic_tools(tools)
            body.update(api_params(given, MESSAGES_PARAMS))
            body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
        else:
            body["messages"] = chat_messages(messages, system)
            functions = chat_tools(tools)
            body.update(api_params(given, CHAT_PARAMS))
        if functions:
            body["tools"] = functions
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
        began = time.perf_counter()
        # Parameters go as extra body fields: one the SDK does not name (a server's own,
        # given with --set) is sent as given, not refused.
        named = {k: body.pop(k) for k in ("model", "messages", "tools") if k in body}
        sdk: Any = importlib.import_module(self.provider)
        try:
            if self.provider == "anthropic":
                # Its SDK wants max_tokens named: the one field it requires besides those.
                made = client.messages.create(
                    **named, max_tokens=body.pop("max_tokens"), extra_body=body
                )
            else:
                made = client.chat.completions.create(**named, extra_body=body)
            answer = made.model_dump(mode="json", exclude_none=True)
        except sdk.APIError as exc:
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
