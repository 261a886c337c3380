"""A stream the server cut, which ended the run in error, is served again as far as it went.

The class: a run's last model call, failed again by a replay (it ended the run), whose
trace holds the first pieces of its answer (OpenLLMetry's OpenAI, pydantic-ai and AutoGen
keep the deltas of a stream cut partway: text, or calls).  ``serve`` and the pinned model
behind an in-process replay's transport sent the answer's headers and closed the
connection, no text before the close; the server had sent those pieces, and the
framework saw them.  They are now streamed again, then the connection is cut; where the
trace holds none, the replay's report says it cut with no text.

Built on every case of the conformance corpus whose run ended at a cut stream the trace
holds pieces of (the server's log of what it streamed is the ground truth); hypothesis
draws answers of text and calls, split into pieces, as a cut call holding them.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from otel_replay.runs.failed_calls import failed_end, held_before_cut
from otel_replay.runs.model import ModelCall, Run, Step
from tests.conformance.checks import Case, check, find_cases
from tests.fixtures.ground_truth import recorded, streamed_before_cut
from tests.fixtures.wire_reply import SSE_PATHS


def _ended_at_held_cut(case: Case) -> bool:
    if not case.meta["content"] or not case.raised or case.kept_cut:
        return False
    runs = check(case).runs
    return any(failed_end(run, s) and held_before_cut(s) for run in runs for s in run.model_steps())


CASES = [c for c in find_cases() if _ended_at_held_cut(c)]


def _text(step: Step) -> str:
    assert step.model is not None
    return "".join(i[1] for _, i in recorded(step.model.output_messages) if i[0] == "text")


def _cut_answer(http: httpx.Client, request: dict[str, Any], headers: dict[str, str]) -> bytes:
    """What the server sends a request it fails again, until it closes the connection."""
    got = b""
    with (
        pytest.raises(httpx.RemoteProtocolError),
        http.stream(
            "POST", request["path"], content=str(request["body_raw"]).encode(), headers=headers
        ) as answer,
    ):
        assert answer.status_code == 200
        for chunk in answer.iter_raw():
            got += chunk
    return got


def test_the_corpus_holds_runs_of_several_stacks_ended_at_a_cut_it_kept_pieces_of() -> None:
    assert len({c.meta["stack"] for c in CASES}) >= 3, [c.id for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_the_cut_stream_is_sent_again_as_far_as_the_trace_holds_it(case: Case) -> None:
    runs = check(case).runs
    engine = ReplayEngine(runs)
    headers = {"content-type": "application/json"}
    checked = 0
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for order, requests in case.conversations().items():
            cut = case.cut(order)
            if cut is None or not json.loads(str(cut["body_raw"])).get("stream"):
                continue
            for r in requests:
                if r is cut or r["seq"] == cut["seq"]:
                    break
                answer = http.post(r["path"], content=str(r["body_raw"]).encode(), headers=headers)
                assert answer.status_code == 200, (r["seq"], answer.text[:500])
                headers[CONVERSATION_HEADER] = answer.headers[CONVERSATION_HEADER]
            got = _cut_answer(http, cut, headers)
            held = [
                s
                for run in runs
                for s in run.model_steps()
                if failed_end(run, s) and held_before_cut(s)
            ]
            sent_again = streamed_before_cut({"response_raw": got.decode()})
            assert got, "nothing was streamed before the cut"
            assert streamed_before_cut(cut).startswith(sent_again)
            assert sent_again in {_text(s) for s in held}, (sent_again, [_text(s) for s in held])
            checked += 1
    assert checked, "no streamed request was cut"


_PIECES = st.lists(
    st.one_of(
        st.text(min_size=1).map(lambda t: {"type": "text", "content": t}),
        st.fixed_dictionaries(
            {
                "type": st.just("tool_call"),
                "id": st.text(alphabet="abc123", min_size=1, max_size=6).map("c".__add__),
                "name": st.sampled_from(["lookup_order", "track_shipment"]),
                "arguments": st.dictionaries(st.just("order_id"), st.text(), max_size=1),
            }
        ),
    ),
    max_size=4,
)


def _cut_run(parts: list[dict[str, Any]]) -> Run:
    """A run whose one model call streamed ``parts`` and was cut (failed, no finish
    reason), the error going up to the agent's span."""
    root = Step("agent", "invoke_agent a", "r" * 16, None, "t", 0, 10, status="ERROR")
    model = ModelCall(
        input_messages=[{"role": "user", "parts": [{"type": "text", "content": "q"}]}],
        output_messages=[{"role": "assistant", "parts": parts}],
    )
    attrs = {"gen_ai.is_streaming": True}
    step = Step(
        "model", "chat", "m" * 16, root.span_id, "t", 1, 2, status="ERROR", attributes=attrs
    )
    step.model = model
    root.children = [step]
    root.index, step.index = 0, 1
    return Run("t", ["t"], [root], [root, step])


@settings(max_examples=120, deadline=None)
@given(parts=_PIECES, path=st.sampled_from(SSE_PATHS))
def test_what_a_cut_call_holds_is_streamed_then_cut_however_it_is_split(
    parts: list[dict[str, Any]], path: str
) -> None:
    run = _cut_run(parts)
    step = run.steps[1]
    assert failed_end(run, step)
    key = "input" if "responses" in path else "messages"
    body: dict[str, Any] = {"model": "m", key: [{"role": "user", "content": "q"}], "stream": True}
    if "messages" in path and "chat" not in path:
        body["max_tokens"] = 10
    engine = ReplayEngine([run], match="any")
    answer = engine.handle("POST", path, json.dumps(body).encode(), {})
    assert answer.cut and answer.status == 200
    raw = b"".join(answer.chunks).decode()
    text = "".join(p["content"] for p in parts if p["type"] == "text")
    assert streamed_before_cut({"response_raw": raw}) == text
    assert bool(answer.chunks) == held_before_cut(step)
    assert "[DONE]" not in raw
    (conv,) = engine.conversations.values()
    how = "streamed again before the cut" if parts else "cut with no text"
    assert how in conv.model.cuts[step.index]
