"""logfire's LLM integrations (``logfire.instrument_openai``/``instrument_anthropic``).

Besides GenAI semconv (newer releases), their spans carry the request body as
``request_data`` and the answer as ``response_data`` (``{"message", "usage"}``
for chat, the provider's response object otherwise), as JSON; ``logfire.*``
attributes mark the span.
"""

from __future__ import annotations

from .. import attributes as A
from . import bodies
from .span import Dialect, GenAI, SpanView, put


def _matches(span: SpanView) -> bool:
    return "request_data" in span.attributes or any(
        k.startswith("logfire.") for k in span.attributes
    )


def _fill(span: SpanView) -> GenAI:
    out: GenAI = {}
    request = span.json("request_data")
    response = span.json("response_data")
    for key, value in {**bodies.request(request), **bodies.response(response)}.items():
        put(out, key, value)
    if A.INPUT_MESSAGES in out or A.OUTPUT_MESSAGES in out:
        put(out, A.OPERATION_NAME, A.OP_CHAT)
    return out


DIALECT = Dialect("logfire", matches=_matches, fill=_fill)
