"""A stored span -> a classified :class:`Step` in GenAI terms.

Spans are first read through :func:`otel_replay.dialects.normalize`, so a
span written by another stack (OpenInference, OpenLLMetry, pydantic-ai...)
is classified and extracted from the GenAI attributes its dialect gives it;
``Step.attributes`` keeps the span's own.  Attribute names read (current
semconv names; the replaced ones in :data:`otel_replay.attributes.LEGACY`
are accepted too):

- kind: ``gen_ai.operation.name``; without it, ``gen_ai.tool.name`` means a
  tool step and a request model or provider with messages or usage a model step
- model and agent steps: ``gen_ai.provider.name``, ``gen_ai.request.model``,
  ``gen_ai.response.model``, ``gen_ai.response.id``, ``gen_ai.request.*``,
  ``gen_ai.input.messages``, ``gen_ai.output.messages``,
  ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``,
  ``gen_ai.response.finish_reasons``, ``gen_ai.usage.*``
- tool steps: ``gen_ai.tool.name``, ``gen_ai.tool.call.id``,
  ``gen_ai.tool.call.arguments``, ``gen_ai.tool.call.result``, ``error.type``,
  the ``exception`` event, ``otel_replay.exception.args``

Content attributes are read through :func:`~otel_replay.payload.attributes.from_attributes`,
so the exact bytes win over a display form that may have been truncated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import attributes as A
from .. import json_text
from .. import messages as M
from ..dialects import normalize
from ..dialects.genai import current_attributes
from ..dialects.registry import genai_only
from ..otlp.records import SpanRecord
from ..payload import codec as payload
from ..payload.attributes import BlobReader, Payload, from_attributes
from .derived_tools import unverified
from .failed_calls import STREAMED
from .model import ModelCall, RawHttp, Snapshot, Step, StepKind, ToolCall, ToolError

_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_OPENING = ("{", "[", b"{", b"[")
_USAGE = "gen_ai.usage."


__all__ = ["classify", "current_attributes", "model_call", "span_kind", "to_step", "tool_call"]


def classify(attrs: Mapping[str, Any]) -> StepKind:
    """The step kind of a span with these (current-name) attributes."""
    op = attrs.get(A.OPERATION_NAME)
    if not isinstance(op, str):  # a list or map from a hostile trace names no operation
        op = None
    if op in A.MODEL_OPERATIONS:
        return "model"
    if op == A.OP_EXECUTE_TOOL:
        return "tool"
    if op in A.AGENT_OPERATIONS:
        return "agent"
    if op is None:
        # Older instrumentations did not always name the operation.
        if A.TOOL_NAME in attrs:
            return "tool"
        # A stream flag says so too: OpenLLMetry's span of a Responses stream that failed
        # holds the request's model and that it streamed, and nothing else.
        if (A.REQUEST_MODEL in attrs or A.PROVIDER_NAME in attrs) and any(
            k in attrs
            for k in (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES, A.USAGE_INPUT_TOKENS, *STREAMED)
        ):
            return "model"
    return "other"


def span_kind(span: SpanRecord) -> StepKind:
    """The kind of step ``span`` makes (as :func:`to_step` classifies it)."""
    span = span.plain()
    attrs = span.attributes
    if (
        type(attrs.get(A.OPERATION_NAME)) is str
        and not span.events
        and genai_only(
            attrs, name=span.name, scope=span.scope_name, scope_version=span.scope_version
        )
    ):
        # The operation it names decides, and the GenAI dialect alone fills only names a
        # span lacks: the kind is told without reading the span through the dialects.
        return classify(attrs)
    return classify(_normalized(span, _events(span)))


def _events(span: SpanRecord) -> list[dict[str, Any]]:
    # The record's own dicts, not copies: a record is read for one step, and no step
    # changes its attributes.
    return [{"name": e.name, "time_ns": e.time_ns, "attributes": e.attributes} for e in span.events]


def _normalized(span: SpanRecord, events: list[dict[str, Any]]) -> dict[str, Any]:
    return normalize(
        span.attributes,
        name=span.name,
        scope=span.scope_name,
        events=events,
        scope_version=span.scope_version,
    )


def to_step(span: SpanRecord, blobs: BlobReader | None = None) -> Step:
    """Classify ``span`` and extract what its kind carries; ``blobs`` resolves payload refs."""
    span = span.plain()
    events = _events(span)
    attrs = _normalized(span, events)
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
        attributes=span.attributes,
        events=events,
        scope=span.scope_name,
        notes=span.notes,
    )
    step.snapshots = _snapshots(span.span_id, events, blobs)
    if kind == "model" or (kind == "agent" and _has_messages(attrs)):
        step.model = model_call(attrs, blobs)
    elif kind == "tool":
        step.tool = tool_call(step, attrs, blobs)
    return step


def _snapshots(
    span_id: str, events: list[dict[str, Any]], blobs: BlobReader | None
) -> list[Snapshot]:
    """The ``otel_replay.snapshot`` events of a span (see :mod:`otel_replay.capture.snapshot`)."""
    out: list[Snapshot] = []
    for e in events:
        if e["name"] != A.SNAPSHOT_EVENT:
            continue
        attrs = e["attributes"]
        name = attrs.get(A.SNAPSHOT_NAME)
        out.append(
            Snapshot(
                name=name if isinstance(name, str) else "",
                time_ns=e["time_ns"],
                span_id=span_id,
                payload=from_attributes(attrs, A.SNAPSHOT_STATE, blobs),
            )
        )
    if len(out) > 1:
        out.sort(key=lambda snap: snap.time_ns)
    return out


def _has_messages(attrs: Mapping[str, Any]) -> bool:
    keys = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES)
    return any(
        k in attrs or A.REF + k in attrs or A.BYTES + k in attrs or k + A.STORED_REF in attrs
        for k in keys
    )


# --- content values ----------------------------------------------------------------


def _json_value(p: Payload | None, display: Any, *, text: bool) -> Any:
    """The value of a JSON content attribute: from the exact bytes when usable, else the display.

    A string that is not JSON is kept when ``text`` (a plain system prompt), else dropped.
    """
    if p is not None and p.usable:
        try:
            value = p.plain()
        except payload.PayloadError:
            pass
        else:
            # Third-party spans carry JSON as an untagged string (payload type "str").
            return _loads(value, text=text) if isinstance(value, str) else value
    return _loads(display, text=text) if isinstance(display, str) else display


def _loads(raw: str, *, text: bool) -> Any:
    try:
        return json_text.loads(raw)
    except ValueError:
        return raw if text else None


def _content(
    attrs: Mapping[str, Any], key: str, blobs: BlobReader | None, *, text: bool = False
) -> tuple[Any, Payload | None]:
    p = from_attributes(attrs, key, blobs)
    return _json_value(p, attrs.get(key), text=text), p


def _messages(value: Any) -> list[dict[str, Any]] | None:
    # (The exact types told first: parsed JSON holds no others, and the ABC checks cost
    # more than the rest of a message's reading.)
    if type(value) is not list and isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return None
    out: list[dict[str, Any]] = []
    for item in value:
        if type(item) is dict or isinstance(item, Mapping):
            try:
                out.append(M.normalize_message(item))
            except (AttributeError, TypeError, KeyError, ValueError):
                # A shape we do not know: keep it whole, as one part, rather than fail the load.
                role = item.get("role")
                part = {"type": "unknown", "value": payload.plain(dict(item))}
                out.append({"role": role if isinstance(role, str) else "user", "parts": [part]})
        else:
            out.append({"role": "user", "parts": [M.normalize_part(item)]})
    return out


def _system(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, (str, list)):
        value = str(value)
    return M.system_parts(value)


def _tool_definitions(value: Any) -> list[dict[str, Any]] | None:
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        return None
    return [M.tool_definition(t) if isinstance(t, Mapping) else {"name": str(t)} for t in value]


def _answer(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    return None if messages is None else M.one_answer(messages)


def model_call(attrs: Mapping[str, Any], blobs: BlobReader | None = None) -> ModelCall:
    """The :class:`ModelCall` recorded on a model (or agent) span's current-name attributes."""
    inputs, in_p = _content(attrs, A.INPUT_MESSAGES, blobs)
    outputs, out_p = _content(attrs, A.OUTPUT_MESSAGES, blobs)
    params: dict[str, Any] = {}
    usage: dict[str, int] = {}
    ours = False  # an attribute of ours: a payload's companion, an HTTP exchange
    for k, v in attrs.items():  # one pass: a span's attributes are read for all three
        if k.startswith(A.REQUEST_PREFIX):
            if k != A.REQUEST_MODEL:
                params[k[len(A.REQUEST_PREFIX) :]] = v
        elif k.startswith(_USAGE) and k not in A.LEGACY and _is_int(v):
            usage[k[len(_USAGE) :]] = v
        elif k.startswith(A.PREFIX):
            ours = True
    # Most model spans record neither: told from the pass above rather than by asking
    # for each of their five companions.
    system, _ = (
        _content(attrs, A.SYSTEM_INSTRUCTIONS, blobs, text=True)
        if ours or _displayed(attrs, A.SYSTEM_INSTRUCTIONS)
        else (None, None)
    )
    tools, _ = (
        _content(attrs, A.TOOL_DEFINITIONS, blobs)
        if ours or _displayed(attrs, A.TOOL_DEFINITIONS)
        else (None, None)
    )
    reasons = attrs.get(A.RESPONSE_FINISH_REASONS)
    if isinstance(reasons, str):
        reasons = _json_strings(reasons) or [reasons]
    return ModelCall(
        provider=_str(attrs.get(A.PROVIDER_NAME)),
        request_model=_str(attrs.get(A.REQUEST_MODEL)),
        response_model=_str(attrs.get(A.RESPONSE_MODEL)),
        response_id=_str(attrs.get(A.RESPONSE_ID)),
        tool_errors_sent_as=_str(attrs.get(A.TOOL_ERRORS_SENT_AS)),
        tool_results_sent_as=_str(attrs.get(A.TOOL_RESULTS_SENT_AS)),
        answers_sent_as=_str(attrs.get(A.ANSWERS_SENT_AS)),
        text_beside_calls=_str(attrs.get(A.TEXT_BESIDE_CALLS)),
        system_not_recorded=attrs.get(A.SYSTEM_NOT_RECORDED) is True,
        call_ids_made_as=_str(attrs.get(A.CALL_IDS_MADE_AS)),
        params=params,
        input_messages=_messages(inputs),
        output_messages=_answer(_messages(outputs)),
        system_instructions=_system(system),
        tool_definitions=_tool_definitions(tools),
        finish_reasons=[str(r) for r in reasons] if isinstance(reasons, list) else None,
        usage=usage,
        input_payload=in_p,
        output_payload=out_p,
        raw=raw_http(attrs, blobs) if ours else None,  # its attributes are all ours
    )


