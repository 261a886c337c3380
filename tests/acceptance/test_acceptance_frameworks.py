"""Acceptance: the corpus' pydantic-ai agent, unchanged, recorded by environment variables alone.

``data/thirdparty/scripts/pydantic_ai_agent.py`` (the script that made the
pydantic_ai recordings, with its fake OpenAI server) runs under
``opentelemetry-instrument`` with ``OTEL_TRACES_EXPORTER=otel_replay_file``:
pydantic-ai's own instrumentation writes the spans, otel-replay's hook adds
the processor and records the tools byte-exactly.  ``otel-replay check``
rates the run ``full``; replayed in process (pinned model over the session's
transport, stubbed tools) the same agent gives the same final answer.

Each run starts real processes (the fake server, the instrumented agent), so
they are all in the slow tier; the default tier's run of the same path is
``tests/acceptance/test_zero_code.py``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest

import otel_replay
from tests.fixtures.cli import cli_process
from tests.fixtures.data import TESTS

pytest.importorskip("pydantic_ai")
SCRIPTS = TESTS / "data" / "thirdparty" / "scripts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def fake_server(tmp_path: Path) -> Any:
    port = free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            str(SCRIPTS / "fake_server.py"),
            "--port",
            str(port),
            "--log",
            str(tmp_path / "server.jsonl"),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                    break
            except httpx2.HTTPError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.mark.slow
def test_pydantic_ai_agent_script_records_a_full_run_and_replays(
    tmp_path: Path, fake_server: str
) -> None:
    found = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert found is not None
    trace_file = tmp_path / "runs.otlp"
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "otel_replay_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_REPLAY_FILE": str(trace_file),
    }
    done = subprocess.run(
        [
            found,
            sys.executable,
            str(SCRIPTS / "pydantic_ai_agent.py"),
            "--out",
            str(tmp_path / "corpus"),
            "--base-url",
            fake_server,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    final = done.stdout.strip().splitlines()[-1].removeprefix("final: ")

    checked = cli_process("check", trace_file)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "full" in checked.stdout
    (run,) = otel_replay.load(trace_file)
    assert run.kit.verdict == "full", run.kit.missing
    tools = [s.tool for s in run.tool_steps() if s.tool is not None]
    assert [t.tool_name for t in tools] == ["lookup_order", "cancel_order"]
    assert all(t.result_payload is not None and t.result_payload.status == "exact" for t in tools)

    sys.path.insert(0, str(SCRIPTS))
    try:
        import scenario
    finally:
        sys.path.remove(str(SCRIPTS))
    import openai
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    calls: list[str] = []

    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id and return its status, items and total."""
        calls.append("lookup_order")
        return {}

    def cancel_order(order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet and issue a refund."""
        calls.append("cancel_order")
        return {}

    with otel_replay.replay(trace_file) as session:  # it answers pydantic-ai's tool calls
        client = openai.AsyncOpenAI(
            api_key="unused", http_client=httpx2.AsyncClient(transport=session.async_transport())
        )
        model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        agent = Agent(
            model,
            name="order-support",
            instructions=scenario.SYSTEM_PROMPT,
            model_settings={"temperature": 0},
            tools=[lookup_order, cancel_order],
        )
        answer = str(agent.run_sync(scenario.USER_PROMPT).output)
        assert session.check_output(answer)
    assert answer == final
    assert calls == []  # the stubs answered


@pytest.mark.slow
def test_openai_agents_script_records_a_full_run_and_replays(
    tmp_path: Path, fake_server: str
) -> None:
    pytest.importorskip("agents")
    pytest.importorskip("openinference.instrumentation.openai_agents")
    found = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert found is not None
    trace_file = tmp_path / "runs.otlp"
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "otel_replay_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_REPLAY_FILE": str(trace_file),
    }
    args = ["--instr", "openinference", "--mode", "sync", "--api", "chat"]
    done = subprocess.run(
        [
            found,
            sys.executable,
            str(SCRIPTS / "openai_agents_sdk.py"),
            *args,
            "--out",
            str(tmp_path / "corpus"),
            "--base-url",
            fake_server,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    final = done.stdout.strip().splitlines()[-1].removeprefix("final: ")

    checked = cli_process("check", trace_file)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (run,) = otel_replay.load(trace_file)
    assert run.kit.verdict == "full", run.kit.missing
    tools = [s.tool for s in run.tool_steps() if s.tool is not None]
    assert [t.tool_name for t in tools] == ["lookup_order", "cancel_order"]
    assert all(t.result_payload is not None and t.result_payload.status == "exact" for t in tools)

    sys.path.insert(0, str(SCRIPTS))
    try:
        import scenario
    finally:
        sys.path.remove(str(SCRIPTS))
    import openai
    from agents import Agent, ModelSettings, Runner, function_tool
    from agents.models.openai_chatcompletions import OpenAIChatCompletionsModel

    calls: list[str] = []

    @function_tool
    def lookup_order(order_id: str) -> dict[str, Any]:
        """Look up an order by its id and return its status, items and total."""
        calls.append("lookup_order")
        return {}

    @function_tool
    def cancel_order(order_id: str, reason: str) -> dict[str, Any]:
        """Cancel an order that has not shipped yet and issue a refund."""
        calls.append("cancel_order")
        return {}

    with otel_replay.replay(trace_file) as session:  # it answers openai-agents' tool calls
        client = openai.AsyncOpenAI(
            api_key="unused",
            http_client=httpx2.AsyncClient(transport=session.async_transport()),
            max_retries=0,
        )
        agent = Agent(
            name="order-support",
            instructions=scenario.SYSTEM_PROMPT,
            model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
            tools=[lookup_order, cancel_order],
            model_settings=ModelSettings(temperature=0),
        )
        answer = str(Runner.run_sync(agent, scenario.USER_PROMPT).final_output)
        assert session.check_output(answer)
    assert answer == final
    assert calls == []  # the stubs answered


PLAIN_PYDANTIC_AGENT = """
import sys
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=sys.argv[1], api_key="sk-fake"))
agent = Agent(model, instructions="You are a customer-support agent.")

