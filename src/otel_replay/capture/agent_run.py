"""``otel_replay.agent_run(name, input=...)``: the ``invoke_agent`` span that roots a run."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry.trace import SpanKind

from .. import attributes as A
from .content import capture_content
from .model_call import ModelCallRecorder, _as_messages, current_agent
from .spans import set_payload, tracer, warn_once


@contextlib.contextmanager
def agent_run(
    name: str,
    *,
    input: str | Mapping[str, Any] | None = None,
    conversation_id: str | None = None,
    provider: str | None = None,
    **attributes: Any,
) -> Iterator[ModelCallRecorder]:
    """Record one agent invocation; ``record(answer)`` on the handle stores its output.

    ``provider`` (``gen_ai.provider.name``) defaults to that of the run's
    first :func:`~otel_replay.model_call`.  Extra keyword ``attributes`` are
    set on the span as they are.
    """
    content = capture_content()
    names = {A.OPERATION_NAME: A.OP_INVOKE_AGENT, A.AGENT_NAME: name}
    if provider is not None:
        names[A.PROVIDER_NAME] = provider
    with tracer().start_as_current_span(
        f"{A.OP_INVOKE_AGENT} {name}",
        kind=SpanKind.INTERNAL,
        attributes={**names, **attributes},
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        recorder = ModelCallRecorder(span, content, provider)
        token = current_agent.set(recorder)
        try:
            try:
                if conversation_id is not None:
                    span.set_attribute(A.CONVERSATION_ID, conversation_id)
                if input is not None and content and span.is_recording():
                    messages = _as_messages(input, "user")
                    set_payload(span, A.INPUT_MESSAGES, messages, recorder.hidden)
            except Exception as exc:
                warn_once("agent-start", "otel-replay could not record agent input: %r", exc)
            with recorder.guard():
                yield recorder
        finally:
            with contextlib.suppress(ValueError):  # exited in another context: nothing to undo
                current_agent.reset(token)
