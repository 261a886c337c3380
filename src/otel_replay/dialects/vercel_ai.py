"""The Vercel AI SDK's telemetry (``@ai-sdk/otel``; ``experimental_telemetry`` before it).

Its ``LegacyOpenTelemetry`` integration (and every release before the
GenAI one) writes ``ai.*`` attributes, named by ``ai.operationId``:

- ``ai.generateText.doGenerate`` / ``ai.streamText.doStream``: one model
  call.  ``ai.prompt.messages`` is the SDK's prompt (JSON text of messages
  whose content parts are ``text``, ``reasoning``, ``tool-call``
  (``toolCallId``, ``toolName``, ``input``) and ``tool-result``
  (``output``: ``{type, value}``)); ``ai.prompt.tools`` the tools (JSON text
  each); ``ai.response.text``, ``ai.response.toolCalls`` and
  ``ai.response.finishReason`` the answer; ``ai.model.provider`` names the
  provider and its API (``openai.chat``, ``openai.responses``).
- ``ai.toolCall``: one tool run, ``ai.toolCall.name`` / ``.id`` /
  ``.args`` / ``.result`` (``.input`` / ``.output`` in some releases).
- ``ai.generateText`` / ``ai.streamText``: the whole call, an agent run.

A tool's result reaches the model as the provider renders the SDK's
``{type, value}`` output (:func:`sent_output`, from ``@ai-sdk/openai``'s
``convertToOpenAIChatMessages`` and its Responses converter): a ``text``
output is its text, a ``json`` one ``JSON.stringify`` of its value, a
``content`` one ``JSON.stringify`` of its parts (Chat Completions) or the
parts as ``input_text`` items (Responses), an ``execution-denied`` one its
reason; an error (``error-text``, ``error-json``) is
``JSON.stringify({error: value})`` from ``ai`` 7 (``@ai-sdk/openai`` 4), and
before it the text itself (``error-text``) or ``JSON.stringify`` of the value
(``error-json``).  The legacy prompt says which output each result is, and
the SDK's release is in the recorded ``user-agent`` header (``ai/7.0.173``)
of ``generateText`` calls.  ``streamText`` records none: an error text
spelled as ``ai`` 7 writes a thrown ``Error`` (``Error: message``, its
``toString()``) is read as sent wrapped, one without that spelling (``ai`` 6
wrote the message alone) as sent itself.
The GenAI integration (``ai`` 7) records the output's value alone: a string
is a text output, ``{type: "content", value}`` a content one, any other value
a ``json`` one, and which API it went to is told by the response id
(``resp_...``: Responses); it records a failed call's error as its text, so its
chat spans are marked (:data:`~otel_replay.attributes.TOOL_ERRORS_SENT_AS`)
and the run builder writes the results of the calls whose tool span failed
as they were sent (:mod:`otel_replay.runs.sent_errors`).
With the Responses API, ``@ai-sdk/openai``'s ``convertToOpenAIResponsesInput``
sends an earlier answer's text (a text part that carries the ``itemId`` of the
output message it came from) as ``{"type": "item_reference", "id": itemId}``
when answers are stored (``store``, true unless the provider options say
otherwise); the GenAI integration records the text and no item id.  Its
Responses chat spans are marked
(:data:`~otel_replay.attributes.ANSWERS_SENT_AS`) and the run builder writes
such texts as the references they were sent as
(:func:`answers_as_references`, from :mod:`otel_replay.runs.item_references`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, MutableMapping, Sequence, Set
from decimal import Decimal
from typing import Any

from .. import attributes as A
from .. import json_text
from .. import messages as M
from ..payload import codec as payload
from .span import Dialect, GenAI, SpanView, loads, put

OPERATION = "ai.operationId"
#: The GenAI integration's default tracer name.
GENAI_SCOPE = "gen_ai"
#: The form of the ids the SDK's providers give a call the model sent without one
#: (``generateId()``: 16 letters and digits), every release and integration.
CALL_IDS_MADE_AS = "ai_sdk"
_MODEL_CALLS = ("ai.generateText.doGenerate", "ai.streamText.doStream")
_RUNS = ("ai.generateText", "ai.streamText")
#: The SDK's release in the ``user-agent`` it sends (and records): ``ai/7.0.173``.
_RELEASE = re.compile(r"(?:^|\s)ai/(\d+)\.")
#: The ``ai`` release from which OpenAI's providers send an error as ``{"error": value}``.
_ERRORS_WRAPPED_FROM = 7
#: ``Error.prototype.toString()`` of an error class (``Error``, ``TypeError``, ``AI_...Error``).
_ERROR_STRING = re.compile(r"(?:[A-Za-z_$][\w$]*)?(?:Error|Exception)(?:: |$)")


def _matches(span: SpanView) -> bool:
    return isinstance(span.get(OPERATION), str) or (
        span.scope == GENAI_SCOPE and span.get(A.OPERATION_NAME) == A.OP_CHAT
    )


def _fill(span: SpanView) -> GenAI:
    operation = span.get(OPERATION)
    if operation is None:  # the GenAI integration: how its provider sends a tool's error
        out: GenAI = {A.CALL_IDS_MADE_AS: CALL_IDS_MADE_AS}
        if _openai(span.text(A.PROVIDER_NAME)):
            out[A.TOOL_ERRORS_SENT_AS] = "error_object_text"
            if (span.text(A.RESPONSE_ID) or "").startswith("resp_"):
                # The Responses provider sends an earlier answer's text as an item_reference.
                out[A.ANSWERS_SENT_AS] = M.ITEM_REFERENCE
        return out
    if operation in _MODEL_CALLS:
        return _model_call(span)
    if operation == "ai.toolCall":
        return _tool_call(span)
    if operation in _RUNS:
        return {A.OPERATION_NAME: A.OP_INVOKE_AGENT}
    return {}


def _openai(provider: str | None) -> bool:
    return provider is not None and provider.split(".")[0] == "openai"


def _wraps_errors(span: SpanView) -> bool | None:
    """Whether the release of ``ai`` that made a legacy model span sends a tool's error
    as ``{"error": value}`` (``ai`` 7 and after); None when the span does not say.

    A call's recorded ``user-agent`` names the release.  ``streamText`` records
    none in any release (None); a ``generateText`` span without one is of a
    release from before the header was recorded, which sent the error itself.
    """
    agent = span.text("ai.request.headers.user-agent")
    found = _RELEASE.search(agent) if agent else None
    if found is None:
        return None if span.get(OPERATION) == "ai.streamText.doStream" else False
    return int(found.group(1)) >= _ERRORS_WRAPPED_FROM


def _error_string(value: Any) -> bool:
    """An error text as ``ai`` 7 writes a thrown ``Error`` (its ``toString()``,
    ``TypeError: message``); ``ai`` 6 wrote the message alone."""
    return isinstance(value, str) and _ERROR_STRING.match(value) is not None


def _model_call(span: SpanView) -> GenAI:
    provider = span.text("ai.model.provider")
    out: GenAI = {A.OPERATION_NAME: A.OP_CHAT, A.CALL_IDS_MADE_AS: CALL_IDS_MADE_AS}
    put(out, A.PROVIDER_NAME, provider.split(".")[0] if provider else None)
    put(out, A.REQUEST_MODEL, span.text("ai.model.id"))
    prompt = span.json("ai.prompt.messages")
    if isinstance(prompt, list):
        wire = _Wire(provider, _wraps_errors(span))
        put(out, A.INPUT_MESSAGES, [_message(m, wire) for m in prompt if isinstance(m, Mapping)])
    tools = span.get("ai.prompt.tools")
    if isinstance(tools, (list, tuple)):
        defs = [loads(t) for t in tools]
        put(out, A.TOOL_DEFINITIONS, [M.tool_definition(d) for d in defs if isinstance(d, Mapping)])
    answer = _answer(span)
    if answer is not None:
        out[A.OUTPUT_MESSAGES] = [answer]
    return out


def _answer(span: SpanView) -> dict[str, Any] | None:
    text, calls = span.get("ai.response.text"), span.json("ai.response.toolCalls")
    if text is None and calls is None:
        return None  # outputs not recorded
    parts: list[dict[str, Any]] = []
    if isinstance(text, str) and text:
        parts.append({"type": "text", "content": text})
    for call in calls if isinstance(calls, list) else []:
        if isinstance(call, Mapping):
            parts.append(_call(call))
    message: dict[str, Any] = {"role": "assistant", "parts": parts}
    reason = span.text("ai.response.finishReason")
    if reason:
        message["finish_reason"] = reason
    return message


def _call(part: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "tool_call",
        "id": part.get("toolCallId"),
        "name": part.get("toolName"),
        "arguments": M.parse_arguments(part.get("input", part.get("args"))),
    }


class _Wire:
    """Which API a model call went to (``openai.chat``, ``openai.responses``...) and
    whether its release of ``ai`` wraps a tool's error."""

    def __init__(self, provider: str | None, wraps_errors: bool | None) -> None:
        self.openai = _openai(provider)
        self.responses = provider == "openai.responses"
        self.wraps_errors = wraps_errors


