"""Dialects: third-party GenAI attribute schemes normalized into GenAI semconv.

Each module reads one tracing stack's documented attributes (OpenInference,
OpenLLMetry, pydantic-ai, logfire, the openai-agents bridges, Anthropic's SDK)
from plain values: attribute mappings, span name, scope name and events, so
the same normalizers serve stored spans and spans being exported.
:func:`normalize` is the entry point.
"""

from __future__ import annotations

from .registry import DIALECTS, detect, genai_attributes, normalize
from .span import Dialect, SpanView

__all__ = ["DIALECTS", "Dialect", "SpanView", "detect", "genai_attributes", "normalize"]
