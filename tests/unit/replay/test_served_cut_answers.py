"""Served over HTTP, a recorded answer cut partway through promises its length and says the
connection closes, then closes it short: the client reads an answer cut short, as it did
when the trace was recorded, not a connection lost, which some clients retry.

The class: every run of the conformance corpus that ended at an answer the model server cut
partway through (``raised`` in a case's ``case.json``; recorded by running each stack's own
agent: the Vercel AI SDK on Chat Completions and Responses with the cut at each turn,
OpenInference's OpenAI Agents bridge, pydantic-ai, smolagents).  The Vercel AI SDK's fetch
retries a body closed short without a promised length (a socket error is retryable to it)
and raises one shorter than its length: the replay must be the latter, or the agent sends
the failed request again and the replay ends in the SDK's ``RetryError``, where the
recording raised ``APICallError``.  An AWS event stream (Bedrock's ConverseStream) is the
other way round: botocore reads a body short of its length as whole, and raises where a
chunked body is broken off, as Bedrock's was.  Each case's requests go over a real HTTP connection to
the replay server, in the order the agent sent them, the cut one last.
"""

from __future__ import annotations

import http.client
from urllib.parse import urlsplit

import pytest

from otel_replay import event_stream
from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.conversations import CONVERSATION_HEADER
from otel_replay.replay.engine import ReplayEngine
from tests.conformance.checks import Case, check, find_cases
from tests.conformance.test_conformance import NOT_RECORDED
from tests.conformance.test_replay_agents import UNREPLAYABLE

#: The cases whose run ended at a cut answer the trace holds (not those whose cut call no
#: span recorded, nor a stream cut partway of which it holds nothing: those replays refuse,
#: naming it; nor an answer the framework kept, in test_kept_cut_answers).
CUT_CASES = [
    c
    for c in find_cases()
    if c.raised
    and not c.kept_cut
    and c.id not in UNREPLAYABLE
    and "holds nothing of what streamed" not in NOT_RECORDED.get(c.id, "")
]


def test_the_corpus_holds_runs_ended_by_a_cut_answer_of_several_stacks() -> None:
    assert len({c.meta["stack"] for c in CUT_CASES}) >= 3, [c.id for c in CUT_CASES]
    assert {c.meta.get("api", "chat") for c in CUT_CASES} >= {"chat", "responses"}
    turns = {c.cut(order)["turn"] for c in CUT_CASES for order in c.raised}  # type: ignore[index]
    assert len(turns) >= 2, turns


def _post(url: str, r: dict[str, object], headers: dict[str, str]) -> http.client.HTTPResponse:
    where = urlsplit(url)
    conn = http.client.HTTPConnection(where.hostname or "127.0.0.1", where.port, timeout=30)
    path = str(r["path"]).split("?", 1)[0]
    path = path if path.startswith("/v1/") else "/v1" + path
    body = str(r["body_raw"]).encode()
    conn.request("POST", path, body, {"content-type": "application/json", **headers})
    return conn.getresponse()


@pytest.mark.parametrize("case", CUT_CASES, ids=lambda c: c.id)
def test_a_cut_answer_is_served_shorter_than_its_promised_length(case: Case) -> None:
    server = BackgroundServer(ReplayEngine(check(case).runs))
    url = server.start()
    try:
        for order in case.raised:
            cut = case.cut(order)
            assert cut is not None
            answered = case.conversations()[order]
            headers: dict[str, str] = {}
            for r in answered:
                answer = _post(url, r, headers)
                assert answer.status == 200, (r["seq"], answer.read()[:300])
                answer.read()
                headers = {CONVERSATION_HEADER: answer.headers[CONVERSATION_HEADER]}
            answer = _post(url, cut, headers)
            assert answer.status == 200
            assert answer.headers["x-otel-replay-failed"] == "recorded"
            if answer.headers["content-type"].startswith(event_stream.CONTENT_TYPE):
                # Bedrock's: chunked and broken off, as Bedrock's was (botocore reads a body
                # short of its promised length as a whole one).
                assert answer.headers["transfer-encoding"] == "chunked"
                with pytest.raises(http.client.IncompleteRead):
                    answer.read()
                continue
            assert answer.headers["connection"] == "close"
            assert answer.headers.get("transfer-encoding") is None
            promised = int(answer.headers["content-length"])
            with pytest.raises(http.client.IncompleteRead) as short:
                answer.read()
            assert len(short.value.partial) < promised
    finally:
        server.stop()
