"""A dialect that reads values says which scopes and names it could match, and is right.

:func:`~otel_replay.dialects.registry.detect` remembers, per scope and set of
attribute names, which dialects that read values could match, and asks only
those; :func:`~otel_replay.dialects.registry.genai_only` answers from that
memory alone where none could.  The oracle is each dialect's own ``matches``,
on spans drawn from every dialect's scopes and marker names with values that
do and do not make it match.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import attributes as A
from otel_replay.dialects import haystack, openai_v2, registry, vercel_ai
from otel_replay.dialects.span import SpanView

_SCOPES = st.sampled_from(
    [haystack.SCOPE, *openai_v2.SCOPES, vercel_ai.GENAI_SCOPE, "app", "otel_replay", ""]
)
_VALUES = st.sampled_from(["LLM", "chat", "openai", "resp_1", "ai.toolCall", "", 3, None])
_NAMES = st.sampled_from(
    [
        "openinference.span.kind",
        vercel_ai.OPERATION,
        A.OPERATION_NAME,
        A.PROVIDER_NAME,
        "gen_ai.system",
        A.RESPONSE_ID,
        A.INPUT_MESSAGES,
        "llm.model_name",
    ]
)


@st.composite
def spans(draw: st.DrawFn) -> SpanView:
    attributes: dict[str, Any] = {}
    for name in draw(st.lists(_NAMES, max_size=5, unique=True)):
        value = draw(_VALUES)
        if value is not None:
            attributes[name] = value
    return SpanView(attributes, name=draw(st.sampled_from(["chat", "x"])), scope=draw(_SCOPES))


@settings(max_examples=400, deadline=None)
@given(span=spans())
def test_a_dialect_matches_only_where_it_could(span: SpanView) -> None:
    names = frozenset(span.attributes)
    for dialect in registry.DIALECTS:
        if dialect.could_match is not None and not dialect.could_match(span.scope, names):
            assert not dialect.matches(span), dialect.name


@settings(max_examples=400, deadline=None)
@given(span=spans(), remembered=st.booleans())
def test_genai_only_is_what_detect_says(span: SpanView, remembered: bool) -> None:
    if remembered:
        registry.detect(span)  # the scope and names remembered first
    else:
        registry._matched.clear()
    only = registry.genai_only(
        span.attributes, name=span.name, scope=span.scope, scope_version=span.scope_version
    )
    assert only == (len(registry.detect(span)) == 1)
    assert only == (len([d for d in registry.DIALECTS if d.matches(span)]) == 1)


def test_the_value_dialects_each_match_a_drawn_kind_of_span() -> None:
    """The gates are not vacuous: each dialect that reads values matches some span."""
    made = {
        "haystack": SpanView({"openinference.span.kind": "LLM"}, scope=haystack.SCOPE),
        "openai_v2": SpanView({A.PROVIDER_NAME: "openai"}, scope=openai_v2.SCOPES[0]),
        "vercel_ai": SpanView({vercel_ai.OPERATION: "ai.toolCall"}),
    }
    for dialect in registry.DIALECTS:
        if dialect.reads_values:
            assert dialect.matches(made[dialect.name])
            assert dialect.could_match is not None
            span = made[dialect.name]
            assert dialect.could_match(span.scope, frozenset(span.attributes))
