"""Model calls that failed and that a replay fails again, rather than serve what they hold.

A replay serves each recorded answer; a call whose client raised (an answer cut partway
through, a failure it did not retry) has no answer to serve, or only the first deltas of
one.  Where the trace shows the run went the way that failure made it go (it ended there,
or the agent caught the error and went on), a replay fails the call again so that the
agent goes the same way: :func:`fails_again`.  The call is marked failed; or an
instrumentation ended it unfailed (pydantic-ai 2, OpenLLMetry's OpenAI on a stream cut
partway), and what says it failed is an answer without its end: no finish reason where
every call before it has one, or a streamed answer without one (:func:`cut_stream`: every
API sends the reason in a stream's last event, and the instrumentations that say a call
streamed, or time its first chunk, record it).

A replay fails such a call as it failed: on an error status the trace names, with that
status (:mod:`.error_status`); else with what the trace holds of its answer (a stream's
first deltas: :func:`held_before_cut`), or with no byte of it, which is what the client saw
when it failed before any (a connection refused) or read a body it could not parse.  A
stream cut partway had given the framework its first deltas, and some keep them: where the
trace holds none of them, the call is not recorded whole (:func:`cut_unrecorded`), the
verdict names its output, and a replay refuses it, naming it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .. import json_text

if TYPE_CHECKING:
    from .model import Run, Step


#: The attributes by which an instrumentation says a call's answer was streamed
#: (OpenLLMetry's, and the older name LiteLLM and AutoGen set).
STREAMED = ("gen_ai.is_streaming", "llm.is_streaming")
#: Attributes that time a streamed answer's first chunk (pydantic-ai's and the AI SDK's
#: GenAI spans, OpenLLMetry's Anthropic ones): the tracer read the stream chunk by chunk,
#: the last of which carries the finish reason, and every such span of the conformance
#: corpus whose stream reached its end records it; one without it saw the stream cut
#: (pydantic-ai ends the span of a stream cut after whole tool calls unfailed, holding
#: them).
FIRST_CHUNK = (
    "gen_ai.client.operation.time_to_first_chunk",
    "gen_ai.response.time_to_first_chunk",
)
#: Attributes that say a call asked for a stream (the Anthropic SDK's own spans): a
#: streamed call, though not one :func:`cut_stream` reads a missing finish reason on (the
#: SDK's span records none).
_ASKED_STREAM = ("gen_ai.request.stream", *FIRST_CHUNK)
#: What a failed call's error says when the failure came after the answer's headers, as
#: its body was read (a stream partway): the AI SDK's error for a body it could not read
#: after a success status; httpx's for a body that ended before its length (in the
#: recorded stack trace, when the client raised its own error from it: the OpenAI SDK's
#: "Connection error.", which it also raises for a connection refused).
_BODY_CUT = ("Failed to process successful response", "without sending complete message body")
#: The whole message of an error that says so: undici's (Node's fetch) for a body cut.
_BODY_CUT_ALONE = ("terminated",)
#: The class of an error raised decoding JSON text (Python's ``json.decoder.JSONDecodeError``,
#: and the libraries' of that name): a call that failed with one itself, not wrapped in a
#: client's error, failed on text that had come, whole or in deltas (ADK 1.x decodes a
#: streamed call's arguments once the stream ends, and a stream cut inside them raises it).
_DECODING = "JSONDecodeError"
#: The OpenAI and Anthropic SDKs' ``APIConnectionError`` and ``APITimeoutError``, raised
#: alike for a connection that failed before any answer and for a stream cut or stalled
#: partway: alone (no stack trace recorded beneath, as the Agents SDK's spans hold only the
#: text), they cannot tell which.
_EITHER = ("Connection error.", "Request timed out.")
#: The Agents SDK's span errors, which say whether the call streamed: its models'
#: ``stream_response`` ends the span in the first, ``get_response`` in the second.
_AGENTS_STREAMED = "Error streaming response"
_AGENTS_NOT_STREAMED = "Error getting response"
#: smolagents' model methods, which OpenInference names its model spans after: a streamed
#: call's, and not.
_SMOLAGENTS_STREAMED = ".generate_stream"
_SMOLAGENTS_NOT_STREAMED = ".generate"


def streamed(step: Step) -> bool:
    """Whether ``step``'s span says its answer was streamed."""
    attrs = step.attributes or {}
    return any(attrs.get(key) in (True, "true", "True") for key in STREAMED)


