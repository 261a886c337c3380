"""The ``show --json`` contract: keys every consumer may rely on."""

from __future__ import annotations

RUN_KEYS = ("run_id", "trace_ids", "verdict", "replayable", "missing", "steps")
STEP_KEYS = ("kind", "name", "span_id", "parent_span_id", "start_ns", "end_ns", "timed")
MODEL_KEYS = (
    "provider",
    "request_model",
    "response_model",
    "params",
    "input_messages",
    "output_messages",
    "system_instructions",
    "tool_definitions",
)
TOOL_KEYS = ("tool_name", "call_id", "arguments", "result", "error", "derived")
