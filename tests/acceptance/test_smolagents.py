"""smolagents under OpenInference read as one run per ``agent.run``, as the model server saw it.

The cases are of the conformance corpus: OpenInference's smolagents spans,
exported over OTLP while a ``ToolCallingAgent`` ran against the fake model
server, whose log is the ground truth.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import otel_replay
from tests.conformance.checks import Case, check
from tests.fixtures.data import TESTS
from tests.fixtures.ground_truth import recorded, sent

CASES = TESTS / "conformance" / "cases" / "smolagents"
ANSWER = (
    "Votre commande ORD-5521 (2 × câble USB-C, 24,98 €) est en préparation. Le suivi du "
    "transporteur est indisponible ; j'ai ouvert le ticket T-5521, vous aurez une réponse "
    "sous 24 h. Merci de votre patience 🙏"
)


def _load(mode: str, tmp_path: Path) -> otel_replay.Run:
    target = tmp_path / f"{mode}.binpb"
    shutil.copyfile(CASES / mode / "traces.binpb", target)
    (run,) = otel_replay.load(target)
    return run


def _requests(mode: str) -> list[dict[str, Any]]:
    lines = (CASES / mode / "server.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    return [{**r, "body_json": json.loads(r["body_raw"])} for r in records if "turn" in r]


def test_a_conversation_kept_in_smolagents_roles_is_rebuilt_as_it_was_sent(
    tmp_path: Path,
) -> None:
    # smolagents records "tool-call"/"tool-response" messages, one per memory entry;
    # its model sent them as assistant/user messages, same roles merged into one.
    for mode in ("sync", "stream"):  # streamed: an empty assistant text is sent too
        run = _load(mode, tmp_path)
        models = run.model_steps()
        requests = _requests(mode)
        assert len(models) == len(requests) == 3
        for step, request in zip(models, requests, strict=True):
            assert step.model is not None
            got = recorded(step.model.input_messages, step.model.system_instructions)
            assert got == sent(request), mode
        roles = [m["role"] for m in models[2].model.input_messages or []]  # type: ignore[union-attr]
        assert "tool-call" not in roles and "tool-response" not in roles


def test_the_answer_given_through_the_final_answer_tool_is_the_runs_output(
    tmp_path: Path,
) -> None:
    run = _load("sync", tmp_path)
    last = run.model_steps()[-1].model
    assert last is not None
    assert [p["name"] for m in last.output_messages or [] for p in m["parts"]] == ["final_answer"]
    assert run.final_output() == ANSWER
    assert [s.tool.tool_name for s in run.tool_steps() if s.tool] == [
        "lookup_order",
        "track_shipment",
        "open_ticket",
        "final_answer",
    ]


def test_an_agent_that_tells_the_model_only_of_the_error_is_not_an_incomplete_record(
    tmp_path: Path,
) -> None:
    # After a parallel call failed, smolagents sends neither call, only the error:
    # the second request holds no call of the first, and that is what was sent.
    run = _load("sync", tmp_path)
    second = run.model_steps()[1].model
    assert second is not None
    assert not any(
        p["type"] == "tool_call" for m in second.input_messages or [] for p in m["parts"]
    )
    assert run.kit.verdict == "full", run.kit.problems


def test_a_code_agents_tool_calls_are_the_calls_its_code_made(tmp_path: Path) -> None:
    # CodeAgent: the model writes Python; each tool the code calls is a TOOL span whose
    # input is Tool.__call__'s ({"args", "sanitize_inputs_outputs", "kwargs"}).
    run = _load("code", tmp_path)
    tools = [s.tool for s in run.tool_steps() if s.tool is not None]
    assert [(t.tool_name, t.arguments) for t in tools] == [
        ("lookup_order", {"order_id": "ORD-5521"}),
        ("track_shipment", {"order_id": "ORD-5521"}),
        ("open_ticket", {"order_id": "ORD-5521", "reason": "échec du suivi du colis"}),
        ("final_answer", {"answer": ANSWER}),
    ]
    assert tools[1].error is not None and "Colis-Express" in tools[1].error.message
    assert run.final_output() == ANSWER
    # The model stopped before "</code>" (a stop sequence); smolagents added it to its memory.
    first = run.model_steps()[0].model
    assert first is not None
    (text,) = [p["content"] for m in first.output_messages or [] for p in m["parts"]]
    assert not text.endswith("</code>")
    for mode in ("code", "code_stream"):
        assert check(Case(CASES / mode)).exact, mode
