"""Each dialect on a hand-written attribute map: the documented names in, GenAI semconv out."""

from __future__ import annotations

import json
from typing import Any

from otel_replay import attributes as A
from otel_replay import messages as M
from otel_replay.dialects import detect, normalize
from otel_replay.dialects.span import SpanView

SYSTEM = "You are terse."
CALL = {"type": "tool_call", "id": "c1", "name": "lookup", "arguments": {"id": 7}}
RESULT = {"type": "tool_call_response", "id": "c1", "response": '{"ok": true}'}


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def names(attrs: dict[str, Any], scope: str = "") -> list[str]:
    return [d.name for d in detect(SpanView(attrs, scope=scope))]


def test_genai_reads_replaced_names_and_content_events() -> None:
    events = [
        {
            "name": "gen_ai.content.prompt",
            "attributes": {"gen_ai.prompt": json.dumps([{"role": "user", "content": "hi"}])},
        },
        {
            "name": "gen_ai.content.completion",
            "attributes": {
                "gen_ai.completion": json.dumps([{"role": "assistant", "content": "yo"}])
            },
        },
    ]
    out = normalize({"gen_ai.system": "OpenAI", "gen_ai.usage.prompt_tokens": 3}, events=events)
    assert out[A.PROVIDER_NAME] == "openai" and out[A.USAGE_INPUT_TOKENS] == 3
    assert out["gen_ai.system"] == "OpenAI"  # the original is kept
    assert out[A.INPUT_MESSAGES] == [text("user", "hi")]
    assert out[A.OUTPUT_MESSAGES] == [text("assistant", "yo")]


def test_genai_keeps_a_system_message_that_repeats_the_instructions() -> None:
    """The messages stay as recorded (their digest is of those bytes); the conversation
    holds the prompt once wherever the two are joined (tests/unit/dialects/test_system_prompt_twice.py)."""
    system = [{"type": "text", "content": SYSTEM}]
    twice = json.dumps([text("system", SYSTEM), text("user", "hi")])
    out = normalize({A.SYSTEM_INSTRUCTIONS: json.dumps(system), A.INPUT_MESSAGES: twice})
    assert out[A.INPUT_MESSAGES] == twice


def test_detection_remembered_per_names_still_reads_values() -> None:
    """Spans with the same scope and attribute names but other values: each its own verdict."""
    llm = {"openinference.span.kind": "LLM", "input.value": "{}"}
    chain = {"openinference.span.kind": "CHAIN", "input.value": "{}"}
    for _ in range(2):  # the second time from what was remembered
        assert "haystack" in names(llm, scope="openinference.instrumentation.haystack")
        assert "haystack" not in names(chain, scope="openinference.instrumentation.haystack")
        assert names(chain, scope="other") == ["openinference", "genai"]


def test_openinference_llm_span() -> None:
    attrs = {
        "openinference.span.kind": "LLM",
        "llm.provider": "openai",
        "llm.model_name": "m-2024",
        "llm.invocation_parameters": json.dumps(
            {"model": "m", "temperature": 0.5, "max_completion_tokens": 9}
        ),
        "llm.input_messages.0.message.role": "system",
        "llm.input_messages.0.message.content": SYSTEM,
        "llm.input_messages.1.message.role": "assistant",
        # indices may skip (openai-agents' bridge does)
        "llm.input_messages.1.message.tool_calls.1.tool_call.id": "c1",
        "llm.input_messages.1.message.tool_calls.1.tool_call.function.name": "lookup",
        "llm.input_messages.1.message.tool_calls.1.tool_call.function.arguments": '{"id": 7}',
        "llm.input_messages.2.message.role": "tool",
        "llm.input_messages.2.message.tool_call_id": "c1",
        "llm.input_messages.2.message.content": '{"ok": true}',
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.content": "done",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": "done",
        "llm.tools.0.tool.json_schema": json.dumps(
            {"type": "function", "function": {"name": "lookup", "parameters": {}}}
        ),
        "llm.token_count.prompt": 5,
        "llm.token_count.completion": 2,
        "llm.finish_reason": "stop",
    }
    out = normalize(attrs, scope="openinference.instrumentation.openai")
    assert out[A.OPERATION_NAME] == "chat" and out[A.PROVIDER_NAME] == "openai"
    assert (out[A.REQUEST_MODEL], out[A.RESPONSE_MODEL]) == ("m", "m-2024")
    assert out["gen_ai.request.temperature"] == 0.5 and out["gen_ai.request.max_tokens"] == 9
    assert out[A.INPUT_MESSAGES] == [
        text("system", SYSTEM),
        {"role": "assistant", "parts": [CALL]},
        {"role": "tool", "parts": [RESULT]},
    ]
    assert out[A.OUTPUT_MESSAGES] == [text("assistant", "done")]  # content repeats contents
    assert out[A.TOOL_DEFINITIONS] == [{"type": "function", "name": "lookup", "parameters": {}}]
    assert (out[A.USAGE_INPUT_TOKENS], out[A.USAGE_OUTPUT_TOKENS]) == (5, 2)
    assert out[A.RESPONSE_FINISH_REASONS] == ["stop"]


