"""Which dialects a span speaks, and the GenAI attributes they give it."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Final

from .. import attributes as A
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
    openai_v2,
    openinference,
    openllmetry,
    pydantic_ai,
    semantic_kernel,
    smolagents,
    strands,
    vercel_ai,
)
from .span import Dialect, GenAI, SpanView

#: Most specific first: where two dialects fill the same attribute, the first wins.
DIALECTS: tuple[Dialect, ...] = (
    openai_agents.DIALECT,
    openai_v2.DIALECT,
    litellm.DIALECT,
    anthropic.DIALECT,
    pydantic_ai.DIALECT,
    haystack.DIALECT,
    strands.DIALECT,
    smolagents.DIALECT,
    semantic_kernel.DIALECT,
    crewai.DIALECT,
    google_adk.DIALECT,
    vercel_ai.DIALECT,
    mcp.DIALECT,
    openinference.DIALECT,
    openllmetry.DIALECT,
    logfire.DIALECT,
    genai.DIALECT,
)


_BY_NAMES: Final = tuple(d for d in DIALECTS if not d.reads_values)
_BY_VALUES: Final = tuple(d for d in DIALECTS if d.reads_values)
_ORDER: Final = {d.name: i for i, d in enumerate(DIALECTS)}
#: By scope and attribute names: the dialects of :data:`_BY_NAMES` that match, and those
#: of :data:`_BY_VALUES` that could (a stack writes the same few sets of names again and
#: again).
_matched: dict[tuple[str, tuple[str, ...]], tuple[list[Dialect], tuple[Dialect, ...]]] = {}
_MAX_REMEMBERED: Final = 4096


def _by_names(span: SpanView) -> tuple[list[Dialect], tuple[Dialect, ...]]:
    # Keyed by the names in their order: a tuple is made and hashed in less time than a
    # set, and a stack writes its names in the same order each time.
    key = (span.scope, tuple(span.attributes))
    known = _matched.get(key)
    if known is None:
        if len(_matched) >= _MAX_REMEMBERED:
            _matched.clear()
        names = frozenset(span.attributes)
        found = [d for d in _BY_NAMES if d.matches(span)]
        could = tuple(
            d for d in _BY_VALUES if d.could_match is None or d.could_match(span.scope, names)
        )
        known = _matched[key] = (found, could)
    return known


def detect(span: SpanView) -> list[Dialect]:
    """The dialects whose scope name or marker attributes ``span`` carries (``genai`` always)."""
    found, could = _by_names(span)
    extra = [d for d in could if d.matches(span)]
    if not extra:
        return list(found)
    return sorted(found + extra, key=lambda d: _ORDER[d.name])


def genai_only(attributes: Mapping[str, Any], *, name: str, scope: str, scope_version: str) -> bool:
    """Whether the span of these attributes speaks no dialect but ``genai``
    (:func:`detect`), told from its scope and attribute names alone where no dialect
    that reads values could match them."""
    told = genai_only_by_names(attributes, scope=scope)
    if told is not None:
        return told
    span = SpanView(attributes, name=name, scope=scope, scope_version=scope_version)
    return len(detect(span)) == 1


def genai_only_by_names(attributes: Mapping[str, Any], *, scope: str) -> bool | None:
    """:func:`genai_only` of a span of these attribute names and scope, when the names and
    scope alone tell it (no dialect that reads values could match them) and
    :func:`genai_only` or :func:`detect` met them before; else None."""
    known = _matched.get((scope, tuple(attributes)))
    if known is None or known[1]:
        return None
    return len(known[0]) == 1


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
    # A payload recorded with its digest is byte-exact as it stands: a repair that rewrote
    # it would be checked against a digest of other bytes, and would no longer be what
    # the wire carried.  Repairs are for what a stack wrote wrongly, never for those.
    out.update({k: v for k, v in repaired.items() if A.SHA256 + k not in span.attributes})
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
