"""pydantic-ai: a ``Model`` that serves a recorded run, and a capability that stubs its tools.

::

    from otel_replay.replay.adapters.pydantic_ai import ReplayModel, ReplayTools

    with otel_replay.replay("run.otlp") as session:
        with agent.override(model=ReplayModel(session)):
            result = agent.run_sync(question, capabilities=[ReplayTools(session)])
        session.check_output(result.output)

:class:`ReplayModel` is a :class:`pydantic_ai.models.Model`, like
``FunctionModel``: each request (``run``, ``run_sync``, ``run_stream``,
``iter``) goes through the session's pinned model, so the same cursor, the
same matcher ladder and the same :class:`ReplayDivergence` as every other
adapter; the recorded answer (text, tool calls, thinking, usage, response id,
finish reason) comes back as a ``ModelResponse``, or as stream events cut
like a provider's.  :class:`ReplayTools` answers the agent's tool calls from
the same recording (by call id, else by name and arguments), whatever
toolset holds them; tools decorated with ``@otel_replay.tool`` are stubbed
without it.

pydantic-ai is an optional dependency (``otel-replay[pydantic-ai]``): this
module imports it, nothing else in otel_replay imports this module.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime, timezone
from typing import Any

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    ModelResponseStreamEvent,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models import Model, ModelRequestParameters, StreamedResponse
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.settings import ModelSettings
from pydantic_ai.usage import RequestUsage

from ...capture.hooks import ToolInvocation
from ...payload import codec as payload
from ...runs.model import Step
from ...wire.base import json_pieces, reply_from_step, text_pieces
from ..pinned_model import PinnedModel
from ..session import ReplaySession

#: Finish reasons (one spelling, see wire.base) -> pydantic-ai's.
_FINISH = {"stop": "stop", "tool_calls": "tool_call", "length": "length"}
_FINISH["content_filter"] = "content_filter"

#: Model settings that are request parameters in the GenAI sense.
_PARAMS = (
    "temperature",
    "top_p",
    "max_tokens",
    "seed",
    "presence_penalty",
    "frequency_penalty",
    "stop_sequences",
)


def _pinned(source: ReplaySession | PinnedModel) -> PinnedModel:
    return source.model if isinstance(source, ReplaySession) else source


def request_messages(
    messages: list[ModelMessage], parameters: ModelRequestParameters | None = None
) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
    """A pydantic-ai conversation as GenAI input messages and system instructions.

    Converted by pydantic-ai's own instrumentation (what it records on its
    spans), so a request compares with a pydantic-ai recording part for part.
    """
    settings = InstrumentationSettings(include_content=True)
    genai = json.loads(json.dumps(settings.messages_to_otel_messages(messages), default=str))
    instructions = _instructions(messages, parameters)
    system = [{"type": "text", "content": instructions}] if instructions else None
    return genai, system


def _instructions(
    messages: list[ModelMessage], parameters: ModelRequestParameters | None
) -> str | None:
    """The instructions pydantic-ai's instrumentation records for this request."""
    try:
        # optional: the framework's own package
        from pydantic_ai._instrumentation import get_instructions
    except ImportError:
        # A private helper that may move: the same text from the request's parameters,
        # else from the latest request that carries instructions.
        parts = getattr(parameters, "instruction_parts", None)
        if parts is not None:
            return "\n\n".join(str(p.content) for p in parts).strip() or None
        for message in reversed(messages):
            if isinstance(message, ModelRequest) and message.instructions is not None:
                return message.instructions
        return None
    return get_instructions(messages, parameters)


def _tool_definitions(parameters: ModelRequestParameters) -> list[dict[str, Any]]:
    tools = [*parameters.function_tools, *parameters.output_tools]
    return [
        {
            "type": "function",
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters_json_schema,
        }
        for t in tools
    ]


def _params(settings: ModelSettings | None) -> dict[str, Any]:
    values: Mapping[str, Any] = settings or {}
    return {k: values[k] for k in _PARAMS if k in values}


def response_parts(step: Step) -> list[ModelResponsePart]:
    """The recorded answer's parts as pydantic-ai response parts."""
    reply = reply_from_step(step, _NO_REQUEST)
    calls = iter(enumerate(reply.tool_calls()))
    recorded = reply.spelled.recorded
    parts: list[ModelResponsePart] = []
    for part in reply.parts:
        kind = part.get("type")
        if kind == "text":
            parts.append(TextPart(content=str(part.get("content") or "")))
        elif kind == "tool_call":
            i, call = next(calls)
            value = part.get("arguments")
            # The text the model sent where it is recorded (pydantic-ai keeps a provider's
            # text as it came); else the recorded value, as pydantic-ai gave it.
            spelled = i < len(recorded) and recorded[i]
            args = call["arguments"] if spelled or not isinstance(value, dict) else value
            parts.append(ToolCallPart(tool_name=call["name"], args=args, tool_call_id=call["id"]))
        elif kind == "reasoning":
            parts.append(ThinkingPart(content=str(part.get("content") or "")))
    return parts


class _NoRequest:
    model = None


_NO_REQUEST: Any = _NoRequest()


def _timestamp(step: Step) -> datetime:
    return datetime.fromtimestamp(step.start_ns / 1e9, tz=timezone.utc)


