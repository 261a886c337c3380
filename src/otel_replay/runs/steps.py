"""A stored span -> a classified :class:`Step` in GenAI terms."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import messages as M
from .. import payload
from ..payload_attributes import BlobReader, Payload, from_attributes
from ..store.records import SpanRecord
from .model import ModelCall, Step, StepKind, ToolCall, ToolError

_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def current_attributes(attrs: Mapping[str, Any]) -> dict[str, Any]:
    """Attributes with replaced names (``gen_ai.system``...) also under the current ones."""
    out = dict(attrs)
    for old, new in A.LEGACY.items():
        if old in attrs and new not in attrs:
            out[new] = attrs[old]
    return out


def classify(attrs: Mapping[str, Any]) -> StepKind:
    op = attrs.get(A.OPERATION_NAME)
    if op in A.MODEL_OPERATIONS:
        return "model"
    if op == A.OP_EXECUTE_TOOL:
        return "tool"
    if op in A.AGENT_OPERATIONS:
        return "agent"
    return "other"


def to_step(span: SpanRecord, blobs: BlobReader | None) -> Step:
    attrs = current_attributes(span.attributes)
    kind = classify(attrs)
    step = Step(
        kind=kind,
        name=span.name,
        span_id=span.span_id,
        parent_span_id=span.parent_span_id,
        trace_id=span.trace_id,
        start_ns=span.start_ns,
        end_ns=span.end_ns,
        status=_STATUS.get(span.status_code, "UNSET"),
        status_message=span.status_message,
        attributes=dict(span.attributes),
        events=[
            {"name": e.name, "time_ns": e.time_ns, "attributes": e.attributes} for e in span.events
        ],
    )
    if kind in ("model", "agent"):
        step.model = _model_call(attrs, blobs)
    elif kind == "tool":
        step.tool = _tool_call(step, attrs, blobs)
    return step


def _json_value(p: Payload | None, display: Any) -> Any:
    """The value of a JSON content attribute, from exact bytes when they are usable."""
    if p is not None and p.usable:
        try:
            return p.value()
        except payload.PayloadError:
            pass
    if isinstance(display, str):
        try:
            return json.loads(display)
        except ValueError:
            return None
    return display


def _messages(
    attrs: Mapping[str, Any], key: str, blobs: BlobReader | None
) -> tuple[Any, Payload | None]:
    p = from_attributes(attrs, key, blobs)
    value = _json_value(p, attrs.get(key))
    if value is None:
        return None, p
    if isinstance(value, dict):
        value = [value]
    return value, p


def _model_call(attrs: Mapping[str, Any], blobs: BlobReader | None) -> ModelCall:
    inputs, in_p = _messages(attrs, A.INPUT_MESSAGES, blobs)
    outputs, out_p = _messages(attrs, A.OUTPUT_MESSAGES, blobs)
    system, _ = _messages(attrs, A.SYSTEM_INSTRUCTIONS, blobs)
    tools, _ = _messages(attrs, A.TOOL_DEFINITIONS, blobs)
    params = {
        k[len(A.REQUEST_PREFIX) :]: v
        for k, v in attrs.items()
        if k.startswith(A.REQUEST_PREFIX) and k != A.REQUEST_MODEL
    }
    usage = {
        k[len("gen_ai.usage.") :]: v
        for k, v in attrs.items()
        if k.startswith("gen_ai.usage.") and isinstance(v, int) and not isinstance(v, bool)
    }
    reasons = attrs.get(A.RESPONSE_FINISH_REASONS)
    return ModelCall(
        provider=_str(attrs.get(A.PROVIDER_NAME)),
        request_model=_str(attrs.get(A.REQUEST_MODEL)),
        response_model=_str(attrs.get(A.RESPONSE_MODEL)),
        response_id=_str(attrs.get(A.RESPONSE_ID)),
        params=params,
        input_messages=M.normalize(inputs) if isinstance(inputs, list) else None,
        output_messages=M.normalize(outputs) if isinstance(outputs, list) else None,
        system_instructions=M.system_parts(system) if system is not None else None,
        tool_definitions=tools if isinstance(tools, list) else None,
        finish_reasons=[str(r) for r in reasons] if isinstance(reasons, list) else None,
        usage=usage,
        input_payload=in_p,
        output_payload=out_p,
    )


def _tool_call(step: Step, attrs: Mapping[str, Any], blobs: BlobReader | None) -> ToolCall:
    name = _str(attrs.get(A.TOOL_NAME)) or step.name.removeprefix(A.OP_EXECUTE_TOOL).strip()
    args_p = from_attributes(attrs, A.TOOL_CALL_ARGUMENTS, blobs)
    result_p = from_attributes(attrs, A.TOOL_CALL_RESULT, blobs)
    call = ToolCall(tool_name=name, call_id=_str(attrs.get(A.TOOL_CALL_ID)))
    call.arguments_payload, call.result_payload = args_p, result_p
    call.arguments = _plain(args_p, attrs.get(A.TOOL_CALL_ARGUMENTS), parse=True)
    call.result = _plain(result_p, attrs.get(A.TOOL_CALL_RESULT), parse=False)
    error_type = _str(attrs.get(A.ERROR_TYPE))
    exc_event = next((e for e in step.events if e["name"] == "exception"), None)
    if step.status == "ERROR" or error_type or exc_event:
        ev = exc_event["attributes"] if exc_event else {}
        call.error = ToolError(
            type=error_type or _str(ev.get("exception.type")) or "Exception",
            message=_str(ev.get("exception.message")) or step.status_message,
            args_payload=from_attributes(attrs, A.EXCEPTION_ARGS, blobs),
        )
    return call


def _plain(p: Payload | None, display: Any, *, parse: bool) -> Any:
    if p is not None and p.usable:
        try:
            return payload.plain(p.value())
        except payload.PayloadError:
            pass
    if parse:
        return M.parse_arguments(display)
    return display


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