def test_openinference_request_body_fills_what_flattened_messages_lack() -> None:
    body = {"model": "claude", "system": SYSTEM, "messages": [{"role": "user", "content": "hi"}]}
    out = normalize(
        {
            "openinference.span.kind": "LLM",
            "input.value": json.dumps(body),
            "input.mime_type": "application/json",
        }
    )
    assert out[A.SYSTEM_INSTRUCTIONS] == [{"type": "text", "content": SYSTEM}]
    assert out[A.INPUT_MESSAGES] == [text("user", "hi")]


def test_openinference_tool_agent_and_chain_spans() -> None:
    tool = normalize(
        {
            "openinference.span.kind": "TOOL",
            "tool.name": "lookup",
            "input.value": '{"id": 7}',
            "output.value": "ok",
        }
    )
    assert tool[A.OPERATION_NAME] == "execute_tool" and tool[A.TOOL_NAME] == "lookup"
    assert (tool[A.TOOL_CALL_ARGUMENTS], tool[A.TOOL_CALL_RESULT]) == ('{"id": 7}', "ok")
    agent = normalize({"openinference.span.kind": "AGENT"}, name="support")
    assert agent[A.OPERATION_NAME] == "invoke_agent" and agent[A.AGENT_NAME] == "support"
    assert A.OPERATION_NAME not in normalize({"openinference.span.kind": "CHAIN"}, name="turn")


def test_openllmetry_indexed_scheme() -> None:
    attrs = {
        "llm.request.type": "chat",
        "gen_ai.system": "OpenAI",
        "gen_ai.prompt.0.role": "user",
        "gen_ai.prompt.0.content": json.dumps([{"type": "text", "text": "hi"}]),
        "gen_ai.prompt.1.role": "assistant",
        "gen_ai.prompt.1.tool_calls.0.id": "c1",
        "gen_ai.prompt.1.tool_calls.0.name": "lookup",
        "gen_ai.prompt.1.tool_calls.0.arguments": '{"id": 7}',
        "gen_ai.prompt.2.role": "tool",
        "gen_ai.prompt.2.tool_call_id": "c1",
        "gen_ai.prompt.2.content": '{"ok": true}',
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "done",
        "gen_ai.completion.0.finish_reason": "stop",
        "llm.request.functions.0.name": "lookup",
        "llm.request.functions.0.parameters": '{"type": "object"}',
        "llm.top_k": 3,
    }
    out = normalize(attrs)
    assert out[A.OPERATION_NAME] == "chat" and out[A.PROVIDER_NAME] == "openai"
    assert out[A.INPUT_MESSAGES] == [
        text("user", "hi"),
        {"role": "assistant", "parts": [CALL]},
        {"role": "tool", "parts": [RESULT]},
    ]
    assert out[A.OUTPUT_MESSAGES] == [{**text("assistant", "done"), "finish_reason": "stop"}]
    assert out[A.RESPONSE_FINISH_REASONS] == ["stop"]
    assert out[A.TOOL_DEFINITIONS] == [
        {"type": "function", "name": "lookup", "parameters": {"type": "object"}}
    ]
    assert out["gen_ai.request.top_k"] == 3