def _message(message: Mapping[str, Any], wire: _Wire) -> dict[str, Any]:
    role = str(message.get("role", "user"))
    content = message.get("content")
    if isinstance(content, str):
        return M.normalize_message({"role": role, "content": content})
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "tool-call":
            parts.append(_call(part))
        elif kind == "tool-result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": part.get("toolCallId"),
                    "response": _output(part.get("output", part.get("result")), wire),
                }
            )
        elif kind in ("text", "reasoning") and isinstance(part.get("text"), str):
            parts.append({"type": kind, "content": part["text"]})
        else:
            parts.append(M.normalize_part(dict(part)))
    return {"role": role, "parts": parts}


def _output(output: Any, wire: _Wire) -> Any:
    """A tool result's ``{type, value}`` as the model was sent it."""
    if not isinstance(output, Mapping) or "type" not in output:
        return M.tool_response(output)
    if not wire.openai:
        value = output.get("value")
        return value if output["type"] in ("error-text", "error-json") else M.tool_response(value)
    wraps = wire.wraps_errors
    if wraps is None:
        # A stream records no release: ai 7 writes a thrown Error's error-text as its
        # toString() ("Error: ..."), earlier releases its message alone.
        wraps = output["type"] != "error-text" or _error_string(output.get("value"))
    return sent_output(output, responses=wire.responses, wraps_errors=wraps)