class ReplayModel(Model):
    """A pydantic-ai model that answers with a recorded run's model responses, in order.

    ``source``: a :class:`ReplaySession` (its pinned model, so its cursor,
    clock and report) or a :class:`PinnedModel`.  The model name is the
    recorded one unless ``model_name`` says otherwise.
    """

    def __init__(
        self,
        source: ReplaySession | PinnedModel,
        *,
        model_name: str | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        super().__init__(settings=settings)
        self.pinned = _pinned(source)
        first = self.pinned.steps[0].model if self.pinned.steps else None
        recorded = first and (first.response_model or first.request_model)
        self._model_name = model_name or recorded or "otel-replay"
        provider = first.provider if first is not None else None
        self._system = provider or "otel-replay"
        #: (step index, rung) per request served, in order.
        self.served: list[tuple[int, str]] = []

    @property
    def model_name(self) -> str:
        return self._model_name

    @property
    def system(self) -> str:
        return self._system

    @property
    def provider(self) -> None:
        return None

    def _serve(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        parameters: ModelRequestParameters,
    ) -> Step:
        genai, system = request_messages(messages, parameters)
        step, rung = self.pinned.serve(
            genai,
            system=system,
            tools=_tool_definitions(parameters),
            params=_params(model_settings),
        )
        self.served.append((step.index, rung))
        return step

    async def request(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
    ) -> ModelResponse:
        model_settings, model_request_parameters = self.prepare_request(
            model_settings, model_request_parameters
        )
        step = self._serve(messages, model_settings, model_request_parameters)
        reply = reply_from_step(step, _NO_REQUEST)
        return ModelResponse(
            parts=response_parts(step),
            usage=RequestUsage(input_tokens=reply.input_tokens, output_tokens=reply.output_tokens),
            model_name=reply.model,
            timestamp=_timestamp(step),
            provider_name=self._system,
            provider_response_id=reply.response_id,
            finish_reason=_FINISH.get(reply.finish_reason, "stop"),  # type: ignore[arg-type]
        )

    @asynccontextmanager
    async def request_stream(
        self,
        messages: list[ModelMessage],
        model_settings: ModelSettings | None,
        model_request_parameters: ModelRequestParameters,
        run_context: Any = None,
    ) -> AsyncGenerator[StreamedResponse]:
        model_settings, model_request_parameters = self.prepare_request(
            model_settings, model_request_parameters
        )
        step = self._serve(messages, model_settings, model_request_parameters)
        spelled = reply_from_step(step, _NO_REQUEST).spelled
        # Streamed as text: re-spelled where the trace holds no text of the model's.
        if spelled.respelled or spelled.doubtful:
            self.pinned.note_respelled(step, spelled.respelled, spelled.doubtful)
        yield ReplayStreamedResponse(
            model_request_parameters=model_request_parameters, step=step, system=self._system
        )


@dataclasses.dataclass
class ReplayStreamedResponse(StreamedResponse):
    """A recorded answer as stream events: word-sized text deltas, argument deltas per call."""

    step: Step = dataclasses.field(kw_only=True)
    system: str = dataclasses.field(kw_only=True)

    def __post_init__(self) -> None:
        self._reply = reply_from_step(self.step, _NO_REQUEST)

    async def _get_event_iterator(self) -> AsyncIterator[ModelResponseStreamEvent]:
        reply = self._reply
        self.provider_response_id = reply.response_id
        calls = iter(reply.tool_calls())
        for index, part in enumerate(reply.parts):
            kind = part.get("type")
            if kind == "text":
                for piece in text_pieces(str(part.get("content") or "")):
                    for event in self._parts_manager.handle_text_delta(
                        vendor_part_id=index, content=piece
                    ):
                        yield event
            elif kind == "tool_call":
                call = next(calls)
                pieces = json_pieces(call["arguments"])
                for n, piece in enumerate(pieces):
                    for event in self._parts_manager.handle_tool_call_delta_events(
                        vendor_part_id=index,
                        tool_name=call["name"] if n == 0 else None,
                        args=piece,
                        tool_call_id=call["id"] if n == 0 else None,
                    ):
                        yield event
            elif kind == "reasoning":
                for event in self._parts_manager.handle_thinking_delta(
                    vendor_part_id=index, content=str(part.get("content") or "")
                ):
                    yield event
        self._usage = RequestUsage(
            input_tokens=reply.input_tokens, output_tokens=reply.output_tokens
        )
        self.finish_reason = _FINISH.get(reply.finish_reason, "stop")  # type: ignore[assignment]

    @property
    def model_name(self) -> str:
        return self._reply.model

    @property
    def provider_name(self) -> str:
        return self.system

    @property
    def provider_url(self) -> None:
        return None

    @property
    def timestamp(self) -> datetime:
        return _timestamp(self.step)


@dataclasses.dataclass(init=False)
class ReplayTools(AbstractCapability[Any]):
    """A capability answering every tool call of the agent from the session's recording.

    The session's tool policy applies (``stub``, ``live``: the real tool
    runs, ``error``); a call the recording does not have raises
    :class:`ReplayDivergence` naming the step.
    """

    def __init__(self, session: ReplaySession) -> None:
        self.session = session

    async def wrap_tool_execute(
        self,
        ctx: Any,
        *,
        call: ToolCallPart,
        tool_def: Any,
        args: Any,
        handler: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        stubs = self.session.tools
        arguments = dict(args) if isinstance(args, Mapping) else call.args_as_dict()
        invocation = ToolInvocation(
            call.tool_name, call.tool_call_id or None, arguments, payload.encode(arguments)
        )
        resolution = stubs.resolve(invocation)
        outcome: Any = None
        try:
            if resolution.action == "live":
                outcome = await handler(args)
                return outcome
            if resolution.action == "raise":
                assert resolution.error is not None
                raise resolution.error
            outcome = resolution.value
            return outcome
        finally:
            stubs.complete(resolution, outcome, None)


__all__ = ["ReplayModel", "ReplayStreamedResponse", "ReplayTools", "request_messages"]
