"""MCP tools: read from the ``mcp`` package's own spans, recorded, and replayed.

``tests/fixtures/mcp_agent.py`` runs an agent whose tools are MCP tools (the ``mcp``
package's server over Streamable HTTP on 127.0.0.1, its ``Client``, the
OpenAI SDK with a scripted model) in a process of its own, traced.  The run
rebuilds with one tool step per MCP call, and the agent, unchanged, replays
it through ``otel-replay serve --mcp`` (the model and the MCP server both
served from the recording) and in-process, where the MCP integration answers
the calls even though the server now answers differently.  The agent's own
replay through serve, and the reading of a trace with the ``mcp`` package's
spans alone, run in the slow tier (each starts more processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from tests.fixtures.data import ROOT

# Told without importing it: the worker that runs these tests imports it (the other one
# collects this module too, and has no use for it).
pytestmark = pytest.mark.skipif(importlib.util.find_spec("mcp") is None, reason="needs mcp")

#: Run as a module: its folder holds helpers named like standard modules (http).
AGENT = ("-m", "tests.fixtures.mcp_agent")
ANSWER = '{"order_id": "ORD-5521", "status": "en préparation", "total": "24,98 €"}'
ANSWER += " / error: the carrier is not answering"


def run(*args: str | Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)]),
            **(env or {}),
        },
    )


def record(path: Path, *flags: str) -> None:
    done = run(*AGENT, "record", path, *flags)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "run.otlp"
    record(path)
    return path


def the_run(path: Path) -> otel_replay.Run:
    (run_,) = [r for r in otel_replay.load(path) if r.model_steps()]
    return run_


@pytest.mark.slow
def test_each_mcp_call_is_one_tool_step_read_from_the_mcp_spans(tmp_path: Path) -> None:
    path = tmp_path / "untouched.otlp"
    record(path, "--no-capture")  # only the mcp package's own spans, no capture of ours
    run_ = the_run(path)
    tools = run_.tool_steps()
    assert [t.tool.tool_name for t in tools if t.tool] == ["lookup_order", "track_shipment"]
    # The client's span and the server's span inside it are one call.
    carried = [s for s in run_.steps if s.kind == "other" and s.duplicate_of]
    assert {s.attributes.get("mcp.method.name") for s in carried} == {"tools/call"}
    assert [t.tool.arguments for t in tools if t.tool] == [{"order_id": "ORD-5521"}] * 2
    # The conventions keep no content: the results are what the model was sent.
    assert (
        tools[1].tool is not None and tools[1].tool.result == "error: the carrier is not answering"
    )


def test_the_capture_records_each_call_byte_exactly(recorded: Path) -> None:
    run_ = the_run(recorded)
    assert run_.kit.verdict == "full"
    lookup, track = [t.tool for t in run_.tool_steps()]
    assert lookup is not None and track is not None
    assert lookup.result_payload is not None and lookup.result_payload.status == "exact"
    assert lookup.result["structuredContent"]["total"] == "24,98 €"
    assert track.result["isError"] is True


@contextlib.contextmanager
def serve_mcp(recorded: Path, *options: str) -> Iterator[str]:
    """``otel-replay serve RECORDED --mcp OPTIONS`` in its own process: its base URL."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "otel_replay.cli.main", "serve", str(recorded), "--mcp", *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    try:
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
def served(recorded: Path) -> Iterator[str]:
    with serve_mcp(recorded) as url:
        yield url


@pytest.mark.slow
def test_the_agent_replays_through_serve_mcp(served: str) -> None:
    done = run(*AGENT, "replay", served, env={"OTEL_SDK_DISABLED": "true"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER


def test_a_real_mcp_client_sees_the_recorded_tools_and_no_other_call(served: str) -> None:
    from mcp import Client
    from mcp.shared.exceptions import MCPError

    async def talk() -> tuple[list[str], Any, str]:
        async with Client(served + "/mcp") as client:
            listed = [t.name for t in (await client.list_tools()).tools]
            answered = await client.call_tool("lookup_order", {"order_id": "ORD-5521"})
            try:
                await client.call_tool("lookup_order", {"order_id": "ORD-0000"})
            except MCPError as exc:
                refused = exc.error.message
            else:
                refused = ""
        return listed, answered, refused

    listed, answered, refused = asyncio.run(talk())
    assert listed == ["lookup_order", "track_shipment"]
    assert json.loads(answered.content[0].text)["status"] == "en préparation"
    assert answered.structured_content == {
        "order_id": "ORD-5521",
        "status": "en préparation",
        "total": "24,98 €",
    }
    assert "step" in refused and "ORD-0000" in refused


#: An MCP client's first request, and what it accepts.
HELLO = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}
ACCEPT = {"accept": "application/json, text/event-stream"}


def test_the_mcp_route_refuses_web_pages_as_the_model_routes_do(served: str) -> None:
    import httpx

    port = served.rsplit(":", 1)[1]
    hello, accept = HELLO, ACCEPT
    with httpx.Client(timeout=10) as client:

        def post(**headers: str) -> httpx.Response:
            return client.post(served + "/mcp", json=hello, headers={**accept, **headers})

        assert post().status_code == 200
        assert post(host=f"rebound.example:{port}").status_code == 421
        assert post(origin="http://rebound.example").status_code == 403
        simple = client.post(
            served + "/mcp",
            content=json.dumps(hello),
            headers={**accept, "content-type": "text/plain"},
        )
        assert simple.status_code == 415


def test_in_process_the_mcp_calls_are_answered_from_the_recording(recorded: Path) -> None:
    """The MCP server now answers otherwise; the session answers as it did."""
    from tests.fixtures import mcp_agent as _mcp_agent

    server = _mcp_agent.tool_server(status="livrée")  # not what was recorded
    changed = server.streamable_http_app(stateless_http=True, json_response=True)
    with _mcp_agent.serving(changed) as url:
        with otel_replay.replay(the_run(recorded)) as session:
            import openai

            model = openai.AsyncOpenAI(api_key="unused", base_url=session.base_url + "/v1")
            answer = asyncio.run(_mcp_agent.run_agent(model, url + "/mcp"))
    assert answer == ANSWER
    report = session.report()
    assert report.matched, str(report)
    assert [how for _, kind, how in report.replayed if kind == "tool"] == ["stub", "stub"]


def test_allow_host_lets_the_named_host_reach_the_mcp_route_too(recorded: Path) -> None:
    """``serve --mcp --allow-host NAME``: the MCP route takes NAME as the model routes do."""
    import httpx

    with serve_mcp(recorded, "--allow-host", "Replay.Internal") as url:
        port = url.rsplit(":", 1)[1]
        with httpx.Client(timeout=10) as client:

            def post(host: str, **headers: str) -> httpx.Response:
                return client.post(
                    url + "/mcp", json=HELLO, headers={**ACCEPT, "host": host, **headers}
                )

            assert post(f"replay.internal:{port}").status_code == 200
            assert post("replay.internal").status_code == 200
            assert (
                post(f"replay.internal:{port}", origin=f"http://replay.internal:{port}").status_code
                == 200
            )
            assert post(f"other.internal:{port}").status_code == 421