def _displayed(attrs: Mapping[str, Any], key: str) -> bool:
    """Whether ``attrs`` hold content ``key`` by a name not of ours (see
    :func:`~otel_replay.payload.attributes.from_attributes`): the value, or a reference to
    where it is stored."""
    return key in attrs or key + A.STORED_REF in attrs


def _json_strings(text: str) -> list[str] | None:
    """The list of strings ``text`` spells in JSON (LiteLLM writes the finish reasons so),
    else None."""
    if not text.startswith("["):
        return None
    try:
        value = json_text.loads(text)
    except ValueError:
        return None
    return value if type(value) is list and all(type(v) is str for v in value) else None


def raw_http(attrs: Mapping[str, Any], blobs: BlobReader | None = None) -> RawHttp | None:
    """The raw HTTP exchange an HTTP recorder put on a model span (None: not recorded)."""
    response = from_attributes(attrs, A.HTTP_RESPONSE_BODY, blobs)
    if response is None:
        return None
    headers: dict[str, str] = {}
    try:
        loaded = json_text.loads(str(attrs.get(A.HTTP_RESPONSE_HEADERS) or "{}"))
    except ValueError:
        loaded = {}
    if isinstance(loaded, dict):
        headers = {str(k).lower(): str(v) for k, v in loaded.items()}
    sizes = attrs.get(A.HTTP_CHUNK_SIZES)
    offsets = attrs.get(A.HTTP_CHUNK_OFFSETS_MS)
    status = attrs.get(A.HTTP_STATUS)
    return RawHttp(
        method=_str(attrs.get(A.HTTP_METHOD)),
        path=_str(attrs.get(A.URL_PATH)),
        status=status if _is_int(status) else None,
        request_body=from_attributes(attrs, A.HTTP_REQUEST_BODY, blobs),
        response_body=response,
        response_headers=headers,
        chunk_sizes=[int(v) for v in sizes] if isinstance(sizes, (list, tuple)) else [],
        chunk_offsets_ms=[float(v) for v in offsets] if isinstance(offsets, (list, tuple)) else [],
    )


