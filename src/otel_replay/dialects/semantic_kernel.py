"""Semantic Kernel's built-in telemetry (``semantic_kernel.utils.telemetry``).

Its model spans (scope ``...model_diagnostics.decorators``) hold no content: the
messages are log records (``gen_ai.*.message``, ``gen_ai.choice``), read with
the other GenAI events.  Each record's message is ``ChatMessageContent.to_dict()``,
which, for an assistant message with function calls, writes the calls alone: any
text the model wrote beside them is in no record (the request Semantic Kernel
sends back is made by the same ``to_dict``, so it lacks the text too).  Its
model spans are marked (:data:`~otel_replay.attributes.TEXT_BESIDE_CALLS`) so
that the replay kit names that text as not recorded wherever an answer has calls.
"""

from __future__ import annotations

from .. import attributes as A
from .span import Dialect, GenAI, SpanView

MODEL_SCOPE = "semantic_kernel.utils.telemetry.model_diagnostics.decorators"


def _matches(span: SpanView) -> bool:
    return span.scope == MODEL_SCOPE


def _fill(span: SpanView) -> GenAI:
    return {A.TEXT_BESIDE_CALLS: "not_recorded"}


DIALECT = Dialect("semantic_kernel", matches=_matches, fill=_fill)
