"""An answer cut partway through whose first deltas the framework kept as the run's answer: a
replay sends those deltas again, then closes the connection, so that the framework keeps them
as it did.

The class: a model call whose stream was cut partway (ended in error, those deltas as its
output, no finish reason), the run's last model call, whose error went no further: the run
ended well on that text (CrewAI 0.x returns the partial response).  Served whole, the deltas
would be an answer the model never finished; failed with no byte, the framework would keep
nothing.  Built on the conformance cases recorded by running CrewAI 0.x (OpenInference)
streamed with the model server cutting an answer (``ending`` in ``case.json``); hypothesis
draws answers of text and calls on each wire, whose stream is cut after its last delta.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay import wire as W
from otel_replay.replay.adapters.transport import ReplayTransport
from otel_replay.replay.engine import CONVERSATION_HEADER, ReplayEngine
from otel_replay.runs.failed_calls import failed_end, fails_again, kept_cut
from tests.conformance.checks import Case, check, find_cases
from tests.conformance.test_conformance import NOT_RECORDED
from tests.fixtures.ground_truth import recorded, streamed_before_cut
from tests.fixtures.wire_reply import SSE_PATHS

#: Those whose trace says the call failed (others record the cut as a whole answer: not
#: recorded, see NOT_RECORDED).
KEPT = [c for c in find_cases() if c.kept_cut and c.id not in NOT_RECORDED]


def _text(step: Any) -> str:
    return "".join(i[1] for _, i in recorded(step.model.output_messages) if i[0] == "text")


def test_the_corpus_holds_a_cut_answer_the_framework_kept() -> None:
    assert KEPT, "no case whose framework kept what streamed of a cut answer"


@pytest.mark.parametrize("case", KEPT, ids=lambda c: c.id)
def test_the_kept_cut_is_sent_again_as_far_as_it_streamed_then_cut(case: Case) -> None:
    (run,) = check(case).runs
    last = run.model_steps()[-1]
    assert kept_cut(run, last) and fails_again(run, last) and not failed_end(run, last)
    engine = ReplayEngine(check(case).runs)
    headers = {"content-type": "application/json"}
    with httpx.Client(transport=ReplayTransport(engine), base_url="http://127.0.0.1") as http:
        for order, requests in case.conversations().items():
            for r in requests:
                answer = http.post(r["path"], content=str(r["body_raw"]).encode(), headers=headers)
                assert answer.status_code == 200, (r["seq"], answer.text[:500])
                headers[CONVERSATION_HEADER] = answer.headers[CONVERSATION_HEADER]
            cut = case.cut(order)
            assert cut is not None
            got = b""
            with (
                pytest.raises(httpx.RemoteProtocolError),
                http.stream(
                    "POST", cut["path"], content=str(cut["body_raw"]), headers=headers
                ) as answer,
            ):
                for chunk in answer.iter_raw():
                    got += chunk
            sent_again = streamed_before_cut({"response_raw": got.decode()})
            assert sent_again == _text(last) and sent_again
            assert streamed_before_cut(cut).startswith(sent_again)


_CALLS = st.lists(
    st.fixed_dictionaries(
        {"name": st.sampled_from(["lookup_order", "track_shipment"]), "order": st.text()}
    ),
    max_size=3,
)


@settings(max_examples=150, deadline=None)
@given(text=st.text(), calls=_CALLS, path=st.sampled_from(SSE_PATHS))
def test_a_stream_cut_after_its_last_delta_holds_the_answer_and_no_end(
    text: str, calls: list[dict[str, str]], path: str
) -> None:
    wire = W.WIRES[path]
    key = "input" if "responses" in path else "messages"
    body = {"model": "m", key: [{"role": "user", "content": "q"}], "stream": True}
    if "messages" in path and "chat" not in path:
        body["max_tokens"] = 10
    request = wire.parse(body)
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts += [
        {"type": "tool_call", "id": f"c{i}", "name": c["name"], "arguments": {"o": c["order"]}}
        for i, c in enumerate(calls)
    ]
    reply = W.Reply({"role": "assistant", "parts": parts}, "stop", None, "m", 0, 0, 0, "s")
    whole = list(wire.render_sse(reply, request))
    begun = W.stream_begun(whole)
    assert begun == whole[: len(begun)]
    raw = b"".join(begun).decode()
    assert streamed_before_cut({"response_raw": raw}) == text
    events = [json.loads(x[5:]) for x in raw.splitlines() if x.startswith("data:") and "{" in x]
    assert "[DONE]" not in raw and bool(begun) == bool(text or calls)
    for e in events:
        assert e.get("type") not in ("response.completed", "message_delta", "message_stop")
        assert all(c.get("finish_reason") is None for c in e.get("choices") or [])
