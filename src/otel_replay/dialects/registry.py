"""Which dialects a span speaks, and the GenAI attributes they give it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from . import (
    anthropic,
    crewai,
    genai,
    google_adk,
    haystack,
    litellm,
    logfire,
    mcp,
    openai_agents,
    openinference,
    openllmetry,
    pydantic_ai,
    smolagents,
    strands,
    vercel_ai,
)
from .span import Dialect, GenAI, SpanView

#: Most specific first: where two dialects fill the same attribute, the first wins.
DIALECTS: tuple[Dialect, ...] = (
    openai_agents.DIALECT,
    litellm.DIALECT,
    anthropic.DIALECT,
    pydantic_ai.DIALECT,
    haystack.DIALECT,
    strands.DIALECT,
    smolagents.DIALECT,
    crewai.DIALECT,
    google_adk.DIALECT,
    vercel_ai.DIALECT,
    mcp.DIALECT,
    openinference.DIALECT,
    openllmetry.DIALECT,
    logfire.DIALECT,
    genai.DIALECT,
)


def detect(span: SpanView) -> list[Dialect]:
    """The dialects whose scope name or marker attributes ``span`` carries (``genai`` always)."""
    return [d for d in DIALECTS if d.matches(span)]


def genai_attributes(span: SpanView) -> GenAI:
    """GenAI attributes computed from ``span`` that differ from its own.

    Attributes the span lacks, plus those its stack is known to write wrongly
    (each repair sees the ones before it).
    """
    dialects = detect(span)
    repaired: GenAI = {}
    for dialect in dialects:
        if dialect.repair is not None:
            view = (
                dataclasses.replace(span, attributes={**span.attributes, **repaired})
                if repaired
                else span
            )
            repaired.update(dialect.repair(view))
    out: GenAI = {}
    for dialect in dialects:
        for key, value in dialect.fill(span).items():
            if key not in span.attributes:
                out.setdefault(key, value)
    out.update(repaired)
    return out


def normalize(
    attributes: Mapping[str, Any],
    *,
    name: str = "",
    scope: str = "",
    events: Sequence[Mapping[str, Any]] = (),
    scope_version: str = "",
) -> dict[str, Any]:
    """The span's attributes with the GenAI semconv ones its dialects give it.

    The span's own attributes are kept; a GenAI attribute it lacks is filled in
    (and one its stack is known to write wrongly is replaced).
    """
    span = SpanView(attributes, name=name, scope=scope, events=events, scope_version=scope_version)
    return {**attributes, **genai_attributes(span)}
