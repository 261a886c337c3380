"""Tool results rebuilt as the wire carried them, for every shape a framework gives them.

The traces of ``tests/data/tool_results/`` were recorded by running the real
packages (``tests/tool_results/record.py``): agents whose tools return text,
JSON objects, lists, numbers, None, booleans, empty text, the framework's own
content blocks, error results, and one raising, against a scripted model
server that logged every request.  Each model step's rebuilt input must be
the request as sent: the same conversation (``tests/_ground_truth.py``), and
every tool result spelled exactly as the wire carried it (the text, byte for
byte, not the framework's blocks nor a value that only parses the same).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests._data import DATA, found
from tests._ground_truth import recorded, sent, value

import otel_replay

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
    return [c for c in found(CASES, "*/server.jsonl") if c.parent.name != "strands_image"]


@pytest.mark.parametrize("case", [c.parent for c in _exact_cases()], ids=lambda c: c.name)
def test_model_input_is_the_request_as_sent(case: Path) -> None:
    files = [case / n for n in ("traces.binpb", "traces.jsonl") if (case / n).exists()]
    (run,) = otel_replay.load(*files)
    models = [s for s in run.steps if s.model is not None]
    requests = _requests(case)
    assert len(models) == len(requests)
    shapes = 0
    for step, request in zip(models, requests, strict=True):
        m = step.model
        assert m is not None
        assert recorded(m.input_messages, m.system_instructions) == sent(request)
        want = _sent_results(request)
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


def test_strands_results_as_its_providers_send_them() -> None:
    """Generated results of text and JSON blocks, against what Strands' OpenAI providers
    (Chat Completions and Responses) made of each (``tests/tool_results/strands_oracle.py``)."""
    from otel_replay.dialects.strands import sent_result

    cases = json.loads((CASES / "strands_sent_results.json").read_text(encoding="utf-8"))
    assert len(cases) >= 100
    for case in cases:
        assert sent_result(case["content"]) == case["chat"] == case["responses"]