def tool_call(step: Step, attrs: Mapping[str, Any], blobs: BlobReader | None = None) -> ToolCall:
    """The :class:`ToolCall` recorded on a tool span (``step`` gives its name, status, events)."""
    name = tool_name(step.name, attrs)
    args_p = from_attributes(attrs, A.TOOL_CALL_ARGUMENTS, blobs)
    result_p = _semconv_object(from_attributes(attrs, A.TOOL_CALL_RESULT, blobs), attrs)
    call = ToolCall(
        tool_name=name,
        call_id=_str(attrs.get(A.TOOL_CALL_ID)),
        arguments=_arguments(args_p, attrs.get(A.TOOL_CALL_ARGUMENTS)),
        result=_result(result_p, attrs.get(A.TOOL_CALL_RESULT)),
        arguments_payload=args_p,
        result_payload=result_p,
        not_run=attrs.get(A.TOOL_NOT_RUN) is True,
    )
    error_type = _str(attrs.get(A.ERROR_TYPE))
    failed = step.status == "ERROR" or bool(error_type)
    if attrs.get(A.TOOL_RETURNED_NONE) is True and not failed and result_p is None:
        # A stack that records no result for a tool that returned None (its dialect says
        # so): the result is None, not missing.
        call.result, call.result_payload = None, unverified(None)
    if failed:
        # The last exception event is the one that ended the span (earlier ones were retried).
        exc = next((e for e in reversed(step.events) if e["name"] == "exception"), None)
        ev: Mapping[str, Any] = exc["attributes"] if exc is not None else {}
        call.error = ToolError(
            type=error_type or _str(ev.get("exception.type")) or "Exception",
            message=_str(ev.get("exception.message"))
            or step.status_message
            or _str(attrs.get(A.EXCEPTION_MESSAGE))
            or "",
            args_payload=from_attributes(attrs, A.EXCEPTION_ARGS, blobs),
            returned=attrs.get(A.TOOL_ERROR_RETURNED) is True,
        )
    return call


