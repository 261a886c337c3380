"""The fake model server's Amazon Bedrock Converse API, read by boto3's own client.

Drawn scenarios (their call ids, argument spellings, text beside calls, answers in parts,
deltas of any size, streams written a few bytes at a time): botocore parses every
ConverseStream frame (prelude and message CRCs, headers), the stream spells the same
answer as the whole JSON one, the streamed tool input is the scenario's spelling, and the
ground truth reads the same conversation off either log.  Scripted failures reach boto3
as Bedrock's errors (``x-amzn-ErrorType``).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conformance import scenario
from tests.conformance.server import ModelServer, Turn, converse_view
from tests.fixtures.ground_truth import answered

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _client(url: str, attempts: int = 1) -> Any:
    return boto3.client(
        "bedrock-runtime",
        endpoint_url=url,
        region_name="us-east-1",
        aws_access_key_id="AKIDCONFORMANCEDUMMY",
        aws_secret_access_key="conformance-dummy-secret",
        config=Config(retries={"total_max_attempts": attempts, "mode": "standard"}),
    )


def _request(scn: scenario.Scenario, tools: bool) -> dict[str, Any]:
    """A first Converse request of ``scn``'s first question (with its tools, or none: the
    answer)."""
    specs = [
        {
            "toolSpec": {
                "name": n,
                "description": t.description,
                "inputSchema": {"json": t.parameters},
            }
        }
        for n, t in scn.tools.items()
    ]
    request: dict[str, Any] = {
        "modelId": MODEL,
        "messages": [{"role": "user", "content": [{"text": scn.questions[0]}]}],
        "system": [{"text": scn.system_prompt}],
    }
    return {**request, "toolConfig": {"tools": specs}} if tools else request


def _streamed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The content blocks boto3's ConverseStream events spell (tool input as its JSON text)."""
    blocks: dict[int, dict[str, Any]] = {}
    for e in events:
        for kind in ("contentBlockStart", "contentBlockDelta"):
            if kind in e:
                part = e[kind].get("start") or e[kind]["delta"]
                block = blocks.setdefault(e[kind]["contentBlockIndex"], {})
                if "text" in part:
                    block["text"] = block.get("text", "") + part["text"]
                else:
                    use = block.setdefault("toolUse", {"input": ""})
                    use.update({k: v for k, v in part["toolUse"].items() if k != "input"})
                    use["input"] += part["toolUse"].get("input", "")
    return [blocks[i] for i in sorted(blocks)]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(0, 2**31 - 1), tools=st.booleans())
def test_converse_and_its_stream_answer_the_same_through_boto3(
    tmp_path: Path, seed: int, tools: bool
) -> None:
    scn = dataclasses.replace(scenario.scenario_for(seed), retries=())
    log = tmp_path / "server.jsonl"
    log.unlink(missing_ok=True)  # hypothesis runs every example in one tmp_path
    request = _request(scn, tools)
    with ModelServer(log, scn=scn) as server:
        client = _client(server.url)
        whole = client.converse(**request)
        events = list(client.converse_stream(**request)["stream"])
    content = whole["output"]["message"]["content"]
    streamed = _streamed(events)
    turn = Turn(converse_view(json.loads(json.dumps(request)), "/converse"), 0, scn)
    spelled = iter(spelling.spell(args) for _, args, spelling, _ in turn.calls)
    for block, got in zip(content, streamed, strict=True):
        if "toolUse" in block:
            assert got["toolUse"]["input"] == next(spelled)  # the wire's own spelling
            assert json.loads(got["toolUse"]["input"]) == block["toolUse"]["input"]
            assert got["toolUse"]["toolUseId"] == block["toolUse"]["toolUseId"]
            assert got["toolUse"]["name"] == block["toolUse"]["name"]
        else:
            assert got == block
    assert next(spelled, None) is None
    assert whole["stopReason"] == ("tool_use" if turn.calls else "end_turn")
    assert events[-2]["messageStop"]["stopReason"] == whole["stopReason"]
    assert events[-1]["metadata"]["usage"] == whole["usage"]
    records = [json.loads(line) for line in log.read_text(encoding="utf-8").split("\n") if line]
    assert [r["path"].rsplit("/", 1)[1] for r in records] == ["converse", "converse-stream"]
    assert answered(records[0]) == answered(records[1])
    assert any(item[0] == "call" for _, item in answered(records[0])) == bool(turn.calls)


@pytest.mark.parametrize(
    ("status", "code"),
    [
        (429, "ThrottlingException"),
        (500, "InternalServerException"),
        (503, "ServiceUnavailableException"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_a_scripted_failure_reaches_boto3_as_bedrocks_error(
    tmp_path: Path, status: int, code: str, stream: bool
) -> None:
    scn = dataclasses.replace(scenario.DEFAULT, retries=(scenario.Retry(0, status=status),))
    request = _request(scn, True)
    with ModelServer(tmp_path / "server.jsonl", scn=scn) as server:
        client = _client(server.url)
        send = client.converse_stream if stream else client.converse
        with pytest.raises(ClientError) as raised:
            send(**request)
        assert raised.value.response["Error"]["Code"] == code
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == status
        retried = send(**request)  # the turn's answer once the failure is over
    assert "stream" in retried if stream else retried["stopReason"] == "tool_use"


@pytest.mark.parametrize("cut", ["before", "body"])
def test_a_connection_closed_before_a_converse_answer_reaches_boto3(
    tmp_path: Path, cut: str
) -> None:
    """A connection closed before the answer (a streamed one is not cut partway for
    ``body``): boto3 raises, or with its retries gets the turn's answer."""
    scn = dataclasses.replace(scenario.DEFAULT, retries=(scenario.Retry(0, cut=cut),))
    request = _request(scn, True)
    with ModelServer(tmp_path / "server.jsonl", scn=scn) as server:
        with pytest.raises(Exception):  # noqa: B017 - botocore's connection errors
            _client(server.url).converse_stream(**request)
        answer = _client(server.url, attempts=2).converse(**request)
    assert answer["stopReason"] == "tool_use"
    first = json.loads((tmp_path / "server.jsonl").read_text(encoding="utf-8").split("\n")[0])
    assert first["failed"] and first["cut"] == "before"


def test_a_converse_stream_cut_inside_a_frame_reaches_boto3_as_an_error(tmp_path: Path) -> None:
    """A stream broken off inside a frame (of the length promised): boto3 yields the events
    before the cut, then raises; the log holds those events whole (the cut one as a prefix
    the ground truth skips)."""
    scn = dataclasses.replace(scenario.DEFAULT, retries=(scenario.Retry(0, cut="stream"),))
    events: list[dict[str, Any]] = []
    with ModelServer(tmp_path / "server.jsonl", scn=scn) as server:
        stream = _client(server.url).converse_stream(**_request(scn, True))["stream"]
        with pytest.raises(Exception):  # noqa: B017 - urllib3's broken connection, as botocore lets it through
            events.extend(stream)
    assert events and not any("messageStop" in e for e in events)
    first = json.loads((tmp_path / "server.jsonl").read_text(encoding="utf-8").split("\n")[0])
    assert first["failed"] and first["cut"] == "stream"
    logged = [
        json.loads(line[5:])
        for line in first["response_raw"].split("\n")
        if line.startswith("data:") and line.endswith("}")
    ]
    assert logged == events