def sent_output(output: Mapping[str, Any], *, responses: bool, wraps_errors: bool) -> Any:
    """An SDK tool output (``{type, value}``) as ``@ai-sdk/openai`` sends it.

    ``responses``: to the Responses API (else Chat Completions);
    ``wraps_errors``: by a release that sends an error as ``{"error": value}``
    (``ai`` 7, ``@ai-sdk/openai`` 4), else the older rule.
    """
    kind, value = output.get("type"), output.get("value")
    if kind in ("error-text", "error-json"):
        if wraps_errors:
            return stringify({"error": value})
        return value if kind == "error-text" else stringify(value)
    if kind == "text":
        return value
    if kind == "execution-denied":
        reason = output.get("reason")
        return reason if isinstance(reason, str) else "Tool call execution denied."
    if kind == "content" and responses and isinstance(value, list):
        return [_input_part(p) for p in value]
    if kind in ("json", "content"):
        return stringify(value)
    return M.tool_response(value)


def _input_part(part: Any) -> Any:
    """A content output's part as the Responses API is sent it (a text as ``input_text``;
    others, files and images, as recorded)."""
    if isinstance(part, Mapping) and part.get("type") == "text":
        return {"type": "input_text", "text": part.get("text")}
    return part


def stringify(value: Any) -> str:
    """JSON text of a JSON value as JavaScript's ``JSON.stringify`` writes it.

    No spaces, characters as they are (control characters escaped, as Python
    does too), keys in their order, and numbers as JavaScript writes them:
    ``1e-7``, ``1e+21``, ``0.000001``, where Python writes ``1e-07``, ``1e+21``,
    ``1e-06``; an integral value written by JavaScript reads back as an int.
    """
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, Mapping):
        items = (
            f"{json.dumps(str(k), ensure_ascii=False)}:{stringify(v)}" for k, v in value.items()
        )
        return "{" + ",".join(items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(stringify(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def _number(x: float) -> str:
    """``Number.prototype.toString`` of a double (ECMAScript's Number::toString)."""
    if not math.isfinite(x):
        return "null"  # what JSON.stringify writes for NaN and the infinities
    if x == 0:
        return "0"
    sign = "-" if x < 0 else ""
    digits_tuple, exponent = Decimal(repr(abs(x))).normalize().as_tuple()[1:]
    digits = "".join(map(str, digits_tuple))
    k = len(digits)
    n = k + int(exponent)  # the value is 0.digits × 10^n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    mantissa = digits if k == 1 else digits[0] + "." + digits[1:]
    return f"{sign}{mantissa}e{'+' if e > 0 else '-'}{abs(e)}"


def _repair(span: SpanView) -> GenAI:
    """The GenAI integration's input messages with each tool result as it was sent."""
    if span.get(OPERATION) is not None or not _openai(span.text(A.PROVIDER_NAME)):
        return {}
    recorded = span.json(A.INPUT_MESSAGES)
    if not isinstance(recorded, list):
        return {}
    response_id = span.text(A.RESPONSE_ID) or ""
    responses = response_id.startswith("resp_")
    out, changed = [], False
    for message in recorded:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        if isinstance(parts, list):
            sent = [_sent_value(p, responses) for p in parts]
            changed = changed or sent != parts
            message = {**message, "parts": sent}
        out.append(message)
    return {A.INPUT_MESSAGES: out} if changed else {}


def _sent_value(part: Any, responses: bool) -> Any:
    """A ``tool_call_response`` part of the GenAI integration (the output's value alone)
    with the value as it was sent; an error's text is left to the run builder."""
    if not isinstance(part, Mapping) or part.get("type") != "tool_call_response":
        return part
    value = part.get("response")
    if isinstance(value, str):
        return part  # a text output, or a failed call's error text
    if isinstance(value, Mapping) and value.get("type") == "content":
        output: Mapping[str, Any] = value
    else:
        output = {"type": "json", "value": value}
    return {**part, "response": sent_output(output, responses=responses, wraps_errors=True)}


def _tool_call(span: SpanView) -> GenAI:
    out: GenAI = {A.OPERATION_NAME: A.OP_EXECUTE_TOOL}
    put(out, A.TOOL_NAME, span.text("ai.toolCall.name"))
    put(out, A.TOOL_CALL_ID, span.text("ai.toolCall.id"))
    args = _first(span, "ai.toolCall.args", "ai.toolCall.input")
    put(out, A.TOOL_CALL_ARGUMENTS, M.parse_arguments(args))
    result = _first(span, "ai.toolCall.result", "ai.toolCall.output")
    if isinstance(result, str) and _json_text(result):
        # JSON.stringify of what the tool returned: that value, null included (a tool
        # that returned null has a result, the JSON text "null", not none).
        out[A.TOOL_CALL_RESULT] = result
        out[A.TYPE + A.TOOL_CALL_RESULT] = payload.JSON
    elif result is not None:
        out[A.TOOL_CALL_RESULT] = result
    return out


def _json_text(text: str) -> bool:
    try:
        json_text.loads(text)
    except ValueError:
        return False
    return True


def _first(span: SpanView, *keys: str) -> Any:
    return next((span.get(k) for k in keys if k in span.attributes), None)


DIALECT = Dialect(
    "vercel_ai",
    matches=_matches,
    fill=_fill,
    repair=_repair,
    reads_values=True,
    could_match=lambda scope, names: OPERATION in names or scope == GENAI_SCOPE,
)


def answer_text(message: Mapping[str, Any]) -> str | None:
    """The text of ``message``'s text parts, joined (empty text is text); None without any."""
    parts = [p for p in message.get("parts") or [] if isinstance(p, Mapping)]
    texts = [str(p.get("content") or "") for p in parts if p.get("type") == "text"]
    return "".join(texts) if texts else None


def answers_as_references(
    input_messages: Sequence[MutableMapping[str, Any]], answered: Set[str]
) -> int:
    """Write in a marked call's input the earlier answers it sent back as item references.

    An assistant message whose text (:func:`answer_text`) is one of the
    ``answered`` texts (earlier answers of the run) was sent as the reference
    ``convertToOpenAIResponsesInput`` makes of it: its text parts become one
    ``item_reference`` part where the first was (``id`` None: the trace holds
    no item id; ``content`` the text it stands for, for reading), its other
    parts (its calls) kept.  Returns how many messages were written so.
    """
    done = 0
    for message in input_messages:
        text = answer_text(message)
        if message.get("role") == "assistant" and text is not None and text in answered:
            message["parts"] = _referenced(message["parts"], text)
            done += 1
    return done


def _referenced(parts: list[Any], text: str) -> list[Any]:
    """``parts`` with their text parts as one reference, where the first was."""
    out: list[Any] = []
    for part in parts:
        if not (isinstance(part, Mapping) and part.get("type") == "text"):
            out.append(part)
        elif not any(isinstance(p, Mapping) and p.get("type") == M.ITEM_REFERENCE for p in out):
            out.append({"type": M.ITEM_REFERENCE, "id": None, "content": text})
    return out
