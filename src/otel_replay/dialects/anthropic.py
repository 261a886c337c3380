"""The Anthropic Python SDK's built-in tracing (scope ``com.anthropic.sdk.python``).

It writes GenAI semconv (content only in ``content`` mode), plus names of its
own: ``anthropic.message.stop_reason`` (the finish reason) and
``gen_ai.usage.cache_write.input_tokens`` (semconv's ``cache_creation``).
Tool results come as ``user`` messages of ``tool_call_response`` parts whose
response is a list of text blocks (both read in :mod:`otel_replay.messages`).
"""

from __future__ import annotations

from .. import attributes as A
from .span import Dialect, GenAI, SpanView, put

SCOPE = "com.anthropic.sdk.python"


def _matches(span: SpanView) -> bool:
    return span.scope == SCOPE or "anthropic.message.stop_reason" in span.attributes


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    reason = span.text("anthropic.message.stop_reason")
    put(out, A.RESPONSE_FINISH_REASONS, [reason] if reason else None)
    put(
        out,
        "gen_ai.usage.cache_creation.input_tokens",
        span.get("gen_ai.usage.cache_write.input_tokens"),
    )
    return out


DIALECT = Dialect("anthropic", matches=_matches, fill=_fill)
