"""Capture helpers put GenAI semconv attributes and exact payloads on spans."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest
from opentelemetry import baggage, context, trace
from opentelemetry.sdk.trace import SpanLimits
from opentelemetry.trace import StatusCode

import otel_replay
from otel_replay import attributes as A
from otel_replay.payload.attributes import from_attributes
from tests.fixtures.recording import in_memory


@otel_replay.tool
def lookup(query: str, limit: int = 3) -> list[dict[str, Any]]:
    """Look orders up."""
    return [{"id": i, "q": query} for i in range(limit)]


@otel_replay.tool(name="fetch_raw")
async def fetch(url: str) -> bytes:
    await asyncio.sleep(0)
    return b"\x89PNG\xff\x00"


class NotFound(Exception):
    pass


@otel_replay.tool()
def failing(order_id: str) -> None:
    raise NotFound(order_id, 404)


def spans_by_name(exporter: Any) -> dict[str, Any]:
    return {s.name: s for s in exporter.get_finished_spans()}


def test_tool_span_has_semconv_and_exact_payloads() -> None:
    with in_memory() as exp, otel_replay.tool_call_id("call_9"):
        assert lookup("my order", limit=2) == [
            {"id": 0, "q": "my order"},
            {"id": 1, "q": "my order"},
        ]
    span = spans_by_name(exp)["execute_tool lookup"]
    attrs = span.attributes
    assert attrs[A.OPERATION_NAME] == "execute_tool"
    assert attrs[A.TOOL_NAME] == "lookup"
    assert attrs[A.TOOL_CALL_ID] == "call_9"
    assert attrs[A.TOOL_DESCRIPTION] == "Look orders up."
    assert json.loads(attrs[A.TOOL_CALL_ARGUMENTS]) == {"query": "my order", "limit": 2}
    result = from_attributes(attrs, A.TOOL_CALL_RESULT)
    assert result is not None and result.status == "exact"
    assert result.value() == [{"id": 0, "q": "my order"}, {"id": 1, "q": "my order"}]


def test_async_tool_and_bytes_result() -> None:
    with in_memory() as exp:
        assert asyncio.run(fetch("http://x")) == b"\x89PNG\xff\x00"
    attrs = spans_by_name(exp)["execute_tool fetch_raw"].attributes
    result = from_attributes(attrs, A.TOOL_CALL_RESULT)
    assert result is not None and result.type == "bytes" and result.value() == b"\x89PNG\xff\x00"


def test_exception_is_recorded_and_reraised_untouched() -> None:
    with in_memory() as exp, pytest.raises(NotFound) as info:
        failing("4421")
    assert info.value.args == ("4421", 404)
    span = spans_by_name(exp)["execute_tool failing"]
    assert span.status.status_code is StatusCode.ERROR
    assert span.attributes[A.ERROR_TYPE] == f"{__name__}.NotFound"
    assert [e.name for e in span.events] == ["exception"]
    args = from_attributes(span.attributes, A.EXCEPTION_ARGS)
    assert args is not None and args.value() == ("4421", 404)


def test_framework_tool_span_is_enriched_not_nested() -> None:
    with in_memory() as exp:
        tracer = otel_replay.capture.spans.tracer()
        with tracer.start_as_current_span(
            "execute_tool lookup",
            attributes={
                A.OPERATION_NAME: "execute_tool",
                A.TOOL_NAME: "lookup",
                A.TOOL_CALL_ID: "fw_1",
            },
        ):
            lookup("x", limit=1)
    spans = exp.get_finished_spans()
    assert len(spans) == 1
    assert spans[0].attributes[A.TOOL_CALL_ID] == "fw_1"
    assert A.SHA256 + A.TOOL_CALL_RESULT in spans[0].attributes


def test_tool_calling_a_tool_nests() -> None:
    @otel_replay.tool
    def outer() -> int:
        return len(lookup("q", limit=1))

    with in_memory() as exp:
        assert outer() == 1
    spans = spans_by_name(exp)
    assert (
        spans["execute_tool lookup"].parent.span_id == spans["execute_tool outer"].context.span_id
    )


def test_content_off_records_no_content(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "NO_CONTENT")
    with in_memory() as exp:
        lookup("secret question")
        with otel_replay.model_call(
            provider="p", model="m", messages=[{"role": "user", "content": "hi"}]
        ) as c:
            c.record("hello", input_tokens=1, output_tokens=1)
    for span in exp.get_finished_spans():
        text = json.dumps({k: str(v) for k, v in span.attributes.items()})
        assert "secret question" not in text and "hello" not in text and "hi" not in text.split('"')
        assert span.attributes[A.CONTENT] == "NO_CONTENT"


def test_secrets_never_reach_attributes() -> None:
    @otel_replay.tool
    def call_api(endpoint: str, api_key: str, headers: dict[str, str]) -> str:
        return "token is Bearer abcdefghijklmnop"

    with in_memory() as exp:
        call_api(
            "/orders", "sk-live-123", {"Authorization": "Bearer xyzxyzxyzxyz", "Accept": "json"}
        )
    span = exp.get_finished_spans()[0]
    dump = repr(dict(span.attributes))
    assert (
        "sk-live-123" not in dump and "xyzxyzxyzxyz" not in dump and "abcdefghijklmnop" not in dump
    )
    args = json.loads(span.attributes[A.TOOL_CALL_ARGUMENTS])
    assert args["api_key"] == A.REDACTED_VALUE and args["headers"]["Accept"] == "json"
    assert set(span.attributes[A.REDACTED]) == {
        "gen_ai.tool.call.arguments.api_key",
        "gen_ai.tool.call.arguments.headers.Authorization",
        "gen_ai.tool.call.result",
    }


def test_custom_redaction_pattern_and_hook() -> None:
    try:
        otel_replay.configure_redaction(patterns=[r"ACCT-\d+"], keys=["ssn"])

        @otel_replay.tool
        def account(note: str, ssn: str) -> str:
            return note

        with in_memory() as exp:
            account("pay ACCT-991 now", "123-45-6789")
        attrs = exp.get_finished_spans()[0].attributes
        dump = repr(dict(attrs))
        assert "ACCT-991" not in dump and "123-45-6789" not in dump
    finally:
        otel_replay.configure_redaction()


def test_model_call_records_request_and_response() -> None:
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    with in_memory() as exp:
        with otel_replay.model_call(
            provider="openai",
            model="gpt-4o",
            system="Be brief.",
            tools=tools,
            messages=[{"role": "user", "content": "where is my order?"}],
            temperature=0.2,
            top_p=0.9,
            seed=42,
            max_tokens=100,
            stop=["\n"],
        ) as call:
            call.record(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "lookup", "arguments": '{"q": 1}'},
                        }
                    ],
                },
                input_tokens=10,
                output_tokens=5,
                response_id="r1",
                response_model="gpt-4o-2024",
                finish_reasons=["tool_calls"],
            )
    span = exp.get_finished_spans()[0]
    a = span.attributes
    assert span.name == "chat gpt-4o" and span.kind is trace.SpanKind.CLIENT
    assert a[A.PROVIDER_NAME] == "openai" and a[A.REQUEST_MODEL] == "gpt-4o"
    assert a["gen_ai.request.temperature"] == 0.2 and a["gen_ai.request.seed"] == 42
    assert a["gen_ai.request.stop_sequences"] == ("\n",)
    assert json.loads(a[A.SYSTEM_INSTRUCTIONS]) == [{"type": "text", "content": "Be brief."}]
    assert json.loads(a[A.TOOL_DEFINITIONS]) == [
        {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    ]
    assert json.loads(a[A.INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "where is my order?"}]}
    ]
    assert json.loads(a[A.OUTPUT_MESSAGES]) == [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"q": 1}}],
        }
    ]
    assert a[A.USAGE_INPUT_TOKENS] == 10 and a[A.RESPONSE_ID] == "r1"
    assert a[A.RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert from_attributes(a, A.OUTPUT_MESSAGES).status == "exact"  # type: ignore[union-attr]


def test_current_semconv_stream_server_reasoning_and_cache() -> None:
    with in_memory() as exp:
        with otel_replay.model_call(
            provider="openai",
            model="o4-mini",
            messages=[{"role": "user", "content": "hi"}],
            stream=True,
            server_address="api.openai.com",
            server_port=443,
        ) as call:
            call.record(
                "hello", input_tokens=9, output_tokens=40, reasoning_tokens=32, cached_tokens=8
            )
        with otel_replay.model_call(provider="anthropic", model="claude") as call:
            call.record("hi", cache_read_input_tokens=5, cache_creation_input_tokens=7, other=1)
    first, second = exp.get_finished_spans()
    a = first.attributes
    assert a["gen_ai.request.stream"] is True
    assert a["server.address"] == "api.openai.com" and a["server.port"] == 443
    assert a["gen_ai.usage.reasoning.output_tokens"] == 32
    assert a["gen_ai.usage.cache_read.input_tokens"] == 8
    b = second.attributes
    assert b["gen_ai.usage.cache_read.input_tokens"] == 5
    assert b["gen_ai.usage.cache_creation.input_tokens"] == 7
    assert b["gen_ai.usage.other"] == 1


def test_an_agent_run_names_the_provider_of_its_first_model_call() -> None:
    with in_memory() as exp:
        with otel_replay.agent_run("support", input="q") as run:
            with otel_replay.model_call(provider="anthropic", model="claude"):
                pass
            with otel_replay.model_call(provider="openai", model="gpt-4o"):
                pass
            run.record("done")
        with otel_replay.agent_run("named", provider="openai"):
            with otel_replay.model_call(provider="anthropic", model="claude"):
                pass
        with otel_replay.agent_run("without"):
            pass
    agents = {
        s.attributes[A.AGENT_NAME]: s.attributes
        for s in exp.get_finished_spans()
        if s.attributes.get(A.OPERATION_NAME) == "invoke_agent"
    }
    assert agents["support"][A.PROVIDER_NAME] == "anthropic"
    assert agents["named"][A.PROVIDER_NAME] == "openai"
    assert A.PROVIDER_NAME not in agents["without"]


def test_model_call_error_propagates_and_is_recorded() -> None:
    with in_memory() as exp, pytest.raises(TimeoutError):
        with otel_replay.model_call(provider="p", model="m", messages=[]):
            raise TimeoutError("upstream")
    span = exp.get_finished_spans()[0]
    assert span.attributes[A.ERROR_TYPE] == "TimeoutError"
    assert span.status.status_code is StatusCode.ERROR


def test_processor_fingerprints_run_roots_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_REPLAY_COMMIT", "abc123")
    monkeypatch.setenv("OTEL_REPLAY_DIRTY", "true")
    from otel_replay.capture import fingerprint

    fingerprint.commit.cache_clear()
    try:
        with in_memory(flags={"beta": True}, seed=7) as exp:
            ctx = baggage.set_baggage("user.id", "u_1")
            ctx = baggage.set_baggage("tenant_id", "t_9", ctx)
            token = context.attach(ctx)
            try:
                with otel_replay.agent_run("support", input="hi") as run:
                    lookup("x")
                    run.record("bye")
            finally:
                context.detach(token)
    finally:
        fingerprint.commit.cache_clear()
    spans = spans_by_name(exp)
    root, child = spans["invoke_agent support"].attributes, spans["execute_tool lookup"].attributes
    assert root[A.FP_COMMIT] == "abc123" and root[A.FP_DIRTY] is True
    assert json.loads(root[A.FP_FLAGS]) == {"beta": True} and root[A.FP_SEED] == 7
    assert any(p.startswith("opentelemetry-sdk==") for p in root[A.FP_PACKAGES])
    assert A.FP_COMMIT not in child and A.FP_PACKAGES not in child
    assert root[A.USER_ID] == child[A.USER_ID] == "u_1"
    assert child[A.TENANT_ID] == "t_9"


def test_processor_hides_secret_attributes_set_at_start() -> None:
    with in_memory() as exp:
        tracer = otel_replay.capture.spans.tracer()
        with tracer.start_as_current_span(
            "GET",
            attributes={"http.request.header.authorization": "Bearer abc", "http.method": "GET"},
        ):
            pass
    attrs = exp.get_finished_spans()[0].attributes
    assert attrs["http.request.header.authorization"] == A.REDACTED_VALUE
    assert attrs["http.method"] == "GET"


def test_recording_problems_never_reach_the_app(caplog: pytest.LogCaptureFixture) -> None:
    class BadRepr:
        def __repr__(self) -> str:
            raise RuntimeError("broken repr")

    @otel_replay.tool
    def weird(x: Any) -> Any:
        return BadRepr()

    with in_memory() as exp, caplog.at_level(logging.WARNING, "otel_replay"):
        value = weird(BadRepr())
    assert isinstance(value, BadRepr)
    assert len(exp.get_finished_spans()) == 1


def test_display_truncated_by_sdk_limit_still_exact() -> None:
    with in_memory(limits=SpanLimits(max_attribute_length=100)) as exp:
        lookup("q" * 300, limit=1)
    attrs = exp.get_finished_spans()[0].attributes
    assert len(attrs[A.TOOL_CALL_RESULT]) == 100  # the SDK truncated the display...
    result = from_attributes(attrs, A.TOOL_CALL_RESULT)
    assert result is not None and result.status == "exact"  # ...the exact bytes survived
    assert result.value() == [{"id": 0, "q": "q" * 300}]


def test_no_sdk_means_no_work_and_no_error() -> None:
    previous = otel_replay.use_tracer_provider(trace.NoOpTracerProvider())
    try:
        assert lookup("x", limit=1) == [{"id": 0, "q": "x"}]
    finally:
        otel_replay.use_tracer_provider(previous)


def test_redactor_paths_in_nested_lists_and_dicts() -> None:
    from otel_replay.redaction import Redactor

    hidden: list[str] = []
    value = {
        "rows": [
            {"id": 1, "note": "ok"},
            {"id": 2, "password": "hunter2", "tags": ("x", "sk-" + "a" * 20)},
        ]
    }
    clean = Redactor().scrub(value, "r", hidden)
    assert clean == {
        "rows": [
            {"id": 1, "note": "ok"},
            {"id": 2, "password": A.REDACTED_VALUE, "tags": ("x", A.REDACTED_VALUE)},
        ]
    }
    assert hidden == ["r.rows[1].password", "r.rows[1].tags[1]"]
    assert value["rows"][1]["password"] == "hunter2"  # the caller's value is not mutated
    untouched = {"a": [1, "b"]}
    assert Redactor().scrub(untouched, "r", []) is untouched


def _recorded_arguments(fn: Any, *args: Any, **kwargs: Any) -> bytes:
    with in_memory() as exp:
        fn(*args, **kwargs)
    (span,) = exp.get_finished_spans()
    p = from_attributes(span.attributes, A.TOOL_CALL_ARGUMENTS)
    assert p is not None and p.data is not None
    return p.data


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("a",), {}),
        (("a", 2), {}),
        (("a",), {"c": [1]}),
        ((), {"c": None, "a": "x", "b": 5}),  # keywords out of order: the signature's order
        (("a", 2, 3), {}),
    ],
)
def test_tool_arguments_are_bound_as_the_signature_binds_them(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    import inspect

    def plain(a: str, b: int = 1, c: Any = "d") -> None:
        return None

    bound = inspect.signature(plain).bind(*args, **kwargs)
    bound.apply_defaults()
    expected = json.dumps(dict(bound.arguments), ensure_ascii=False, separators=(",", ":"))
    assert _recorded_arguments(otel_replay.tool(plain), *args, **kwargs) == expected.encode()


def test_tool_called_wrongly_raises_the_real_error_and_records_what_was_passed() -> None:
    def plain(a: str, b: int = 1) -> None:
        return None

    wrapped = otel_replay.tool(plain)
    for args, kwargs in [((), {}), (("a",), {"a": "again"}), (("a",), {"zzz": 1}), ((1, 2, 3), {})]:
        with in_memory() as exp, pytest.raises(TypeError):
            wrapped(*args, **kwargs)
        (span,) = exp.get_finished_spans()
        recorded = json.loads(span.attributes[A.TOOL_CALL_ARGUMENTS])
        assert recorded == {"args": list(args), "kwargs": kwargs}


def _inputs(exp: Any) -> list[Any]:
    return [
        (json.loads(s.attributes[A.INPUT_MESSAGES]), s.attributes.get(A.REDACTED))
        for s in exp.get_finished_spans()
        if A.INPUT_MESSAGES in s.attributes
    ]


def test_a_growing_conversation_is_scrubbed_whole_at_every_call() -> None:
    """Messages sent again are remembered as clean only when they hid nothing."""
    key = "sk-" + "Q" * 24
    # Long enough from the first call to be scrubbed message by message.
    earlier = [
        {"role": "user", "parts": [{"type": "text", "content": f"earlier {i}"}]} for i in range(8)
    ]
    conversation: list[dict[str, Any]] = list(earlier)
    with in_memory() as exp:
        for turn, text in enumerate(["hello", f"my key is {key}", "thanks", "bye"]):
            conversation.append({"role": "user", "parts": [{"type": "text", "content": text}]})
            with otel_replay.model_call(provider="p", model="m", messages=conversation) as c:
                c.record(f"answer {turn}")
            conversation.append(
                {"role": "assistant", "parts": [{"type": "text", "content": f"answer {turn}"}]}
            )
    recorded = _inputs(exp)
    assert len(recorded) == 4
    for turn, (messages, hidden) in enumerate(recorded):
        assert len(messages) == 8 + 2 * turn + 1
        assert key not in json.dumps(messages)
        if turn >= 1:  # every call that sent the key hid it, at its place
            assert messages[10]["parts"][0]["content"] == f"my key is {A.REDACTED_VALUE}"
            assert list(hidden) == [f"{A.INPUT_MESSAGES}[10].parts[0].content"]
        else:
            assert hidden is None


def test_messages_remembered_as_clean_are_scrubbed_again_under_new_rules() -> None:
    conversation = [
        {"role": "user", "parts": [{"type": "text", "content": "account ACCT-1234"}]},
        *[{"role": "assistant", "parts": [{"type": "text", "content": "noted"}]}] * 8,
    ]
    try:
        with in_memory() as exp:
            for rules in ([], [r"ACCT-\d+"]):
                otel_replay.configure_redaction(patterns=rules)
                with otel_replay.model_call(provider="p", model="m", messages=conversation):
                    pass
    finally:
        otel_replay.configure_redaction()
    (before, _), (after, hidden) = _inputs(exp)
    assert before[0]["parts"][0]["content"] == "account ACCT-1234"
    assert after[0]["parts"][0]["content"] == f"account {A.REDACTED_VALUE}"
    assert list(hidden) == [f"{A.INPUT_MESSAGES}[0].parts[0].content"]


def test_a_hook_sees_a_conversation_whole_under_its_own_path() -> None:
    seen: list[str] = []

    def hook(path: str, value: Any) -> Any:
        seen.append(path)
        return "[withheld]" if path == A.INPUT_MESSAGES else value

    conversation = [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]},
        *[{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}] * 8,
    ]
    try:
        otel_replay.configure_redaction(hook=hook)
        with (
            in_memory() as exp,
            otel_replay.model_call(provider="p", model="m", messages=conversation),
        ):
            pass
    finally:
        otel_replay.configure_redaction()
    (span,) = exp.get_finished_spans()
    assert span.attributes[A.INPUT_MESSAGES] == "[withheld]"
    assert A.INPUT_MESSAGES in seen


def test_a_model_calls_request_is_on_its_span_from_the_start() -> None:
    """Samplers and processors see what is asked when the span starts (GenAI conventions)."""
    from opentelemetry.sdk.trace import SpanProcessor

    seen: dict[str, Any] = {}

    class AtStart(SpanProcessor):
        def on_start(self, span: Any, parent_context: Any = None) -> None:
            seen.update(span.attributes or {})

    with in_memory() as exp:
        provider = otel_replay.capture.spans.tracer_provider()
        provider.add_span_processor(AtStart())  # type: ignore[attr-defined]
        messages = [{"role": "user", "content": "hi"}]
        with otel_replay.model_call(
            provider="openai", model="gpt-4o", messages=messages, temperature=0.5
        ) as call:
            call.record("hello", input_tokens=3)
    assert seen[A.OPERATION_NAME] == "chat" and seen[A.REQUEST_MODEL] == "gpt-4o"
    assert seen[A.PROVIDER_NAME] == "openai" and seen["gen_ai.request.temperature"] == 0.5
    assert json.loads(seen[A.INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": "hi"}]}
    ]
    assert A.OUTPUT_MESSAGES not in seen and A.USAGE_INPUT_TOKENS not in seen
    (span,) = exp.get_finished_spans()
    assert span.attributes[A.USAGE_INPUT_TOKENS] == 3


def test_helper_spans_are_current_inside_and_ended_and_detached_after_an_error() -> None:
    from opentelemetry import trace

    outer = trace.get_current_span()

    @otel_replay.tool
    def inner() -> str:
        return "ok"

    with in_memory() as exp:
        with pytest.raises(KeyError):
            with otel_replay.model_call(provider="p", model="m") as call:
                assert trace.get_current_span() is call.span
                inner()
                raise KeyError("boom")
        assert trace.get_current_span() is outer
    tool_span, model_span = exp.get_finished_spans()
    assert tool_span.parent is not None
    assert tool_span.parent.span_id == model_span.context.span_id
    assert model_span.end_time is not None and model_span.attributes[A.ERROR_TYPE] == "KeyError"