def cut_stream(step: Step) -> bool:
    """Whether ``step`` is a model call whose answer streamed and did not reach its end: the
    span says it streamed, or times the stream's first chunk (:data:`FIRST_CHUNK`), and
    records no finish reason (the stream's last event carries it).  Its client saw the
    stream cut partway (or stopped reading it), though the framework may have ended the
    call unfailed: what the trace holds of the answer, if anything, is its first deltas
    (whole tool calls among them, never run)."""
    m = step.model
    if step.kind != "model" or m is None or m.finish_reasons:
        return False
    attrs = step.attributes or {}
    return streamed(step) or any(attrs.get(key) is not None for key in FIRST_CHUNK)


def failed_end(run: Run, step: Step) -> bool:
    """Whether ``step`` is a model call that failed and so ended ``run``: no retry of it
    (``retried_as``), no model call after it, and the error went up (a span around it ended
    in error: the agent's, though a workflow span above it may not; or nothing traced
    around it, the call a root of its own, as a client instrumentation traces an app's own
    loop).  Its client raised (an answer cut partway through, a failure it did not retry)
    and the run with it: what a replay does again, not an answer the trace lacks.  What it
    holds of the answer is what came before the failure (none, or a stream's first deltas,
    which some instrumentations keep).  The call is marked failed; or, unfailed, it has no
    finish reason where every call before it has one, or is a stream cut short
    (:func:`cut_stream`).  A run that went on to end well after a failed last call is not
    one."""
    m = step.model
    if step.kind != "model" or m is None or step.retried_as is not None:
        return False
    if step.status != "ERROR" and m.finish_reasons:
        return False  # answered to its end (most calls): told without the run's other steps
    if _last_model_call(run) is not step:
        return False
    if step.status == "ERROR":
        return _went_up(run, step)
    if cut_stream(step):
        return _went_up(run, step)
    earlier = [s for s in run.steps if s.kind == "model" and s.model is not None and s is not step]
    cut_short = (
        not m.finish_reasons
        and bool(earlier)
        and all(s.model is not None and s.model.finish_reasons for s in earlier)
    )
    # A call with nothing around it that records no finish reason and says nothing of a
    # stream: an instrumentation may not record the reason at all.
    return cut_short and step.parent_span_id is not None and _went_up(run, step)


def fails_again(run: Run, step: Step) -> bool:
    """Whether a replay fails ``step`` again rather than serve what it holds: a model call
    that failed and so ended the run (:func:`failed_end`), or one whose answer was cut
    partway through, after which the agent went on (it caught the error: CrewAI runs the
    task again from its first request).  The latter ended in error with a stream's first
    deltas as its output (some instrumentations keep them) and no finish reason, no retry
    of it traced, a model call after it: served, those deltas would be taken for the
    answer, and the agent would not go the way it went."""
    if failed_end(run, step):
        return True
    if not _failed_with_deltas(step):
        return False
    return _last_model_call(run) is not step or kept_cut(run, step)


def _failed_with_deltas(step: Step) -> bool:
    """Whether ``step`` is a model call, not retried, that ended in error holding output (a
    stream's first deltas) and no finish reason."""
    m = step.model
    if step.kind != "model" or m is None or step.retried_as is not None:
        return False
    return step.status == "ERROR" and not m.finish_reasons and bool(m.output_messages)


def kept_cut(run: Run, step: Step) -> bool:
    """Whether ``step`` is a model call whose answer was cut partway and whose first deltas
    the framework kept as its answer (CrewAI 0.x returns the partial response): ended in
    error with those deltas as its output and no finish reason, no retry of it traced, the
    run's last model call, and the error went no further (the run ended well on that text).
    A replay fails it again after sending those deltas, so that the framework keeps them as
    it did; served whole, they would be an answer the model never finished."""
    if not _failed_with_deltas(step):
        return False
    return _last_model_call(run) is step and not _went_up(run, step)


def says_something(messages: list[dict[str, Any]] | None) -> bool:
    """Whether an answer's ``messages`` say something: a part that is not text (a call),
    or text that is not empty."""
    return any(
        isinstance(p, Mapping) and (p.get("type") != "text" or p.get("content"))
        for message in messages or []
        for p in message.get("parts") or []
    )