def tool_name(span_name: str, attrs: Mapping[str, Any]) -> str:
    """The name of the tool a tool span named ``span_name`` with ``attrs`` ran."""
    return _str(attrs.get(A.TOOL_NAME)) or (
        span_name.removeprefix(A.OP_EXECUTE_TOOL + " ").strip() or span_name
    )


def _semconv_object(p: Payload | None, attrs: Mapping[str, Any]) -> Payload | None:
    """A result recorded as JSON text by an instrumentation: the object it encodes.

    The GenAI semantic conventions expect a tool's result to be an object,
    recorded as JSON text where attributes cannot hold one.  Text that is a
    JSON object or array, with no type of its own recorded (otel-replay's
    capture records one; a dialect may say which it is), is that object.
    """
    if p is None or p.type != payload.STR or p.status != "unverified":
        return p
    source = p.text if p.text is not None else p.data
    if source is None or A.TYPE + A.TOOL_CALL_RESULT in attrs or source[:1] not in _OPENING:
        return p
    try:
        value = json_text.loads(source)
    except ValueError:
        return p
    if not isinstance(value, (dict, list)):
        return p
    return p.retyped(payload.JSON)


def _arguments(p: Payload | None, display: Any) -> Any:
    if p is not None and p.usable:
        try:
            value = p.plain()
        except payload.PayloadError:
            pass
        else:
            # Semconv records arguments as a JSON string; a str payload is that string.
            return M.parse_arguments(value) if isinstance(value, str) else value
    return M.parse_arguments(display)


def _result(p: Payload | None, display: Any) -> Any:
    if p is not None and p.usable:
        try:
            return p.plain()
        except payload.PayloadError:
            pass
    return display


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
