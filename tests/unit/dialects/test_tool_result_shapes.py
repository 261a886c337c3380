"""Tool results rebuilt as the wire carried them, for every shape a framework gives them.

The traces of ``tests/data/tool_results/`` were recorded by running the real
packages (``tests/tool_results/record.py``): agents whose tools return text,
JSON objects, lists, numbers, None, booleans, empty text, the framework's own
content blocks, error results, and one raising, against a scripted model
server that logged every request.  Each model step's rebuilt input must be
the request as sent: the same conversation (``tests/fixtures/ground_truth.py``), and
every tool result spelled exactly as the wire carried it (the text, byte for
byte, not the framework's blocks nor a value that only parses the same).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import otel_replay
from otel_replay import json_text
from otel_replay import messages as M
from otel_replay.dialects.strands import sent_result
from otel_replay.dialects.vercel_ai import sent_output
from tests.fixtures.data import DATA, found
from tests.fixtures.ground_truth import recorded, sent, value

CASES = DATA / "tool_results"


def _requests(case: Path) -> list[dict[str, Any]]:
    lines = (case / "server.jsonl").read_text(encoding="utf-8").splitlines()
    return [{**r, "body_json": json.loads(r["body_raw"])} for r in map(json.loads, lines)]


def _sent_results(request: dict[str, Any]) -> dict[str, Any]:
    """Call id -> the tool result exactly as the request carried it."""
    body = request["body_json"]
    out: dict[str, Any] = {}
    for m in body.get("messages", body.get("input", [])):
        if m.get("role") == "tool":
            out[m["tool_call_id"]] = m["content"]
        elif m.get("type") == "function_call_output":
            out[m["call_id"]] = m["output"]
    return out


def _rebuilt_results(step: Any) -> dict[str, Any]:
    return {
        p["id"]: p["response"]
        for m in step.model.input_messages or []
        for p in m["parts"]
        if p["type"] == "tool_call_response"
    }


def _exact_cases() -> list[Path]:
    return [c.parent for c in found(CASES, "*/server.jsonl") if c.parent.name != "strands_image"]


def _as_read(result: Any) -> Any:
    """A result sent as a list of text parts (the Responses API's ``input_text`` items)
    is read as the text they spell, in the request as in the recording."""
    return M.tool_response(result) if isinstance(result, list) else result


@pytest.mark.parametrize("case", _exact_cases(), ids=lambda c: c.name)
def test_model_input_is_the_request_as_sent(case: Path) -> None:
    files = [case / n for n in ("traces.binpb", "traces.jsonl") if (case / n).exists()]
    (run,) = otel_replay.load(*files)
    models = run.model_steps()
    requests = _requests(case)
    assert len(models) == len(requests)
    shapes = 0
    for step, request in zip(models, requests, strict=True):
        m = step.model
        assert m is not None
        assert recorded(m.input_messages, m.system_instructions) == sent(request)
        want = {k: _as_read(v) for k, v in _sent_results(request).items()}
        assert _rebuilt_results(step) == want
        shapes += len(want)
    assert shapes >= 5  # every shape the agent's tools return reached the model


def test_tool_steps_hold_the_result_as_sent() -> None:
    """A Strands tool step's result is what the model was sent (as the value its text
    spells: a stub gives it back to the tool's caller), not Strands' blocks."""
    for name in ("strands_legacy", "strands_latest"):
        case = CASES / name
        (run,) = otel_replay.load(case / "traces.binpb")
        want = _sent_results(_requests(case)[-1])
        got = {s.tool.call_id: value(s.tool.result) for s in run.tool_steps() if s.tool}
        failed = {s.tool.call_id for s in run.tool_steps() if s.tool and s.tool.error}
        assert failed
        assert {k: v for k, v in got.items() if k not in failed} == {
            k: value(v) for k, v in want.items() if k not in failed
        }


@pytest.mark.parametrize("name", ["strands_legacy", "strands_latest"])
def test_strands_tool_steps_are_whole(name: str) -> None:
    """Tools that take no arguments (``{}``) and one that returned empty text: their
    arguments and results are recorded, none is said to be missing."""
    (run,) = otel_replay.load(CASES / name / "traces.binpb")
    assert all(s.tool is not None and s.tool.arguments == {} for s in run.tool_steps())
    assert [m for m in run.kit.missing if m.startswith("steps[")] == []
    assert run.kit.verdict == "full"


def test_strands_results_as_its_providers_send_them() -> None:
    """Generated results of text and JSON blocks, against what Strands' OpenAI providers
    (Chat Completions and Responses) made of each (``tests/tool_results/strands_oracle.py``)."""
    cases = json.loads((CASES / "strands_sent_results.json").read_text(encoding="utf-8"))
    assert len(cases) >= 100
    for case in cases:
        assert sent_result(case["content"]) == case["chat"] == case["responses"]


@pytest.mark.parametrize("name", ["crewai_v0_sent_results.json", "crewai_sent_results.json"])
def test_crewai_results_without_the_reminder_of_the_tools(name: str) -> None:
    """Generated tools and results of every shape, against what CrewAI's own
    ``ToolUsage._format_result`` made of each (``tests/tool_results/crewai_oracle.py``):
    the tool's result is the text before the reminder CrewAI appended, whole."""
    from otel_replay.dialects.crewai import tool_result

    cases = json.loads((CASES / name).read_text(encoding="utf-8"))
    assert sum(c["reminded"] for c in cases) >= 50
    for case in cases:
        assert tool_result(case["sent"]) == case["result"]
        assert (case["sent"] != case["result"]) == case["reminded"]


@pytest.mark.parametrize(
    "name", ["pydantic_ai_sent_results.json", "pydantic_ai_v1_sent_results.json"]
)
def test_pydantic_ai_results_as_it_sends_them(name: str) -> None:
    """Generated tool results of every shape, as pydantic-ai's instrumentation records them
    in ``gen_ai.input.messages``, read by the dialect, against what its
    ``ToolReturnPart.model_response_str()`` sends (``tests/tool_results/pydantic_ai_oracle.py``;
    2.68: None and [] as empty text; 1.0: as ``null`` and ``[]``)."""
    from otel_replay import attributes as A
    from otel_replay.dialects.registry import normalize

    data = json.loads((CASES / name).read_text(encoding="utf-8"))
    assert len(data["cases"]) >= 100
    for case in data["cases"]:
        attrs = {
            A.OPERATION_NAME: A.OP_CHAT,
            A.PROVIDER_NAME: "openai",
            A.INPUT_MESSAGES: case["recorded"],
        }
        got = normalize(attrs, name="chat", scope="pydantic-ai", scope_version=data["version"])
        messages = got[A.INPUT_MESSAGES]  # (the span's own text, when nothing was repaired)
        messages = json.loads(messages) if isinstance(messages, str) else messages
        (part,) = [p for m in messages for p in m["parts"] if p["type"] == "tool_call_response"]
        assert M.normalize_part(part)["response"] == case["sent"], case


def test_langchain_results_as_openllmetry_records_them() -> None:
    """Generated ``ToolMessage`` contents (text, text that looks like blocks, lists of
    content blocks), as OpenLLMetry's LangChain instrumentation records them (a list as
    ``json.dumps`` text), read back, against what langchain-openai put in the request
    (``tests/tool_results/langchain_openllmetry_oracle.py``)."""
    from otel_replay import attributes as A
    from otel_replay.dialects.openllmetry import LANGCHAIN_SCOPE
    from otel_replay.dialects.registry import normalize

    cases = json.loads((CASES / "langchain_openllmetry_sent_results.json").read_text("utf-8"))
    assert sum(isinstance(c["sent"], list) for c in cases) >= 50
    for case in cases:
        attrs = {A.OPERATION_NAME: A.OP_CHAT, A.INPUT_MESSAGES: case["recorded"]}
        got = normalize(attrs, name="ChatOpenAI.chat", scope=LANGCHAIN_SCOPE)
        messages = got[A.INPUT_MESSAGES]  # (the span's own text, when nothing was repaired)
        messages = json.loads(messages) if isinstance(messages, str) else messages
        (part,) = [p for m in messages for p in m["parts"] if p["type"] == "tool_call_response"]
        assert M.normalize_part(part)["response"] == M.tool_response(case["sent"]), case


def test_langchain_results_as_openinference_records_them() -> None:
    """Generated ``ToolMessage`` contents (text; lists of text blocks, bare strings, empty
    texts), flattened by OpenInference's LangChain instrumentation into ``contents`` items,
    read back as one result each, against what langchain-openai put in the request
    (``tests/tool_results/langchain_openinference_oracle.py``)."""
    from otel_replay import attributes as A
    from otel_replay.dialects.registry import normalize

    cases = json.loads((CASES / "langchain_openinference_sent_results.json").read_text("utf-8"))
    assert sum(isinstance(c["sent"], list) for c in cases) >= 50
    for case in cases:
        attrs = {**case["attributes"], "openinference.span.kind": "LLM"}
        got = normalize(attrs, name="ChatOpenAI", scope="openinference.instrumentation.langchain")
        tool = [p for m in got[A.INPUT_MESSAGES] if m["role"] == "tool" for p in m["parts"]]
        assert [p["type"] for p in tool] == ["tool_call_response"], case
        assert tool[0]["response"] == M.tool_response(case["sent"]), case
        if case["sent"] in ("", []):
            # Without the serialized request, an empty result (no content written) is the
            # empty text, which is what LangChain sent unless it was the empty list.
            attrs.pop("input.value")
            got = normalize(
                attrs, name="ChatOpenAI", scope="openinference.instrumentation.langchain"
            )
            (message,) = [m for m in got[A.INPUT_MESSAGES] if m["role"] == "tool"]
            assert message["parts"][0]["response"] == "", case


def test_agents_tool_messages_as_the_otel_bridge_records_them() -> None:
    """Generated tool messages (text; lists of text blocks, image blocks, bare strings) as
    OpenTelemetry's openai-agents bridge records them, the result as text parts and again
    as a ``tool_call_response``, read back as the one result that was sent
    (``tests/tool_results/openai_agents_otel_oracle.py``)."""
    from otel_replay import attributes as A
    from otel_replay.dialects.openai_agents import SCOPE
    from otel_replay.dialects.registry import normalize

    cases = json.loads((CASES / "openai_agents_otel_sent_results.json").read_text("utf-8"))
    assert sum(isinstance(c["sent"]["content"], list) for c in cases) >= 50
    for case in cases:
        attrs = {A.OPERATION_NAME: A.OP_CHAT, A.INPUT_MESSAGES: json.dumps([case["recorded"]])}
        got = normalize(attrs, name="chat", scope=SCOPE)
        messages = got[A.INPUT_MESSAGES]  # (the span's own text, when nothing was repaired)
        messages = json.loads(messages) if isinstance(messages, str) else messages
        ((message,),) = [messages]
        sent = case["sent"]
        assert [M.normalize_part(p) for p in message["parts"]] == [
            {
                "type": "tool_call_response",
                "id": sent["tool_call_id"],
                "response": M.tool_response(sent["content"]),
            }
        ], case


def test_llamaindex_tool_outputs_as_it_sends_them() -> None:
    """Generated tool return values (text, empty text, lists of text blocks, the empty list,
    numbers, dicts, None), as LlamaIndex's ``FunctionTool`` makes them a ``ToolOutput``
    and OpenInference records it, read as the text its agents send: ``str(output)``, the
    text blocks' texts one a line, none for no blocks (``tests/tool_results/llamaindex_oracle.py``)."""
    from otel_replay.runs.tool_spans import unwrap_result

    cases = json.loads((CASES / "llamaindex_sent_results.json").read_text("utf-8"))
    assert sum(c["sent"] == "" for c in cases) >= 20
    for case in cases:
        assert unwrap_result(case["recorded"]) == case["sent"], case


@pytest.mark.parametrize(
    ("name", "wraps_errors"),
    [("vercel_ai6_sent_results.json", False), ("vercel_ai_sent_results.json", True)],
)
def test_vercel_outputs_as_its_openai_provider_sends_them(name: str, wraps_errors: bool) -> None:
    """Generated tool outputs of every type (text, json, error-text, error-json, content,
    execution-denied; JSON of every type, numbers of every magnitude), read as a trace
    holds them (JSON text written by the SDK), against what ``@ai-sdk/openai`` put in
    its Chat Completions and Responses requests (``tests/tool_results/vercel_oracle.mjs``;
    ai 6 with @ai-sdk/openai 3, ai 7 with 4)."""
    cases = json_text.loads((CASES / name).read_text(encoding="utf-8"))
    assert len(cases) >= 100
    assert {c["output"]["type"] for c in cases} >= {"text", "json", "error-text", "content"}
    for case in cases:
        for api in ("chat", "responses"):
            got = sent_output(
                case["output"], responses=api == "responses", wraps_errors=wraps_errors
            )
            assert got == case[api], (api, case["output"])


@pytest.mark.parametrize(
    "name", ["vercel_ai_chat_legacy", "vercel_ai_responses_legacy", "vercel_ai6_chat"]
)
def test_vercel_legacy_tool_steps_hold_every_result(name: str) -> None:
    """``ai.toolCall.result`` is JSON text of what the tool returned: null is a result."""
    (run,) = otel_replay.load(CASES / name / "traces.jsonl")
    sent = _sent_results(_requests(CASES / name)[-1])
    steps = {s.tool.tool_name: s.tool for s in run.tool_steps() if s.tool is not None}
    assert steps["get_raising"].error is not None
    for tool in steps.values():
        if tool.tool_name not in ("get_raising", "get_content"):
            assert tool.result == value(sent[tool.call_id]), tool.tool_name
    assert steps["get_null"].result is None and steps["get_null"].result_payload is not None
    assert run.kit.verdict == "full"


def test_vercel_legacy_null_result_is_a_result() -> None:
    """Each ``ai.toolCall`` span of the real trace, normalized: its result is the JSON text
    it recorded, typed JSON, for ``null`` too (not dropped as no result)."""
    from otel_replay import attributes as A
    from otel_replay.dialects.registry import normalize

    spans = [
        span
        for line in (CASES / "vercel_ai_chat_legacy" / "traces.jsonl")
        .read_text("utf-8")
        .splitlines()
        for rs in json.loads(line)["resourceSpans"]
        for ss in rs["scopeSpans"]
        for span in ss["spans"]
        if span["name"] == "ai.toolCall"
    ]
    results = []
    for span in spans:
        attrs = {a["key"]: a["value"]["stringValue"] for a in span["attributes"]}
        if "ai.toolCall.result" not in attrs:
            continue  # the raising tool
        got = normalize(attrs, name=span["name"], scope="ai")
        assert got[A.TOOL_CALL_RESULT] == attrs["ai.toolCall.result"]
        assert got[A.TYPE + A.TOOL_CALL_RESULT] == "json"
        results.append(attrs["ai.toolCall.result"])
    assert "null" in results and len(results) >= 8


def _served(case: Path) -> list[Any]:
    """Each recorded request of ``case``, sent again as it was to the replay engine serving
    the case's own trace, in order, until one is refused: the answers."""
    import httpx

    from otel_replay.replay.adapters.transport import ReplayTransport
    from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine

    files = [case / n for n in ("traces.binpb", "traces.jsonl") if (case / n).exists()]
    engine = ReplayEngine(list(otel_replay.load(*files)))
    conversation: dict[str, str] = {}
    answers = []
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for request in _requests(case):
            headers = {"content-type": "application/json", **conversation}
            body = request["body_raw"].encode()
            answer = http.post(request["path"], content=body, headers=headers)
            answers.append(answer)
            if answer.status_code != 200:
                break
            conversation = {CONVERSATION_HEADER: answer.headers[CONVERSATION_HEADER]}
    return answers


@pytest.mark.parametrize("case", _exact_cases(), ids=lambda c: c.name)
def test_every_request_is_served_from_the_trace(case: Path) -> None:
    """Every recorded request is answered (the agent's next call is not refused)."""
    answers = _served(case)
    assert len(answers) == len(_requests(case))
    for answer in answers:
        assert answer.status_code == 200, answer.text[:2000]


def test_a_result_whose_image_is_not_recorded_is_refused() -> None:
    """Strands records an image's bytes as "<replaced>": the request that sends the image
    is refused at that step, the recorded result shown, never answered as if it matched."""
    answers = _served(CASES / "strands_image")
    assert [a.status_code for a in answers] == [200, 409]
    assert "<replaced>" in answers[-1].text and "call_0_get_image" in answers[-1].text


@settings(max_examples=200, deadline=None)
@given(
    message=st.text(max_size=40),
    name=st.sampled_from(["Error", "TypeError", "RangeError", "AI_APICallError", "MyException"]),
    ai7=st.booleans(),
)
def test_a_streamed_error_is_sent_as_its_release_spells_it(
    message: str, name: str, ai7: bool
) -> None:
    """``streamText`` records no release: ai 7 writes a thrown Error's text as its
    ``toString()`` and sends it wrapped, ai 6 wrote the message alone and sent it so.
    (A message that itself reads ``SomeError: ...`` is the one case the trace cannot
    tell apart, left out.)"""
    from otel_replay import attributes as A
    from otel_replay.dialects.registry import normalize
    from otel_replay.dialects.vercel_ai import stringify

    assume(re.match(r"[\w$]*(?:Error|Exception)(?:: |$)", message) is None)
    error = (f"{name}: {message}" if message else name) if ai7 else message
    prompt = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "t", "input": {}}],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "t",
                    "output": {"type": "error-text", "value": error},
                }
            ],
        },
    ]
    attrs = {
        "ai.operationId": "ai.streamText.doStream",
        "ai.model.provider": "openai.chat",
        "ai.prompt.messages": json.dumps(prompt, ensure_ascii=False),
    }
    messages = normalize(attrs, name="ai.streamText.doStream", scope="ai")[A.INPUT_MESSAGES]
    (part,) = messages[-1]["parts"]
    assert part["response"] == (stringify({"error": error}) if ai7 else error)


