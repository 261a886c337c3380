"""Across vendors: a corpus run recorded through one API replays into a client of another.

Sources: the conformance cases of the client-loop stacks (``stacks/_shared/
client_loop.py`` on the OpenAI SDK, Chat Completions or Responses, and on the
Anthropic SDK), each a run with two parallel tool calls, one of which fails,
then a third call.  Each is served by the replay engine over HTTP (the
server ``otel-replay serve`` runs), and the same loop, written on another
vendor's SDK, runs against it, whole and (slow tier) streamed: it must get every answer
of the recording, in its own wire format, and end with the recorded answer.
The tools run for real (the loop calls its own functions); what is replayed
is the model.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator

import pytest

from otel_replay.replay.adapters.uvicorn_server import BackgroundServer
from otel_replay.replay.engine import ReplayEngine
from tests.conformance import scenario
from tests.conformance.checks import Case, check, find_cases
from tests.conformance.generate import STACKS

#: Recorded through each API (a case of each client-loop stack would do).
SOURCES = {
    "chat": "openai_openinference/sync",
    "responses": "openai_openinference/responses",
    "anthropic": "anthropic_openinference/anthropic",
}
APIS = tuple(SOURCES)
#: The clients replayed into: each source's, and Bedrock Converse on boto3 (no corpus
#: stack records through it yet: a client only).
CLIENTS = (*APIS, "converse")


@pytest.fixture(scope="module")
def client_loop() -> Iterator[object]:
    """The stacks' shared client loop, imported as its stacks run it."""
    shared = str(STACKS / "_shared")
    saved = {name: sys.modules.get(name) for name in ("scenario", "client_loop")}
    sys.modules["scenario"] = scenario  # the loop imports it by that name
    sys.modules.pop("client_loop", None)
    sys.path.insert(0, shared)
    try:
        import client_loop

        yield client_loop
    finally:
        # Other tests import modules of these names (the third-party corpus' scenario).
        sys.path.remove(shared)
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def _case(case_id: str) -> Case:
    (case,) = [c for c in find_cases() if c.id == case_id]
    return case


@pytest.mark.parametrize(
    "stream", [False, pytest.param(True, marks=pytest.mark.slow)], ids=["whole", "streamed"]
)
@pytest.mark.parametrize(
    ("recorded", "replayed"), [(a, b) for a in APIS for b in CLIENTS if a != b]
)
def test_a_run_recorded_through_one_api_replays_through_another(
    client_loop: object, recorded: str, replayed: str, stream: bool
) -> None:
    case = _case(SOURCES[recorded])
    (run,) = check(case).runs
    engine = ReplayEngine([run])
    server = BackgroundServer(engine)
    url = server.start()
    try:
        base = url if replayed in ("anthropic", "converse") else url + "/v1"
        args = argparse.Namespace(base_url=base, api=replayed)
        question = scenario.QUESTIONS[0]
        answer = client_loop.ask(args, question, stream)  # type: ignore[attr-defined]
    finally:
        server.stop()
    assert answer == scenario.final_answer(scenario.order_in(question))
    (conversation,) = engine.conversations.values()
    assert conversation.model.cursor == len(conversation.model.steps)  # every answer served
    rungs = {rung for _, rung in conversation.model.served}
    assert rungs <= {"exact", "messages"}, rungs  # the question, results and prompt as recorded