def test_openllmetry_tool_entity() -> None:
    out = normalize(
        {
            "traceloop.span.kind": "tool",
            "traceloop.entity.name": "lookup",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"id": 7}}),
            "traceloop.entity.output": '{"ok": true}',
        }
    )
    assert out[A.OPERATION_NAME] == "execute_tool" and out[A.TOOL_NAME] == "lookup"
    assert out[A.TOOL_CALL_ARGUMENTS] == {"id": 7} and out[A.TOOL_CALL_RESULT] == '{"ok": true}'


def test_pydantic_ai_version_1_events() -> None:
    events = [
        {"event.name": "gen_ai.system.message", "role": "system", "content": SYSTEM},
        {"event.name": "gen_ai.user.message", "content": "hi", "role": "user"},
        {
            "event.name": "gen_ai.assistant.message",
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"id": 7}'},
                }
            ],
        },
        {
            "event.name": "gen_ai.tool.message",
            "role": "tool",
            "id": "c1",
            "content": '{"ok": true}',
        },
        {
            "event.name": "gen_ai.choice",
            "index": 0,
            "message": {"role": "assistant", "content": "done"},
        },
    ]
    params = {
        "function_tools": [{"name": "lookup", "description": "d", "parameters_json_schema": {}}]
    }
    out = normalize(
        {
            A.OPERATION_NAME: "chat",
            "events": json.dumps(events),
            "model_request_parameters": json.dumps(params),
        },
        scope="pydantic-ai",
    )
    assert out[A.INPUT_MESSAGES] == [
        text("system", SYSTEM),
        text("user", "hi"),
        {"role": "assistant", "parts": [CALL]},
        {"role": "tool", "parts": [RESULT]},
    ]
    assert out[A.OUTPUT_MESSAGES] == [text("assistant", "done")]
    assert out[A.TOOL_DEFINITIONS] == [
        {"type": "function", "name": "lookup", "description": "d", "parameters": {}}
    ]
    tool = normalize(
        {A.TOOL_NAME: "lookup", "tool_arguments": '{"id": 7}', "tool_response": "ok"},
        scope="pydantic-ai",
    )
    assert tool[A.OPERATION_NAME] == "execute_tool" and tool[A.TOOL_CALL_RESULT] == "ok"
    agent = normalize({"agent_name": "support", "all_messages_events": "[]"}, scope="pydantic-ai")
    assert agent[A.OPERATION_NAME] == "invoke_agent" and agent[A.AGENT_NAME] == "support"


def test_logfire_request_and_response_data() -> None:
    request = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}
    response = {
        "message": {"role": "assistant", "content": "done"},
        "usage": {"prompt_tokens": 4, "completion_tokens": 1},
    }
    out = normalize(
        {
            "request_data": json.dumps(request),
            "response_data": json.dumps(response),
            "logfire.msg": "x",
        }
    )
    assert out[A.OPERATION_NAME] == "chat" and out[A.REQUEST_MODEL] == "m"
    assert out["gen_ai.request.temperature"] == 0
    assert out[A.INPUT_MESSAGES] == [text("user", "hi")]
    assert out[A.OUTPUT_MESSAGES] == [text("assistant", "done")]
    assert (out[A.USAGE_INPUT_TOKENS], out[A.USAGE_OUTPUT_TOKENS]) == (4, 1)