_BLOCK = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "json", "image"]), "text": st.text(max_size=6)}
)


@settings(max_examples=200, deadline=None)
@given(
    blocks=st.lists(_BLOCK, min_size=1, max_size=3),
    ensure_ascii=st.booleans(),
    as_text=st.booleans(),
)
def test_a_tool_message_event_keeps_its_text(
    blocks: list[dict[str, Any]], ensure_ascii: bool, as_text: bool
) -> None:
    """A ``gen_ai.tool.message`` log record whose body holds the result as text (Semantic
    Kernel sends a list a tool returned as its JSON text, and logs the text it sent): the
    result is that text, even when it spells content blocks.  A span event's ``content``
    attribute holds JSON text of the blocks, as no attribute holds a list (Strands): the
    blocks."""
    from otel_replay.runs.log_events import content_of

    text = json.dumps(blocks, ensure_ascii=ensure_ascii)
    fields = {"role": "tool", "content": text, "id": "c1"}
    if as_text:
        event = ("gen_ai.tool.message", json.dumps(fields), {})  # a log record's body
        want: Any = text
    else:
        event = ("gen_ai.tool.message", None, fields)  # a span event's attributes
        want = M.tool_response(blocks)
    call = content_of([event])
    ((part,),) = [m["parts"] for m in call.input_messages or []]
    assert part == {"type": "tool_call_response", "id": "c1", "response": want}


