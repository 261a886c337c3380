"""Where the time of a run went: each step's offset, duration and time to first token."""

from __future__ import annotations

import dataclasses
from typing import Any

from ..runs.model import Run, Step

#: Attributes instrumentations record the time to the first streamed chunk under (seconds).
TTFT_ATTRIBUTES = (
    "gen_ai.response.time_to_first_chunk",  # OpenLLMetry, the Anthropic SDK's tracing
    "gen_ai.client.operation.time_to_first_chunk",  # pydantic-ai
    "gen_ai.server.time_to_first_token",  # the semconv metric's name
    "llm.time_to_first_token",
)


def ttft_ms(step: Step) -> float | None:
    """Time to first token of a streamed model call, in ms, when recorded."""
    for key in TTFT_ATTRIBUTES:
        value = step.attributes.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
            return float(value) * 1000.0
    return None


@dataclasses.dataclass(frozen=True)
class Bar:
    step: Step
    offset_ms: float
    duration_ms: float
    ttft_ms: float | None

    def to_json(self) -> dict[str, Any]:
        s = self.step
        return {
            "index": s.index,
            "depth": s.depth,
            "kind": s.kind,
            "name": s.tool.tool_name if s.tool is not None else s.name,
            "span_id": s.span_id,
            "timed": s.timed,
            "offset_ms": round(self.offset_ms, 3),
            "duration_ms": round(self.duration_ms, 3),
            "ttft_ms": None if self.ttft_ms is None else round(self.ttft_ms, 3),
        }


def timeline(run: Run) -> list[Bar]:
    """One bar per step, offsets from the run's start."""
    start = run.start_ns
    return [
        Bar(s, (s.start_ns - start) / 1e6, s.duration_ms, ttft_ms(s) if s.kind == "model" else None)
        for s in run.steps
    ]


def draw(bar: Bar, total_ms: float, width: int) -> str:
    """The bar as text: spaces up to its start, then ``█`` for its span.

    A streamed model call with a recorded time to first token shows the wait
    as ``░`` and the streaming as ``█``.
    """
    if total_ms <= 0:
        return "█"
    scale = width / total_ms
    lo = min(int(bar.offset_ms * scale), width - 1)
    hi = max(lo + 1, min(width, round((bar.offset_ms + bar.duration_ms) * scale)))
    cells = [" "] * lo + ["█"] * (hi - lo)
    if bar.ttft_ms is not None:
        mark = min(round((bar.offset_ms + bar.ttft_ms) * scale), hi - 1)
        for i in range(lo, max(mark, lo)):
            cells[i] = "░"
    return "".join(cells).rstrip()
