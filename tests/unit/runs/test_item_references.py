"""Earlier answers sent back as references to the stored message (the Vercel AI SDK's OpenAI
Responses provider), rebuilt and served as sent.

The real traces are the conformance cases ``vercel_ai/responses@blocks_and_errors`` and
``responses_stream@blocks_and_errors``, and ``responses@seed-N`` whose last answer was cut
partway through (``tests/conformance``); here, generated runs of the
spans its GenAI integration writes (text beside one to four calls per answer, non-ASCII,
control characters, empty text) and the requests ``convertToOpenAIResponsesInput`` makes
of them (``store`` on, its default: an ``item_reference`` per earlier answer's message).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import attributes as A
from otel_replay.replay.engine import ReplayEngine
from otel_replay.runs.build import build_runs
from tests.fixtures.records import span_record

TRACE = "cd" * 16
ROOT = "0" * 15 + "1"
USER = "Où est ma commande ? 🙏"

texts = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
turns = st.lists(
    st.tuples(
        texts, st.lists(st.dictionaries(st.sampled_from("abé"), texts), min_size=1, max_size=4)
    ),
    min_size=1,
    max_size=3,
)


def _turn_messages(k: int, text: str, calls: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Turn ``k`` as the GenAI integration records it: the answer, then its results."""
    answer = {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": text},
            *(
                {"type": "tool_call", "id": f"call_{k}_{i}", "name": "f", "arguments": args}
                for i, args in enumerate(calls)
            ),
        ],
    }
    results = {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": f"call_{k}_{i}", "response": "ok"}
            for i in range(len(calls))
        ],
    }
    return [answer, results]


def _spans(story: list[tuple[str, list[dict[str, str]]]]) -> list[Any]:
    spans = [span_record(TRACE, ROOT, None, 0, "invoke_agent", {}, duration=10_000, scope="gen_ai")]
    history: list[dict[str, Any]] = [{"role": "user", "parts": [{"type": "text", "content": USER}]}]
    for k, (text, calls) in enumerate([*story, ("Voilà.", [])]):
        answer, results = _turn_messages(k, text, calls)
        attrs = {
            A.OPERATION_NAME: A.OP_CHAT,
            A.PROVIDER_NAME: "openai",
            A.REQUEST_MODEL: "gpt-4o-mini",
            A.RESPONSE_ID: f"resp_{k}",
            # Timed whole, no first chunk: the AI SDK's span of a call not streamed.
            "gen_ai.client.operation.duration": 0.1,
            A.INPUT_MESSAGES: json.dumps(history, ensure_ascii=False),
            A.OUTPUT_MESSAGES: json.dumps(
                [answer if calls else answer | {"parts": answer["parts"][:1]}]
            ),
        }
        spans.append(
            span_record(TRACE, f"{k + 2:016x}", ROOT, 10 + 100 * k, "chat", attrs, scope="gen_ai")
        )
        history += [answer, results]
    return spans


def _requests(story: list[tuple[str, list[dict[str, str]]]]) -> list[dict[str, Any]]:
    """The bodies the SDK sends: each earlier answer's message as an item_reference."""
    items: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "input_text", "text": USER}]}
    ]
    bodies = [{"model": "gpt-4o-mini", "input": list(items)}]
    for k, (_, calls) in enumerate(story):
        items.append({"type": "item_reference", "id": f"msg_replayed_{k}"})
        for i, args in enumerate(calls):
            call = {"type": "function_call", "call_id": f"call_{k}_{i}", "name": "f"}
            items.append(call | {"arguments": json.dumps(args, ensure_ascii=False)})
        items += [
            {"type": "function_call_output", "call_id": f"call_{k}_{i}", "output": "ok"}
            for i in range(len(calls))
        ]
        bodies.append({"model": "gpt-4o-mini", "input": list(items)})
    return bodies


def _assert_sent_as_references(messages: Any, story: Any) -> None:
    """Each earlier answer in ``messages`` is the reference it was sent as, then its calls."""
    assistants = [m for m in messages or [] if m["role"] == "assistant"]
    assert len(assistants) == len(story)
    for message, (text, calls) in zip(assistants, story, strict=True):
        kinds = [p["type"] for p in message["parts"]]
        assert kinds == ["item_reference", *["tool_call"] * len(calls)]
        assert message["parts"][0]["content"] == text


@settings(max_examples=60, deadline=None)
@given(turns)
def test_earlier_answers_are_rebuilt_and_served_as_references(story: Any) -> None:
    (run,) = build_runs(_spans(story))
    models = [s.model for s in run.steps if s.kind == "model"]
    _assert_sent_as_references(models[-1].input_messages, story)
    engine = ReplayEngine([run])
    for body in _requests(story):
        raw = json.dumps(body, ensure_ascii=False).encode()
        answer = engine.handle("POST", "/v1/responses", raw, {})
        assert answer.status == 200, answer.body[:600]


@settings(max_examples=40, deadline=None)
@given(turns)
def test_a_call_cut_short_sent_earlier_answers_as_references_too(story: Any) -> None:
    """The last answer cut partway through, as the integration records it: the call's span
    failed with no response id (the mark is read off it) and no output, and the run with
    it.  Its input holds the earlier answers as the references they were sent as, and a
    replay serves the requests before it and fails it again."""
    spans = _spans(story)
    failed = {"status_code": 2, "status_message": "Failed to process successful response"}
    gone = (A.RESPONSE_ID, A.OUTPUT_MESSAGES)
    kept = {k: v for k, v in spans[-1].attributes.items() if k not in gone}
    spans[-1] = dataclasses.replace(spans[-1], attributes=kept, **failed)
    spans[0] = dataclasses.replace(spans[0], **failed)
    (run,) = build_runs(spans)
    cut = [s for s in run.steps if s.kind == "model"][-1]
    assert cut.model is not None and cut.model.output_messages is None
    _assert_sent_as_references(cut.model.input_messages, story)
    engine = ReplayEngine([run])
    *before, last = [json.dumps(b, ensure_ascii=False).encode() for b in _requests(story)]
    for raw in before:
        answer = engine.handle("POST", "/v1/responses", raw, {})
        assert answer.status == 200, answer.body[:600]
    assert engine.handle("POST", "/v1/responses", last, {}).cut