def test_agents_tool_results_on_responses_as_openinference_records_them() -> None:
    """Generated tool return values (text, text that spells a list of parts, lists of text
    blocks, of strings and of images, numbers, None, objects, error results), sent by the
    OpenAI Agents SDK as Responses ``function_call_output`` items (a list of known blocks as
    ``input_text``/``input_image`` parts) and recorded by OpenInference's instrumentation
    (the flattened messages hold a list of parts as its JSON text, as they hold a text),
    read back as the result the request carried
    (``tests/tool_results/openai_agents_openinference_oracle.py``)."""
    from otel_replay import attributes as A
    from otel_replay.dialects.registry import normalize

    cases = json.loads((CASES / "openai_agents_openinference_sent_results.json").read_text("utf-8"))
    assert sum(isinstance(c["sent"], list) for c in cases) >= 40
    assert any(isinstance(c["sent"], str) and c["sent"].startswith('[{"type"') for c in cases)
    for case in cases:
        attrs = {**case["attributes"], "openinference.span.kind": "LLM"}
        got = normalize(attrs, name="response", scope="openinference.instrumentation.openai_agents")
        tool = [p for m in got[A.INPUT_MESSAGES] if m["role"] == "tool" for p in m["parts"]]
        assert [p["type"] for p in tool] == ["tool_call_response"], case
        assert tool[0]["response"] == M.tool_response(case["sent"]), case


