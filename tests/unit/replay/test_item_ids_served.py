"""A Responses answer whose calls the trace holds by their item ids is said to re-spell them.

OpenLLMetry records an OpenAI Responses answer's calls by their item ids (``fc_...``), not
their call ids; the rebuild sets them right from the next request, which sends the calls
back (``runs/call_ids.py``).  Where no later request of the run shows them (a stream cut
at that request, whose span holds no request; a run that stopped there), the call id the
model sent is in no record: serve answers with the item id in its place, and says so.

Drawn on real traces (OpenLLMetry's OpenAI instrumentation on the Responses API, recorded
by running the stack): the requests after a drawn model call are taken out of their spans,
as a cut leaves them; the calls of that step and of every later one are then named, and
none before it.  The recorded cut case is served over HTTP.
"""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.conversations import CONVERSATION_HEADER
from otel_replay.replay.engine import ReplayEngine
from otel_replay.runs.build import build_runs
from otel_replay.runs.model import Step
from otel_replay.wire.spelling import spell
from tests.conformance.checks import check, find_cases
from tests.unit.replay.test_served_cut_answers import _post
from tests.unit.replay.test_unrecorded_cut_streams import _records

#: OpenLLMetry's recordings of Responses runs.
CASES = [
    c
    for c in find_cases()
    if c.meta["stack"] == "openai_openllmetry"
    and c.meta["api"] == "responses"
    and c.meta["content"]
]
#: The recorded run ended by a stream cut after an answer with calls.
CUT = "openai_openllmetry/responses_stream@seed-14"


def _calls(step: Step) -> list[dict[str, object]]:
    out = (step.model.output_messages if step.model else None) or []
    return [p for m in out for p in m.get("parts") or [] if p.get("type") == "tool_call"]


def test_the_corpus_holds_openllmetry_responses_runs_and_the_cut() -> None:
    assert len(CASES) >= 3 and CUT in {c.id for c in CASES}, [c.id for c in CASES]


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_calls_no_later_request_shows_are_named_as_item_ids(data: st.DataObject) -> None:
    case = data.draw(st.sampled_from(CASES))
    spans, logs = _records(case)
    (run,) = [r for r in build_runs(spans, logs=logs) if r.model_steps()]
    models = [s for s in run.model_steps() if s.model and s.model.input_messages]
    k = data.draw(st.integers(0, len(models)))  # len: nothing taken out
    spans = copy.deepcopy(spans)
    cut = {s.span_id for s in models[k + 1 :]}
    for span in spans:
        if span.span_id in cut:
            span.attributes.pop("gen_ai.input.messages", None)
    # Taken out, a request no longer joins its call to the run: the steps, wherever built.
    rebuilt = {s.span_id: s for r in build_runs(spans, logs=logs) for s in r.model_steps()}
    # The cut case's last call with a request is followed by one without (the cut).
    first_unseen = min(k, len(models) - 1) if case.id == CUT else k
    for i, recorded in enumerate(models):
        step = rebuilt[recorded.span_id]
        calls = _calls(step)
        expected = [f"{c['name']} ({c['id']})" for c in calls] if i >= first_unseen else []
        assert spell(step, calls).item_ids == expected, (case.id, k, i, calls)


def test_serve_says_the_cut_runs_last_calls_are_served_by_item_id() -> None:
    (case,) = [c for c in CASES if c.id == CUT]
    logged: list[str] = []
    server = BackgroundServer(ReplayEngine(check(case).runs, log=logged.append))
    url = server.start()
    try:
        (order,) = case.raised
        headers: dict[str, str] = {}
        said = []
        for r in case.conversations()[order]:
            answer = _post(url, r, headers)
            body = answer.read()
            assert answer.status == 200, (r["seq"], body[:300])
            said.append(answer.headers.get("x-otel-replay-respelled") or "")
            headers = {CONVERSATION_HEADER: answer.headers[CONVERSATION_HEADER]}
            if b"fc_9458_2_0" in body:
                assert "track_shipment (fc_9458_2_0)" in said[-1], said
        assert any("fc_9458_2_0" in s for s in said), said
    finally:
        server.stop()
    assert any("re-spelled: served as the Responses item id" in line for line in logged), logged
