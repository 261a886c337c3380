"""A run that ended at a stream cut partway, of which the trace holds nothing: the verdict
names the step's output as not recorded, and a replay refuses that step, naming it.

The class: a model call a replay fails again (it failed and ended its run) whose answer had
begun to stream when it failed (the trace says so: a success status on the span, or an error
that says the body was cut, in its message or the stack trace of the client's own error:
the AI SDK's "Failed to process successful response", httpx's "peer closed connection
without sending complete message body", undici's "terminated"), and whose span holds no
output (the tracing records none of a failed call).  The framework saw the deltas that came
before the cut, and some keep them: the AI SDK's ``streamText`` ends a step that got none
quietly, where it raised on the recording's cut after some events.  A cut served with no
events is not what the agent saw: the verdict says what is missing and serve answers the
step with the refusal.  Recorded by running each stack's own agent under a drawn scenario
that cuts a stream (the AI SDK in its GenAI and legacy tracing, on Chat Completions and
Responses; LangGraph with OpenInference; Strands; LangChain.js).  Drawn on those real
traces: the failure made one before any byte (a connection refused, an error status), or
the calls made not streamed (each span says so): then nothing is missing.  An error that
cannot tell a cut partway from a failure before any answer (the OpenAI SDK's "Connection
error." and "Request timed out.", which the Agents SDK's spans hold alone) is named too:
the trace cannot show that nothing streamed.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.otlp.records import EventRecord, SpanRecord
from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.conversations import CONVERSATION_HEADER
from otel_replay.replay.divergence import ReplayError
from otel_replay.replay.engine import ReplayEngine
from otel_replay.replay.pinned_model import PinnedModel
from otel_replay.replay.servable import servable
from otel_replay.runs.build import build_runs
from otel_replay.runs.failed_calls import STREAMED, cut_unrecorded
from otel_replay.runs.model import Run, Step
from otel_replay.sources.reader import RecordReader
from tests.conformance.checks import Case, check, find_cases
from tests.conformance.test_conformance import NOT_RECORDED
from tests.unit.replay.test_served_cut_answers import _post


def _cut(run: Run) -> Step | None:
    """The step of ``run`` cut partway whose request the trace holds and nothing of what it
    streamed (a call whose request it lacks is named as not in the trace at all)."""
    return next(
        (
            s
            for s in run.steps
            if s.kind == "model" and s.model and s.model.input_messages and cut_unrecorded(run, s)
        ),
        None,
    )


#: The corpus's runs ended by a stream cut partway that their trace holds nothing of (as
#: the conformance listing says of them).
CASES = [
    c
    for c in find_cases()
    if c.raised and "holds nothing of what streamed" in NOT_RECORDED.get(c.id, "")
]


def _said(step: Step) -> str:
    """The error ``step`` ended with, as the trace holds it (messages and stack traces)."""
    texts = [step.status_message or ""]
    for event in step.events:
        attrs = event.get("attributes") or {}
        texts += [str(attrs.get(k) or "") for k in ("exception.message", "exception.stacktrace")]
    return "\n".join(texts)


def test_the_corpus_holds_unrecorded_cut_streams_of_several_stacks_and_errors() -> None:
    assert len({c.meta["stack"] for c in CASES}) >= 4, [c.id for c in CASES]
    cuts = [s for c in CASES for r in check(c).runs if (s := _cut(r)) is not None]
    assert len(cuts) == len(CASES), [c.id for c in CASES]
    said = "\n".join(map(_said, cuts))
    for words in (
        "Failed to process successful response",
        "complete message body",
        "terminated",
        "JSONDecodeError",
    ):
        assert words in said, words
    assert any(s.attributes.get("http.response.status_code") == 200 for s in cuts)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_verdict_names_the_cut_step_and_serve_refuses_it(case: Case) -> None:
    (run,) = [r for r in check(case).runs if r.model_steps()]
    step = _cut(run)
    assert step is not None, [s.label() for s in run.steps]
    assert f"steps[{step.index}].output_messages" in run.kit.missing
    assert not run.kit.replayable and "output not recorded" in str(run.kit.replay_problem)
    named = [str(u) for u in servable(run) if u.kind == "unanswered"]
    assert any(step.label() in u and "streamed before the failure" in u for u in named), named

    server = BackgroundServer(ReplayEngine(check(case).runs))
    url = server.start()
    try:
        (order,) = case.raised
        headers: dict[str, str] = {}
        for r in case.conversations()[order]:
            answer = _post(url, r, headers)
            assert answer.status == 200, (r["seq"], answer.read()[:300])
            answer.read()
            headers = {CONVERSATION_HEADER: answer.headers[CONVERSATION_HEADER]}
        answer = _post(url, case.cut(order) or {}, headers)
        body = json.loads(answer.read())
        assert answer.status == 500 and answer.headers.get("x-otel-replay-failed") is None
        assert step.label() in body["error"]["message"], body
        assert "holds nothing of what streamed" in body["error"]["message"], body
    finally:
        server.stop()


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_in_process_the_model_refuses_the_cut_step_and_the_report_says_so(case: Case) -> None:
    (run,) = [r for r in check(case).runs if r.model_steps()]
    step = _cut(run)
    assert step is not None
    model = PinnedModel(run)
    for s in run.model_steps():
        m = s.model
        assert m is not None and m.input_messages is not None
        if s is not step:
            assert model.serve(m.input_messages, system=m.system_instructions)[0] is s
            continue
        for _ in range(3):  # each time the client asks again
            with pytest.raises(ReplayError, match="holds nothing of what streamed") as refused:
                model.serve(m.input_messages, system=m.system_instructions)
            assert step.label() in str(refused.value)
        break
    assert step in model.unreplayed() and step.index in model.refused


def _records(case: Case) -> tuple[list[SpanRecord], list[Any]]:
    spans: list[SpanRecord] = []
    logs: list[Any] = []
    for path in case.trace_files():
        for record in RecordReader(str(path)):
            (spans if isinstance(record, SpanRecord) else logs).append(record)
    return spans, logs


def _edited(case: Case, edit: Callable[[SpanRecord, bool], None]) -> tuple[Run, Step, int]:
    """``case``'s run rebuilt after ``edit`` of each of its model spans (told whether it is
    the cut one): the run, its cut step, and how many model calls it recorded."""
    (recorded,) = [r for r in check(case).runs if r.model_steps()]
    cut = _cut(recorded)
    assert cut is not None
    models = {s.span_id for s in recorded.steps if s.kind == "model"}
    spans, logs = _records(case)
    spans = copy.deepcopy(spans)
    for span in spans:
        if span.span_id in models:
            edit(span, span.span_id == cut.span_id)
    runs = build_runs(spans, logs=logs)
    (run,) = [r for r in runs if any(s.span_id == cut.span_id for s in r.steps)]
    (step,) = [s for s in run.steps if s.span_id == cut.span_id]
    return run, step, len(models)


_STREAM_KEYS = (
    *STREAMED,
    "gen_ai.request.stream",
    "gen_ai.client.operation.time_to_first_chunk",
    "gen_ai.response.time_to_first_chunk",
)
#: Errors that come before any byte of an answer.
_BEFORE = (
    ("connect ECONNREFUSED 127.0.0.1:9", None),
    ("[Errno 111] Connection refused", None),
    ("Too Many Requests", 429),
    ("Internal Server Error", 500),
)


def _before_any_byte(span: SpanRecord, message: str, status: int | None) -> None:
    """Make ``span``'s failure one that came before any byte: no success status, an error
    that says nothing of a body."""
    span.attributes.pop("http.response.status_code", None)
    if status is not None:
        span.attributes["http.response.status_code"] = status
    span.status_message = message
    for event in span.events:
        attrs = event.attributes
        if "exception.message" in attrs:
            attrs["exception.message"] = message
        if "exception.type" in attrs:
            attrs["exception.type"] = "ConnectionError"
        if "exception.stacktrace" in attrs:
            attrs["exception.stacktrace"] = f"Error: {message}\n    at connect (net.js:1:1)"


def _not_streamed(span: SpanRecord) -> None:
    """Make ``span`` say its call was not streamed (as each tracing says it)."""
    for key in _STREAM_KEYS:
        span.attributes.pop(key, None)
    operation = span.attributes.get("ai.operationId")
    if isinstance(operation, str):
        span.attributes["ai.operationId"] = re.sub(r"\.doStream$", ".doGenerate", operation)
    span.attributes["gen_ai.request.stream"] = False


@settings(max_examples=30, deadline=None)
@given(
    case=st.sampled_from(CASES),
    before=st.none() | st.sampled_from(_BEFORE),
    streamed=st.booleans(),
)
def test_only_a_stream_that_began_and_left_nothing_is_named(
    case: Case, before: tuple[str, int | None] | None, streamed: bool
) -> None:

    def edit(span: SpanRecord, mine: bool) -> None:
        if mine and before is not None:
            _before_any_byte(span, *before)
        if not streamed:
            _not_streamed(span)

    run, step, _ = _edited(case, edit)
    named = f"steps[{step.index}].output_messages" in run.kit.missing
    refused = any(step.label() in str(u) for u in servable(run))
    assert named == refused == (before is None and streamed), (run.kit.missing, before, streamed)


@settings(max_examples=25, deadline=None)
@given(
    depth=st.integers(min_value=2_000, max_value=30_000),
    opener=st.sampled_from(["[", '{"a":']),
)
def test_request_parameters_nested_past_any_stack_say_nothing(depth: int, opener: str) -> None:
    """Hostile request parameters (JSON nested deeper than a parser's stack, within the
    size read) tell nothing of a stream, and never raise."""
    from types import SimpleNamespace

    from otel_replay.runs import failed_calls

    closer = "]" if opener == "[" else "}"
    parameters = opener * depth + "1" + closer * depth
    step = SimpleNamespace(attributes={failed_calls._PARAMETERS: parameters}, scope=None)
    assert failed_calls._asked_in(step) is None  # type: ignore[arg-type]


#: The Agents SDK's span errors: a streamed call's (``stream_response``), and not.
_AGENTS_ERRORS = ("Error streaming response", "Error getting response")
#: Client errors (the OpenAI SDK's), and whether each says the answer had not begun (False)
#: or cannot tell (None): raised alike before any answer and partway through a stream.
_CLIENT_ERRORS = (
    ("Connection error.", None),
    ("Request timed out.", None),
    ("Error code: 500 - {'error': 'boom'}", False),
    ("Error code: 429 - {'error': 'slow down'}", False),
)
#: Stack traces an instrumentation may record beneath the client's error, and whether each
#: says the body had begun.
_TRACES = (
    (
        "httpx.RemoteProtocolError: peer closed connection without sending complete message body",
        True,
    ),
    ("httpx.ConnectError: [Errno 111] Connection refused", False),
)
#: The corpus's runs whose cut stream the Agents SDK's spans record with its error text alone.
AGENTS_CASES = [c for c in CASES if c.meta["stack"].startswith("openai_agents")]


@settings(max_examples=40, deadline=None)
@given(
    case=st.sampled_from(AGENTS_CASES),
    said=st.sampled_from(_AGENTS_ERRORS),
    client=st.sampled_from(_CLIENT_ERRORS),
    trace=st.none() | st.sampled_from(_TRACES),
    status=st.sampled_from([None, 200]),
)
def test_an_error_that_cannot_tell_whether_a_stream_began_is_named(
    case: Case,
    said: str,
    client: tuple[str, bool | None],
    trace: tuple[str, bool] | None,
    status: int | None,
) -> None:
    """A streamed call that failed with a client error raised alike before any answer and
    partway through one (the OpenAI SDK's "Connection error." and "Request timed out."),
    nothing recorded beneath it, of which the trace holds no output: the verdict names its
    output and a replay refuses it.  A status, a stack trace or an error that tells, or a
    call that did not stream (the Agents SDK's error says which), leaves nothing out."""
    assert len({c.meta["stack"] for c in AGENTS_CASES}) == 2, [c.id for c in AGENTS_CASES]
    (recorded,) = [r for r in check(case).runs if r.model_steps()]
    cut = _cut(recorded)
    assert cut is not None
    spans, logs = _records(case)
    spans = copy.deepcopy(spans)
    (span,) = [s for s in spans if s.span_id == cut.span_id]
    span.status_message = f"{said}: {{'error': '{client[0]}'}}"
    if status is not None:
        span.attributes["http.response.status_code"] = status
    if trace is not None:
        attrs = {"exception.message": client[0], "exception.stacktrace": trace[0]}
        span.events = [EventRecord("exception", span.end_ns, attrs)]
    runs = build_runs(spans, logs=logs)
    (run,) = [r for r in runs if any(s.span_id == cut.span_id for s in r.steps)]
    (step,) = [s for s in run.steps if s.span_id == cut.span_id]
    named = f"steps[{step.index}].output_messages" in run.kit.missing
    refused = any(step.label() in str(u) for u in servable(run))
    if status is not None:
        began: bool | None = True
    elif trace is not None:
        began = trace[1]
    else:
        began = client[1]
    expected = said == _AGENTS_ERRORS[0] and began is not False
    assert named == refused == expected, (run.kit.missing, said, client, trace, status)


def _silent(span: SpanRecord) -> None:
    """Take out of ``span`` what it says of a stream, as a tracing that records none
    (Strands, the AI SDK's GenAI spans on a failed call); the AI SDK's legacy spans, which
    say it in the operation they are read by, keep it."""
    for key in _STREAM_KEYS:
        span.attributes.pop(key, None)
    for key in ("llm.invocation_parameters", "gen_ai.client.operation.duration"):
        span.attributes.pop(key, None)  # the duration of a call with no first chunk: not one
    span.name = span.name.removesuffix("_stream")
    span.name = "chat" if span.name.endswith(".generate") else span.name
    span.status_message = span.status_message.replace("Error streaming response", "Error")


@settings(max_examples=40, deadline=None)
@given(case=st.sampled_from(CASES), own=st.booleans(), others=st.sampled_from([None, True]))
def test_a_cut_whose_span_does_not_say_it_streamed_is_refused_saying_so(
    case: Case, own: bool, others: bool | None
) -> None:
    """A cut stream's span that does not say the call streamed (Strands records no stream
    flag, nor the request's parameters; its OpenAI model streams unless configured not to):
    the call is refused all the same, as it may have streamed, and the refusal says that
    the span does not say, and whether the run's other calls do (a first call has none)."""

    def edit(span: SpanRecord, mine: bool) -> None:
        _silent(span)
        if own if mine else others:
            span.attributes["gen_ai.request.stream"] = True

    run, step, models = _edited(case, edit)
    if str(step.attributes.get("ai.operationId", "")).endswith(".doStream"):
        own = True  # the AI SDK's legacy spans say it in their operation
    said = cut_unrecorded(run, step)
    assert said is not None and "holds nothing of what streamed before the failure" in said
    silent = "its span does not say whether the call streamed" in said
    assert silent == (not own), said
    has_others = models > 1
    if not own:
        expected = "the run's other model calls did" if others and has_others else "nor does any"
        assert expected in said, said


#: JSON decoding errors as a trace records them: the class (Python's, and the libraries' of
#: that name), and what the decoder says of text cut short or malformed.
_DECODE_CLASSES = (
    "json.decoder.JSONDecodeError",
    "simplejson.errors.JSONDecodeError",
    "requests.exceptions.JSONDecodeError",
    "orjson.JSONDecodeError",
)
_DECODE_MESSAGES = (
    "Invalid \\uXXXX escape: line 2 column 39 (char 39)",
    "Unterminated string starting at: line 1 column 445 (char 444)",
    "Expecting ',' delimiter: line 1 column 12 (char 11)",
    "Expecting value: line 1 column 1 (char 0)",
)
#: A client's error a decoding error may be wrapped in (LiteLLM's, around the OpenAI
#: client's decoding of a body cut short), and how it spells the decoder's message.
_WRAPPER = ("litellm.exceptions.InternalServerError", "litellm.InternalServerError: {}")


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from(CASES),
    kind=st.sampled_from(_DECODE_CLASSES),
    message=st.sampled_from(_DECODE_MESSAGES),
    in_event=st.booleans(),
    wrapped=st.booleans(),
    streamed=st.booleans(),
)
def test_a_call_that_failed_decoding_what_came_is_named_unless_a_client_wrapped_it(
    case: Case, kind: str, message: str, in_event: bool, wrapped: bool, streamed: bool
) -> None:
    """A streamed call that failed with a JSON decoding error of its own (ADK 1.x decodes a
    call's arguments once its stream ends: a stream cut inside them raises one), of which
    the trace holds no output: text had come, so the verdict names the step's output and a
    replay refuses it.  Recorded as the error's class in an exception event, or in the
    span's status message alone.  Wrapped in a client's error (a body the client could not
    read), or in a call that did not stream, it leaves nothing out."""

    def edit(span: SpanRecord, mine: bool) -> None:
        if mine:
            span.attributes.pop("http.response.status_code", None)
            outer, text = (_WRAPPER[0], _WRAPPER[1].format(message)) if wrapped else (kind, message)
            span.status_message = f"{outer.rpartition('.')[2]}: {text}"
            trace = f'Traceback (most recent call last):\n  File "agent.py", line 1\n{kind}: {message}\n'
            if wrapped:
                trace += f"\nDuring handling of the above exception:\n\n{outer}: {text}\n"
            attrs = {"exception.type": outer, "exception.message": text}
            attrs["exception.stacktrace"] = trace
            # (Other events kept: some tracings record the messages as span events.)
            span.events = [e for e in span.events if e.name != "exception"]
            if in_event:
                span.events.append(EventRecord("exception", span.end_ns, attrs))
        if not streamed:
            _not_streamed(span)

    run, step, _ = _edited(case, edit)
    named = f"steps[{step.index}].output_messages" in run.kit.missing
    refused = any(step.label() in str(u) for u in servable(run))
    assert named == refused == (streamed and not wrapped), (run.kit.missing, kind, wrapped)
