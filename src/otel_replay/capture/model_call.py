"""``otel_replay.model_call(...)``: record a model call made without an instrumentation.

::

    with otel_replay.model_call(provider="openai", model="gpt-4o", messages=msgs,
                                system=prompt, tools=tool_defs, temperature=0) as call:
        reply = my_client.complete(...)
        call.record(reply_message, input_tokens=12, output_tokens=30,
                    response_id="resp_1", finish_reasons=["tool_calls"])

Messages may be in the GenAI shape or OpenAI's; they are stored in the GenAI
shape with a digest so truncation is detected.  An exception in the block is
recorded and propagates unchanged.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
from collections.abc import Mapping, Sequence
from typing import Any

from opentelemetry.trace import Span, SpanKind

from .. import attributes as A
from .. import messages as M
from ..redaction import redactor
from .content import capture_content
from .spans import CurrentSpan, payload_attributes, record_error, tracer, tracing_on, warn_once

#: ``record(**usage)`` names -> their GenAI semconv attribute (others: ``gen_ai.usage.<name>``).
_USAGE_ALIASES = {
    "reasoning_tokens": A.USAGE_REASONING_OUTPUT_TOKENS,
    "reasoning_output_tokens": A.USAGE_REASONING_OUTPUT_TOKENS,
    "cached_tokens": A.USAGE_CACHE_READ_INPUT_TOKENS,
    "cache_read_input_tokens": A.USAGE_CACHE_READ_INPUT_TOKENS,
    "cache_creation_input_tokens": A.USAGE_CACHE_CREATION_INPUT_TOKENS,
}

_PARAM_ALIASES = {
    "stop": "stop_sequences",
    "n": "choice.count",
    "max_completion_tokens": "max_tokens",
}


#: The ``agent_run`` being recorded: its span takes the provider of its first model call.
current_agent: contextvars.ContextVar[ModelCallRecorder | None] = contextvars.ContextVar(
    "otel_replay_agent", default=None
)


def tell_agent(provider: str) -> None:
    """The enclosing agent run, if it has no ``gen_ai.provider.name`` yet, takes ``provider``."""
    agent = current_agent.get()
    if agent is not None and agent.provider is None and agent.span.is_recording():
        agent.provider = provider
        agent.span.set_attribute(A.PROVIDER_NAME, provider)


class ModelCallRecorder:
    """Handle yielded by :func:`model_call` (and :func:`agent_run`) to record the outcome."""

    def __init__(self, span: Span, content: bool, provider: str | None = None) -> None:
        self.span = span
        self.content = content
        self.hidden: list[str] = []
        #: ``gen_ai.provider.name`` as set on the span (an agent's: its first model call's).
        self.provider = provider

    def record(
        self,
        output: str | Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
        *,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        response_id: str | None = None,
        response_model: str | None = None,
        finish_reasons: Sequence[str] | None = None,
        **usage: int,
    ) -> None:
        """Record the response: output message(s) (or plain text), usage, ids.

        More ``usage`` counts go to ``gen_ai.usage.<name>``; the semconv ones are
        spelled as the providers report them: ``reasoning_tokens``,
        ``cached_tokens`` / ``cache_read_input_tokens``,
        ``cache_creation_input_tokens``.
        """
        try:
            span = self.span
            if not span.is_recording():
                return
            # One attribute dict: each set_attributes call costs the SDK a lock and checks.
            attrs: dict[str, Any] = {}
            if output is not None and self.content:
                out = _as_messages(output, "assistant")
                if finish_reasons is None:
                    reasons = [m["finish_reason"] for m in out if "finish_reason" in m]
                    finish_reasons = reasons or None
                attrs.update(payload_attributes(span, A.OUTPUT_MESSAGES, out, self.hidden))
            if input_tokens is not None:
                attrs[A.USAGE_INPUT_TOKENS] = input_tokens
            if output_tokens is not None:
                attrs[A.USAGE_OUTPUT_TOKENS] = output_tokens
            for key, value in usage.items():
                attrs[_USAGE_ALIASES.get(key, f"gen_ai.usage.{key}")] = value
            if response_id is not None:
                attrs[A.RESPONSE_ID] = response_id
            if response_model is not None:
                attrs[A.RESPONSE_MODEL] = response_model
            if finish_reasons:
                attrs[A.RESPONSE_FINISH_REASONS] = list(finish_reasons)
            span.set_attributes(attrs)
        except Exception as exc:  # recording must never break the caller
            warn_once("model-record", "otel-replay could not record a model response: %r", exc)

    def guard(self) -> _Guard:
        """Around the user's block: record its exception (re-raised untouched), then finish."""
        return _Guard(self)


class _Guard:
    """:meth:`ModelCallRecorder.guard` (a class: a generator context manager costs more)."""

    __slots__ = ("recorder",)

    def __init__(self, recorder: ModelCallRecorder) -> None:
        self.recorder = recorder

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        r = self.recorder
        if exc is not None:
            try:
                record_error(r.span, exc, r.content, r.hidden)
            except Exception as err:
                warn_once("record-error", "otel-replay could not record an error: %r", err)
        try:
            if r.hidden and r.span.is_recording():
                r.span.set_attribute(A.REDACTED, r.hidden)
        except Exception as err:
            warn_once("record-finish", "otel-replay could not finish a span: %r", err)