def held_before_cut(step: Step) -> bool:
    """Whether the trace holds what ``step``, a call a replay fails again
    (:func:`fails_again`), streamed before it failed: output that says something where it
    records no finish reason, the first deltas of a stream cut partway, which some
    instrumentations keep (OpenLLMetry's, pydantic-ai's, CrewAI's).  A replay streams
    them again before the cut, as the server did: the framework saw them, and some keep
    them (:func:`kept_cut`)."""
    m = step.model
    return m is not None and not m.finish_reasons and says_something(m.output_messages)


#: What a run's last model call traced without its request lacks: a span says the call
#: failed (OpenLLMetry exports no span of a stream it saw cut; the SDK's own span of it
#: holds no messages).  The verdict says it; a replay reaching the call says it again.
_REQUEST_NOT_IN_TRACE = (
    "the run's last model call is not in the trace: a span says it failed, without the "
    "request it sent"
)


def request_not_in_trace(step: Step) -> str:
    """The problem line of ``step``, a run's last model call traced without its request."""
    return f"{step.label()}: {_REQUEST_NOT_IN_TRACE}"


def request_missing(run: Run, step: Step) -> str | None:
    """Why a request cannot be matched against ``step`` (a replay names it rather than a
    difference): it is a call that ended ``run`` failed (:func:`failed_end`) and records
    no request.  None: not such a call."""
    m = step.model
    if m is None or m.input_messages or not failed_end(run, step):
        return None
    return _REQUEST_NOT_IN_TRACE


def _last_model_call(run: Run) -> Step | None:
    """``run``'s last model call, or None.  Looked for from the end: a replay asks
    :func:`failed_end` of every call it serves, and the steps after the last model call
    are few, where listing every model call of the run made each request cost the run's
    length."""
    for s in reversed(run.steps):
        if s.kind == "model" and s.model is not None:
            return s
    return None


def _went_up(run: Run, step: Step) -> bool:
    """Whether ``step``'s error reached a span around it (or it has none around it)."""
    by_id = {s.span_id: s for s in run.steps}
    parent = by_id.get(step.parent_span_id or "")
    if parent is None:
        return True
    # A trace may name a span its own parent, or close a loop of parents: each once.
    seen = {step.span_id}
    while parent is not None and parent.span_id not in seen:
        if parent.status == "ERROR":
            return True
        seen.add(parent.span_id)
        parent = by_id.get(parent.parent_span_id or "")
    return False


def cut_unrecorded(run: Run, step: Step) -> str | None:
    """Why a replay cannot fail ``step`` again as it failed, or None when it can: a call a
    replay fails again (:func:`fails_again`) whose answer had begun to stream when it
    failed (a success status, or an error saying the body was cut), of which the trace
    holds nothing (the AI SDK records no output for a failed call).  The framework saw the
    deltas that came before the failure, and some keep them (the AI SDK's ``streamText``
    ends a step that got none quietly, where it raised on a cut after some): a cut served
    without them is not what it saw.  A failure before any byte (a connection refused, an
    error status) leaves nothing out, nor does a call that did not stream: a body cut
    partway is a body the client could not read, whatever came of it."""
    m = step.model
    if m is None or m.output_messages or not fails_again(run, step):
        return None
    if not m.input_messages:  # the call is not in the trace at all: said as such
        return None
    began = _began(step)
    stream = _may_have_streamed(run, step)
    if began is False or stream is None:
        return None
    error = (step.status_message or "ERROR").strip().partition("\n")[0]
    error = error if len(error) <= 120 else error[:119] + "…"
    if stream:
        # Not said of the call itself: a replay cannot tell that it streamed, and says so.
        how = (
            f"the answer began and failed partway ({error})"
            if began
            else f"the call failed, an error that does not say whether its answer had begun "
            f"({error})"
        )
        return (
            f"{step.label()}: {how}; its span does not say whether the call streamed "
            f"({stream}), and the trace holds nothing of what streamed before the failure, "
            "if it did: a replay cannot fail it as it failed"
        )
    if began is None:
        return (
            f"{step.label()}: the call streamed and failed ({error}), an error that does not "
            "say whether its answer had begun, and the trace holds nothing of what streamed "
            "before the failure: a replay cannot fail it as it failed"
        )
    return (
        f"{step.label()}: the answer began to stream and failed partway ({error}), and the "
        "trace holds nothing of what streamed before the failure: a replay cannot fail it as "
        "it failed"
    )