def test_agents_call_ids_as_openinference_records_them() -> None:
    """Generated Chat Completions call ids (unique, a counter that restarts in each answer,
    the empty id of a server that gives none) in an Agents SDK model call's messages and
    answer, as OpenInference's instrumentation records them (no attribute for an empty id of
    a call; the serialized messages keep it), read back as sent: an empty id stays empty, not
    none, so that a replay serves it as the model did, not a made-up one
    (``tests/tool_results/openai_agents_openinference_ids_oracle.py``)."""
    from otel_replay import attributes as A
    from otel_replay.dialects.registry import normalize

    def ids(messages: list[dict[str, Any]]) -> list[Any]:
        calls = [p for m in messages for p in m["parts"] if p["type"] == "tool_call"]
        results = [p for m in messages for p in m["parts"] if p["type"] == "tool_call_response"]
        return [p["id"] for p in calls + results]

    cases = json.loads((CASES / "openai_agents_openinference_ids.json").read_text("utf-8"))
    assert sum("" in c["answered"] for c in cases) >= 20
    for case in cases:
        attrs = {**case["attributes"], "openinference.span.kind": "LLM"}
        got = normalize(
            attrs, name="generation", scope="openinference.instrumentation.openai_agents"
        )
        assert ids(got[A.INPUT_MESSAGES]) == case["sent"], case
        assert ids(got.get(A.OUTPUT_MESSAGES) or []) == case["answered"], case