def model_call(
    *,
    provider: str,
    model: str,
    messages: Sequence[Mapping[str, Any]] | None = None,
    system: str | Sequence[Any] | None = None,
    tools: Sequence[Mapping[str, Any]] | None = None,
    operation: str = A.OP_CHAT,
    conversation_id: str | None = None,
    server_address: str | None = None,
    server_port: int | None = None,
    **params: Any,
) -> contextlib.AbstractContextManager[ModelCallRecorder]:
    """Record one model call as a ``chat <model>`` CLIENT span (GenAI semconv).

    ``params`` are request parameters (temperature, top_p, top_k, max_tokens,
    seed, stop, stream, ...), recorded as ``gen_ai.request.<name>``;
    ``server_address`` / ``server_port`` name the model server.  The
    enclosing :func:`~otel_replay.agent_run` takes ``provider`` when it was
    given none.
    """
    request = {
        "provider": provider,
        "model": model,
        "messages": messages,
        "system": system,
        "tools": tools,
        "operation": operation,
        "conversation_id": conversation_id,
        "server": (server_address, server_port),
        "params": params,
    }
    return _ModelCall(f"{operation} {model}", request)


class _ModelCall:
    """:func:`model_call`'s context manager (a class: a generator one costs more)."""

    __slots__ = ("current", "name", "recorder", "request")

    def __init__(self, name: str, request: dict[str, Any]) -> None:
        #: The span's name, and the request as ``_request_attributes`` takes it.
        self.name = name
        self.request = request

    def __enter__(self) -> ModelCallRecorder:
        provider = self.request["provider"]
        content = capture_content()
        hidden: list[str] = []
        attrs: dict[str, Any] | None = None
        if tracing_on():
            try:
                # Given at span start, as the GenAI conventions ask (samplers see them),
                # and cheaper in the SDK than setting them on the started span.
                attrs = _request_attributes(**self.request, content=content, hidden=hidden)
                tell_agent(provider)
            except Exception as exc:
                warn_once("model-request", "otel-replay could not record a model request: %r", exc)
        self.current = CurrentSpan(self.name, SpanKind.CLIENT, attrs)
        self.recorder = ModelCallRecorder(self.current.span, content, provider)
        self.recorder.hidden = hidden
        return self.recorder

    def __exit__(self, kind: object, exc: BaseException | None, tb: object) -> None:
        try:
            _Guard(self.recorder).__exit__(kind, exc, tb)
        finally:
            self.current.end()


def _request_attributes(
    provider: str,
    model: str,
    messages: Sequence[Mapping[str, Any]] | None,
    system: str | Sequence[Any] | None,
    tools: Sequence[Mapping[str, Any]] | None,
    operation: str,
    conversation_id: str | None,
    server: tuple[str | None, int | None],
    params: Mapping[str, Any],
    content: bool,
    hidden: list[str],
) -> dict[str, Any]:
    """The request's attributes, its secrets hidden (each hidden path added to ``hidden``)."""
    limits = tracer()
    attrs: dict[str, Any] = {
        A.OPERATION_NAME: operation,
        A.PROVIDER_NAME: provider,
        A.REQUEST_MODEL: model,
    }
    if server[0] is not None:
        attrs[A.SERVER_ADDRESS] = server[0]
    if server[1] is not None:
        attrs[A.SERVER_PORT] = server[1]
    if conversation_id is not None:
        attrs[A.CONVERSATION_ID] = conversation_id
    if params:  # (most calls give none: no walk to make)
        # extra_headers, extra_body and the like are walked as any recorded value is.
        clean = redactor().scrub(dict(params), A.REQUEST_PREFIX[:-1], hidden)
        for key, value in clean.items():
            if value is not None:
                attrs[A.REQUEST_PREFIX + _PARAM_ALIASES.get(key, key)] = _attr_value(value)
    if tools is not None:
        # Tool schemas are part of the replay kit even with content capture off.
        definitions = [M.tool_definition(t) for t in tools]
        attrs.update(payload_attributes(limits, A.TOOL_DEFINITIONS, definitions, hidden))
    if not content:
        attrs[A.CONTENT] = "NO_CONTENT"
    else:
        if system is not None:
            parts = M.system_parts(system)
            attrs.update(payload_attributes(limits, A.SYSTEM_INSTRUCTIONS, parts, hidden))
        if messages is not None:
            inputs = M.normalize(messages)
            attrs.update(payload_attributes(limits, A.INPUT_MESSAGES, inputs, hidden))
    return attrs


def _as_messages(
    output: str | Mapping[str, Any] | Sequence[Mapping[str, Any]], role: str
) -> list[dict[str, Any]]:
    if isinstance(output, str):
        return [{"role": role, "parts": [{"type": "text", "content": output}]}]
    if type(output) is dict or isinstance(output, Mapping):  # (a dict told without the ABC)
        return [M.normalize_message(output)]
    return M.normalize(output)


def _attr_value(value: Any) -> Any:
    if isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    return json.dumps(value, default=str, sort_keys=True)