def _began(step: Step) -> bool | None:
    """Whether ``step`` failed after its answer began: True (a success status recorded, an
    error that says the answer's body was cut, or a JSON decoding error of its own: text
    had come), False (an error status, or an error that says otherwise), None (the trace
    cannot tell: a client error raised alike before any answer and partway through one,
    nothing recorded beneath it)."""
    code = (step.attributes or {}).get("http.response.status_code")
    if isinstance(code, int | str) and str(code).startswith("2"):
        return True
    errors = [e.get("attributes") or {} for e in step.events if e.get("name") == "exception"]
    # The error's own class, not one it was wrapped in (LiteLLM wraps the OpenAI client's
    # decoding error of a body cut short, which a replay fails again as any unread body).
    kinds = [str(a.get("exception.type") or "") for a in errors]
    kinds.append((step.status_message or "").partition(":")[0])
    if any(kind.rpartition(".")[2] == _DECODING for kind in kinds):
        return True
    messages = [str(a.get("exception.message") or "") for a in errors]
    messages.append(step.status_message or "")
    if any(m.strip().partition("\n")[0] in _BODY_CUT_ALONE for m in messages):
        return True
    traces = [str(a.get("exception.stacktrace") or "") for a in errors]
    said = " ".join([*messages, *traces])
    if any(words in said for words in _BODY_CUT):
        return True
    either = any(words in m for m in messages for words in _EITHER)
    return None if either and code is None and not any(traces) else False


def _stream_said(step: Step) -> bool | None:
    """What ``step``'s span says of a stream: True (asked for one, or timed its first
    chunk), False (asked for none; or timed the whole call and no first chunk, as a tracer
    that times a stream's first chunk does), None (nothing)."""
    attrs = step.attributes or {}
    asked = attrs.get("gen_ai.request.stream")
    operation = str(attrs.get("ai.operationId") or "")  # the AI SDK's legacy spans
    if streamed(step) or operation.endswith(".doStream"):
        return True
    if asked in (False, "false") or operation.endswith(".doGenerate"):
        return False
    error = step.status_message or ""
    if error.startswith(_AGENTS_STREAMED) or step.name.endswith(_SMOLAGENTS_STREAMED):
        return True
    if error.startswith(_AGENTS_NOT_STREAMED) or step.name.endswith(_SMOLAGENTS_NOT_STREAMED):
        return False
    if any(attrs.get(key) not in (None, False, "false") for key in _ASKED_STREAM):
        return True
    if attrs.get("gen_ai.client.operation.duration") is not None:
        return False
    return _asked_in(step)


#: The request's parameters as OpenInference records them (a JSON object): ``"stream":
#: true`` says a stream was asked for.  Only its OpenAI client instrumentation records the
#: request's own arguments, where no ``stream`` is the API's default, none; the framework
#: instrumentations record the model's settings (LangChain's ``"stream": false`` on a call
#: it streamed, the Agents SDK's none), which say nothing against a stream.
_PARAMETERS = "llm.invocation_parameters"
_REQUEST_ARGUMENTS = ("openinference.instrumentation.openai",)
#: Longer parameters are not read for a stream flag (untrusted input: bounded work).
_PARAMETERS_MAX = 65536


def _asked_in(step: Step) -> bool | None:
    """Whether ``step``'s recorded request parameters asked for a stream (None: they do
    not say)."""
    parameters = (step.attributes or {}).get(_PARAMETERS)
    if not isinstance(parameters, str) or len(parameters) > _PARAMETERS_MAX:
        return None
    try:
        value = json_text.loads(parameters)  # bounded: a trace may nest it past the stack
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    if value.get("stream") in (True, "true"):
        return True
    return False if step.scope in _REQUEST_ARGUMENTS and "stream" not in value else None


def _may_have_streamed(run: Run, step: Step) -> str | None:
    """Whether ``step`` streamed, or may have: ``""`` (its span says so), what says it may
    have (its span says nothing, and the other model calls of its run, which one loop
    makes, say they streamed or say nothing either way), or None (it did not, or they did
    not).  The AI SDK records no stream on a failed call, only on those answered."""
    said = _stream_said(step)
    if said is not None:
        return "" if said else None
    others = [
        _stream_said(s)
        for s in run.steps
        if s.kind == "model" and s.model is not None and s is not step
    ]
    if True in others:
        return "the run's other model calls did"
    if False in others:
        return None
    return "nor does any other model call of the run"