def test_openai_agents_otel_bridge_repairs() -> None:
    chat_repr = str(
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"id": 7}'},
                }
            ],
        }
    )
    responses_repr = "ResponseFunctionToolCall(arguments='{\"id\": 7}', call_id='c1', name='lookup', type='function_call', id='fc_1', status=None)"
    tool_msg = {"role": "tool", "parts": [{"type": "text", "content": '{"ok": true}'}, {**RESULT}]}
    for output in (chat_repr, responses_repr):
        out = normalize(
            {
                A.OUTPUT_MESSAGES: json.dumps([text("assistant", output)]),
                A.INPUT_MESSAGES: json.dumps([tool_msg]),
            },
            scope="opentelemetry.instrumentation.openai_agents",
        )
        assert M.normalize(out[A.OUTPUT_MESSAGES]) == [{"role": "assistant", "parts": [CALL]}]
        assert M.normalize(out[A.INPUT_MESSAGES]) == [{"role": "tool", "parts": [RESULT]}]
    # Elsewhere a text that happens to look like a repr is text.
    plain = normalize(
        {A.OUTPUT_MESSAGES: json.dumps([text("assistant", chat_repr)])}, scope="other"
    )
    assert plain[A.OUTPUT_MESSAGES] == json.dumps([text("assistant", chat_repr)])


def test_anthropic_sdk_names() -> None:
    out = normalize(
        {"anthropic.message.stop_reason": "tool_use", "gen_ai.usage.cache_write.input_tokens": 2},
        scope="com.anthropic.sdk.python",
    )
    assert out[A.RESPONSE_FINISH_REASONS] == ["tool_use"]
    assert out["gen_ai.usage.cache_creation.input_tokens"] == 2


def test_anthropic_tool_results_read_like_openai_ones() -> None:
    anthropic = {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "c1",
                "content": [{"type": "text", "text": '{"ok": true}'}],
            }
        ],
    }
    openai = {"role": "tool", "tool_call_id": "c1", "content": '{"ok": true}'}
    genai_user = {
        "role": "user",
        "parts": [{"type": "tool_call_response", "id": "c1", "result": '{"ok": true}'}],
    }
    assert (
        M.normalize([anthropic])
        == M.normalize([openai])
        == M.normalize([genai_user])
        == [{"role": "tool", "parts": [RESULT]}]
    )
    use = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "lookup", "input": {"id": 7}}],
    }
    call = {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "function": {"name": "lookup", "arguments": '{"id": 7}'}}],
    }
    assert M.normalize([use]) == M.normalize([call]) == [{"role": "assistant", "parts": [CALL]}]


def test_registry_detects_by_scope_and_markers_and_keeps_originals() -> None:
    assert names({"openinference.span.kind": "LLM"}) == ["openinference", "genai"]
    assert names({"llm.request.type": "chat"}) == ["openllmetry", "genai"]
    assert names({}, scope="pydantic-ai")[0] == "pydantic_ai"
    assert names({"http.method": "GET"}) == ["genai"]
    own = {"openinference.span.kind": "LLM", "llm.model_name": "m", A.REQUEST_MODEL: "mine"}
    assert normalize(own)[A.REQUEST_MODEL] == "mine"
    unknown = {"http.method": "GET", "x": 1}
    assert normalize(unknown, name="GET /") == unknown


def test_reasoning_and_cache_token_counts_of_each_api() -> None:
    """Usage details as the APIs document them -> the semconv usage attributes."""
    from otel_replay.dialects.bodies import response

    chat = {
        "choices": [],
        "usage": {
            "prompt_tokens": 20,
            "completion_tokens": 50,
            "prompt_tokens_details": {"cached_tokens": 16},
            "completion_tokens_details": {"reasoning_tokens": 40},
        },
    }
    responses = {
        "output": [],
        "usage": {
            "input_tokens": 20,
            "output_tokens": 50,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 12},
        },
    }
    anthropic = {
        "content": [],
        "usage": {
            "input_tokens": 3,
            "output_tokens": 9,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 50,
        },
    }
    assert response(chat)["gen_ai.usage.reasoning.output_tokens"] == 40
    assert response(chat)["gen_ai.usage.cache_read.input_tokens"] == 16
    got = response(responses)
    assert got["gen_ai.usage.reasoning.output_tokens"] == 12
    assert "gen_ai.usage.cache_read.input_tokens" not in got  # zero: nothing to say
    got = response(anthropic)
    assert got["gen_ai.usage.cache_read.input_tokens"] == 100
    assert got["gen_ai.usage.cache_creation.input_tokens"] == 50