@agent.tool_plain
def lookup_order(order_id: str) -> dict:
    \"\"\"Look up an order by its id.\"\"\"
    return {"order_id": order_id, "status": "processing"}

@agent.tool_plain
def cancel_order(order_id: str, reason: str) -> dict:
    \"\"\"Cancel an order.\"\"\"
    return {"order_id": order_id, "cancelled": True}

print("final:", agent.run_sync("Cancel ORD-5521 please.").output)
"""


@pytest.mark.slow
def test_a_pydantic_ai_agent_with_no_tracing_code(tmp_path: Path, fake_server: str) -> None:
    """Not even ``instrument=True``: the hook turns pydantic-ai's spans on."""
    found = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert found is not None
    script = tmp_path / "agent.py"
    script.write_text(PLAIN_PYDANTIC_AGENT)
    trace_file = tmp_path / "runs.otlp"
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "otel_replay_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_REPLAY_FILE": str(trace_file),
    }
    done = subprocess.run(
        [found, sys.executable, str(script), fake_server],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    (run,) = otel_replay.load(trace_file)
    assert run.kit.verdict == "full", run.kit.missing
    assert len(run.model_steps()) == 3
    tools = [s.tool for s in run.tool_steps() if s.tool is not None]
    assert [t.tool_name for t in tools] == ["lookup_order", "cancel_order"]
    assert all(
        t.arguments_payload is not None and t.arguments_payload.status == "exact" for t in tools
    )


@pytest.mark.slow
def test_openinference_openai_loop_script_records_a_model_only_run_that_replays(
    tmp_path: Path, fake_server: str
) -> None:
    """Client-only: the hand-written loop's tools are not traced, so the run is model-only."""
    pytest.importorskip("openinference.instrumentation.openai")
    from tests.unit.replay.test_serve import serving

    found = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    assert found is not None
    trace_file = tmp_path / "runs.otlp"
    env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "otel_replay_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_REPLAY_FILE": str(trace_file),
    }
    script = str(SCRIPTS / "openai_loop.py")
    done = subprocess.run(
        [
            found,
            sys.executable,
            script,
            "--instr",
            "openinference",
            "--mode",
            "sync",
            "--out",
            str(tmp_path / "corpus"),
            "--base-url",
            fake_server,
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    final = done.stdout.strip().splitlines()[-1]
    assert final.startswith("final:")
    (run,) = otel_replay.load(trace_file)
    assert run.kit.verdict == "model-only", run.kit.missing
    models = run.model_steps()
    assert len(models) == 3
    # Normalized on export: the OpenInference spans carry GenAI semconv in the file itself.
    assert all("gen_ai.input.messages" in s.attributes for s in models)

    # Replayed through the pinned model (the recording served over HTTP), same script, no tracing.
    with serving(trace_file) as url:
        again = subprocess.run(
            [
                sys.executable,
                script,
                "--instr",
                "none",
                "--mode",
                "sync",
                "--out",
                str(tmp_path / "again"),
                "--base-url",
                url + "/v1",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip().splitlines()[-1] == final
