"""A tool result the trace holds only as the text the model was sent, replayed in process.

A client-only instrumentation (here OpenInference's OpenAI one, run for real)
records the model calls and no tool span: a hand-written loop's tool results
are the text of the next request.  The loop's tools get ``@otel_replay.tool``
at replay time.  That text is the tool's value only if the loop sends its
tools' text as is; a loop that sends ``json.dumps(result)`` sent the JSON of
the value.  JSON text is refused, naming the step, unless the replay is told
how the loop sends its results (``results_from_messages``); text that is no
JSON can only be the tool's own text.  Drawn results: objects, lists, text
(JSON-looking or not), numbers, None.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import otel_replay
from tests.fixtures.data import TESTS

pytest.importorskip("openinference.instrumentation.openai")

import httpx2
import openai
from opentelemetry.sdk.trace import TracerProvider

CASES = TESTS / "conformance" / "cases"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a thing up.",
            "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
        },
    }
]

#: Keys no secret pattern matches (a "PIN" or "token" key's value is redacted at capture).
_KEYS = st.text(alphabet="abxyzé ", max_size=4)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=3),
    max_leaves=6,
)
RESULTS = (
    st.dictionaries(_KEYS, _JSON, max_size=3)
    | st.lists(_JSON, max_size=3)
    | st.text(max_size=12)
    | st.sampled_from(["Bonjour, « ça » va", '{"a": 1}', "null", "42", ""])
    | st.none()
    | st.integers()
)


def _model() -> httpx2.MockTransport:
    """One tool call, then the tool's result (as sent) echoed as the answer."""

    def answer(request: httpx2.Request) -> httpx2.Response:
        messages = json.loads(request.content)["messages"]
        if messages[-1]["role"] == "tool":
            message: dict[str, Any] = {
                "role": "assistant",
                "content": "got " + messages[-1]["content"],
            }
        else:
            call = {"id": "call_1", "type": "function"}
            call["function"] = {"name": "lookup", "arguments": '{"key":"k"}'}  # type: ignore[assignment]
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        body = {
            "id": f"chatcmpl-{len(messages)}",
            "object": "chat.completion",
            "created": 1_767_225_600,
            "model": "gpt-4o-mini",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 4, "completion_tokens": 2, "total_tokens": 6},
        }
        return httpx2.Response(200, json=body)

    return httpx2.MockTransport(answer)


def _send(result: Any, loop: str) -> str:
    """How the loop sends a result: ``json`` always ``json.dumps``; ``text`` a str as is."""
    if loop == "text" and isinstance(result, str):
        return result
    return json.dumps(result, ensure_ascii=False)


def run_loop(client: openai.OpenAI, tool: Callable[..., Any], loop: str) -> tuple[str, list[Any]]:
    """The hand-written loop; the answer and what the tool returned."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "look k up"}]
    returned: list[Any] = []
    while True:
        reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
        message = reply.choices[0].message
        if not message.tool_calls:
            return message.content or "", returned
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            with otel_replay.tool_call_id(call.id):
                result = tool(**json.loads(call.function.arguments))
            returned.append(result)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": _send(result, loop)}
            )


@pytest.fixture(scope="module")
def recorder() -> Any:
    """OpenInference's OpenAI instrumentation, on for the module, writing where it is told."""
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter

    class Switch(SpanExporter):
        target: SpanExporter | None = None

        def export(self, spans: Any) -> Any:
            from opentelemetry.sdk.trace.export import SpanExportResult

            if self.target is None:  # a replay: its model calls are not recorded
                return SpanExportResult.SUCCESS
            return self.target.export(spans)

    switch = Switch()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(switch))
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    yield switch, provider.get_tracer("test")
    instrumentor.uninstrument()
    provider.shutdown()


def _client() -> openai.OpenAI:
    return openai.OpenAI(
        api_key="unused",
        base_url="http://model.invalid/v1",
        http_client=httpx2.Client(transport=_model()),
    )


def _record(recorder: Any, path: Path, value: Any, loop: str) -> Any:
    switch, tracer = recorder
    exporter = otel_replay.FileSpanExporter(path)
    switch.target = exporter
    try:
        with tracer.start_as_current_span("agent"):
            run_loop(_client(), lambda key: value, loop)
    finally:
        switch.target = None
        exporter.shutdown()
    (run,) = otel_replay.load(path)
    (step,) = [s for s in run.tool_steps() if s.tool is not None]
    assert step.tool is not None and step.tool.derived  # client-only: from the messages
    return run


def _replay(run: Any, loop: str, **options: Any) -> tuple[Any, list[Any], Any]:
    def lookup(key: str) -> Any:
        raise AssertionError("a stubbed tool must not run")

    tool = otel_replay.tool(lookup)
    session = otel_replay.replay(run, **options)
    returned: list[Any] = []
    error: BaseException | None = None
    try:
        with session:
            client = openai.OpenAI(
                api_key="unused",
                base_url="http://model.invalid/v1",
                http_client=httpx2.Client(transport=session.transport()),
            )
            returned = run_loop(client, tool, loop)[1]
    except otel_replay.ReplayError as exc:
        error = exc
    return session.report(), returned, error


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(value=RESULTS, loop=st.sampled_from(["json", "text"]))
def test_a_result_known_only_as_sent_text(
    recorder: Any, tmp_path_factory: pytest.TempPathFactory, value: Any, loop: str
) -> None:
    path = tmp_path_factory.mktemp("rec") / "run.otlp"
    run = _record(recorder, path, value, loop)
    sent = _send(value, loop)

    # Unless told, JSON text is refused, naming the step and what the trace lacks.
    report, returned, error = _replay(run, loop)
    if _is_json(sent):
        assert isinstance(error, otel_replay.ReplayRefused) and report.verdict == "refused"
        (item,) = report.to_json()["refused"]
        what = item["what"]
        assert item["kind"] == "result_as_sent" and item["index"] is not None
        assert "(tool lookup" in what and "only the text the model was sent" in what
        assert "results_from_messages" in what
    else:  # no JSON: only the tool's own text could have been sent
        assert error is None and report.matched, report
        assert returned == [sent]
        assert any("answered with the text the model was sent" in n for n in report.notes)

    # Told how the loop sends its results, the replay is exact on the wire.
    report, returned, error = _replay(run, loop, results_from_messages=loop)
    assert error is None and report.matched, report
    assert returned == [value if loop == "json" else sent]

    # Told wrong, a difference shows at the next request (or the text is refused as no JSON).
    wrong = "text" if loop == "json" else "json"
    report, returned, error = _replay(run, loop, results_from_messages={"lookup": wrong})
    if _send(json.loads(sent) if wrong == "json" and _is_json(sent) else sent, loop) != sent:
        assert not report.matched
    elif wrong == "json" and not _is_json(sent):
        assert isinstance(error, otel_replay.ReplayRefused) and report.verdict == "refused"
        assert "is not JSON" in str(error)


@pytest.mark.parametrize("mode", ["sync", "stream", "code", "code_stream"])
def test_a_smolagents_tool_that_returned_none(mode: str) -> None:
    """OpenInference writes a tool's non-text return as JSON (mime application/json): "null"
    is None, not the text "null" (it was replayed as that text, and printed null)."""
    (run,) = otel_replay.load(CASES / "smolagents" / f"{mode}@plain_text" / "traces.binpb")
    tools = {s.tool.tool_name: s.tool for s in run.tool_steps() if s.tool is not None}
    assert tools["open_ticket"].result is None
    payload = tools["open_ticket"].result_payload
    assert payload is not None and payload.value() is None
