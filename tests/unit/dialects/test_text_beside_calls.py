"""An answer with text beside its tool calls, rebuilt as the wire carried it: the text, then
the calls, in the model step's output and in the next input that sends the answer back.

The data of ``tests/data/text_beside_calls/`` is what the instrumentations' own code
records of generated Chat Completions answers (empty, non-ASCII and control-character
text beside one to four calls; ``tests/tool_results/text_beside_calls_oracle.py``).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from otel_replay import attributes as A
from otel_replay.dialects.registry import normalize
from otel_replay.otlp.records import LogRecord, SpanRecord
from otel_replay.runs.build import build_runs
from tests.fixtures.data import DATA
from tests.fixtures.ground_truth import recorded, sent
from tests.fixtures.records import span_record

CASES = DATA / "text_beside_calls"
#: The scopes of opentelemetry-instrumentation-openai-v2 (through opentelemetry-util-genai)
#: and of OpenTelemetry's openai-agents bridge.
OPENAI_V2 = "opentelemetry.util.genai.handler"
AGENTS = "opentelemetry.instrumentation.openai_agents"
FINAL = [{"role": "assistant", "parts": [{"type": "text", "content": "Voilà."}]}]


def _cases(name: str) -> list[dict[str, Any]]:
    cases: list[dict[str, Any]] = json.loads((CASES / name).read_text(encoding="utf-8"))
    assert len(cases) >= 100
    assert any(c["sent"]["content"] == "" for c in cases)
    assert any(len(c["sent"]["tool_calls"]) > 2 for c in cases)
    return cases


def _items(answer: dict[str, Any]) -> list[Any]:
    """The answer as sent: its text (when not empty), then its calls (arguments in the
    model's key order)."""
    text = [("text", answer["content"])] if answer["content"] else []
    calls = [
        ("call", c["id"], c["function"]["name"], _ordered(c["function"]["arguments"]))
        for c in answer["tool_calls"]
    ]
    return [*text, *calls]


def _rebuilt(messages: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    for part in messages[0]["parts"]:
        if part["type"] == "text" and part["content"]:
            out.append(("text", part["content"]))
        elif part["type"] == "tool_call":
            out.append(("call", part["id"], part["name"], _ordered(part["arguments"])))
    return out


def _ordered(arguments: Any) -> str:
    """Arguments (JSON text or the value it spells) as canonical text that keeps key order."""
    value = json.loads(arguments) if isinstance(arguments, str) else arguments
    return json.dumps(value, ensure_ascii=False)


def _spans(case: dict[str, Any], scope: str) -> list[SpanRecord]:
    def model(span_id: str, start: int, inputs: Any, outputs: Any) -> SpanRecord:
        attrs = {
            A.OPERATION_NAME: A.OP_CHAT,
            A.PROVIDER_NAME: "openai",
            A.REQUEST_MODEL: "gpt-4o-mini",
            A.INPUT_MESSAGES: json.dumps(inputs, ensure_ascii=False),
            A.OUTPUT_MESSAGES: json.dumps(outputs, ensure_ascii=False),
        }
        return span_record("ab" * 16, span_id, "0" * 15 + "1", start, "chat", attrs, scope=scope)

    root = span_record("ab" * 16, "0" * 15 + "1", None, 0, "agent", {}, duration=1000)
    first = model("0" * 15 + "2", 10, case["next_input"][:2], case["output"])
    second = model("0" * 15 + "3", 100, case["next_input"], FINAL)
    return [root, first, second]


def _as_events(spans: list[SpanRecord]) -> tuple[list[SpanRecord], list[LogRecord]]:
    """The spans with their messages sent as log records instead (the EVENT_ONLY mode)."""
    logs, bare = [], []
    for span in spans:
        keys = (A.INPUT_MESSAGES, A.OUTPUT_MESSAGES)
        content = {k: json.loads(v) for k, v in span.attributes.items() if k in keys}
        attrs = {k: v for k, v in span.attributes.items() if k not in keys}
        bare.append(dataclasses.replace(span, attributes=attrs))
        if content:
            details = "gen_ai.client.inference.operation.details"
            logs.append(
                LogRecord(
                    trace_id=span.trace_id,
                    span_id=span.span_id,
                    time_ns=span.end_ns,
                    event_name=details,
                    body=None,
                    attributes={"event.name": details, **content},
                    severity_number=9,
                    severity_text="INFO",
                    resource={},
                    scope_name=OPENAI_V2,
                    scope_version="",
                    source="run.otlp",
                )
            )
    return bare, logs


def _models(spans: list[SpanRecord], logs: list[LogRecord] | None = None) -> list[Any]:
    (run,) = build_runs(spans, logs=logs or ())
    return [s.model for s in run.steps if s.kind == "model"]


@pytest.mark.parametrize("events", [False, True], ids=["span", "events"])
def test_openai_v2_answers_and_inputs_put_the_text_before_the_calls(events: bool) -> None:
    """opentelemetry-instrumentation-openai-v2 writes the calls' parts before the text, on
    its spans and in its inference events alike."""
    for case in _cases("openai_v2.json"):
        spans = _spans(case, OPENAI_V2)
        first, second = _models(*_as_events(spans)) if events else _models(spans)
        answer = case["sent"]
        assert _rebuilt(first.output_messages) == _items(answer), answer
        assert _rebuilt(second.input_messages[2:]) == _items(answer), answer
        request = {"body_json": {"messages": [answer, *case["results"]]}}
        assert recorded(second.input_messages[2:]) == sent(request), answer


def test_openai_agents_answers_take_the_calls_the_next_request_sent_back() -> None:
    """The openai-agents bridge records a generation's text and drops the calls beside it;
    the next request (the SDK's own conversion of the answer) holds both."""
    for case in _cases("openai_agents.json"):
        first, _ = _models(_spans(case, AGENTS))
        answer = case["sent"]
        assert _rebuilt(first.output_messages) == _items(answer), answer
        assert any("recorded without its tool calls" in n for n in first.derived)


def test_openai_agents_answer_alone_keeps_what_it_recorded() -> None:
    """With no next request (the run stopped after the answer), nothing proves the calls:
    the recorded answer is left as it is."""
    case = _cases("openai_agents.json")[0]
    spans = _spans(case, AGENTS)[:2]
    (first,) = _models(spans)
    assert first.output_messages == case["output"]


@pytest.mark.parametrize("response_id", ["resp_1", "chatcmpl-1"])
def test_openai_v2_reorders_chat_completions_only(response_id: str) -> None:
    """A Responses API answer's items are in the model's order: kept."""
    message = {
        "role": "assistant",
        "parts": [
            {"type": "tool_call", "id": "c", "name": "f", "arguments": {}},
            {"type": "text", "content": "après"},
        ],
    }
    attrs = {
        A.OPERATION_NAME: A.OP_CHAT,
        A.PROVIDER_NAME: "openai",
        A.RESPONSE_ID: response_id,
        A.OUTPUT_MESSAGES: json.dumps([message]),
    }
    got = normalize(attrs, name="chat", scope=OPENAI_V2)[A.OUTPUT_MESSAGES]
    got = json.loads(got) if isinstance(got, str) else got
    kinds = [p["type"] for p in got[0]["parts"]]
    assert kinds == (["tool_call", "text"] if response_id == "resp_1" else ["text", "tool_call"])


SK_SCOPE = "semantic_kernel.utils.telemetry.model_diagnostics.decorators"


def _sk_log(span_id: str, event: str, body: str) -> LogRecord:
    return LogRecord(
        trace_id="ab" * 16,
        span_id=span_id,
        time_ns=20,
        event_name=event,
        body=body,
        attributes={"event.name": event, "gen_ai.system": "openai"},
        severity_number=9,
        severity_text="INFO",
        resource={},
        scope_name=SK_SCOPE,
        scope_version="",
        source="run.otlp",
    )


def test_semantic_kernel_answers_name_the_text_beside_their_calls_as_not_recorded() -> None:
    """Semantic Kernel records an answer with calls as ``ChatMessageContent.to_dict()``
    makes it, the calls alone: the kit names the text, whatever text the model wrote."""
    sk = json.loads((CASES / "semantic_kernel.json").read_text(encoding="utf-8"))
    assert len(sk) >= 100
    final = json.dumps({"message": {"role": "assistant", "content": "Voilà."}})
    for case in sk:
        model = "0" * 15 + "2"
        attrs = {A.OPERATION_NAME: A.OP_CHAT, "gen_ai.system": "openai"}
        spans = [
            span_record("ab" * 16, "0" * 15 + "1", None, 0, "agent", {}, duration=1000),
            span_record("ab" * 16, model, "0" * 15 + "1", 10, "chat", attrs, scope=SK_SCOPE),
        ]
        user = json.dumps({"role": "user", "content": "Où ?"})
        for choice, named in ((case["choice"], True), (final, False)):
            logs = [
                _sk_log(model, "gen_ai.user.message", user),
                _sk_log(model, "gen_ai.choice", choice),
            ]
            (run,) = build_runs(spans, logs=logs)
            (step,) = [s for s in run.steps if s.kind == "model"]
            said = f"steps[{step.index}].output_messages.text_beside_calls" in run.kit.missing
            assert said is named, case["sent"]
            if named:
                parts = step.model.output_messages[0]["parts"]
                assert [p["type"] for p in parts] == ["tool_call"] * len(case["sent"]["tool_calls"])
