"""An agent with no tracing code, recorded by environment variables alone under opentelemetry-instrument."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import otel_replay

AGENT = textwrap.dedent(
    """
    import otel_replay

    @otel_replay.tool
    def lookup_order(query: str) -> list:
        return [{"order_id": "4421", "query": query}]

    with otel_replay.agent_run("zero-code", input="where is my order?") as run:
        orders = lookup_order("my order")
        run.record(f"Order #{orders[0]['order_id']}")
    print("done")
    """
)


def record_instrumented(tmp_path: Path, **env: str) -> Path:
    """Run AGENT under opentelemetry-instrument with only environment variables; the trace file."""
    found = shutil.which("opentelemetry-instrument", path=os.path.dirname(sys.executable))
    if found is None:
        pytest.fail("opentelemetry-instrument is not installed (the test extra installs it)")
    script = tmp_path / "agent.py"
    script.write_text(AGENT)
    trace_file = tmp_path / "runs.otlp"
    full_env = {
        **os.environ,
        "OTEL_TRACES_EXPORTER": "otel_replay_file",
        "OTEL_METRICS_EXPORTER": "none",
        "OTEL_LOGS_EXPORTER": "none",
        "OTEL_REPLAY_FILE": str(trace_file),
        **env,
    }
    done = subprocess.run(
        [found, sys.executable, str(script)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    return trace_file


def test_env_vars_alone_record_a_replayable_run(tmp_path: Path) -> None:
    trace_file = record_instrumented(
        tmp_path, OTEL_REPLAY_FLAGS="beta_lookup=on", OTEL_SERVICE_NAME="zero-code-agent"
    )
    (run,) = otel_replay.load(trace_file)
    assert run.resource["service.name"] == "zero-code-agent"
    assert run.fingerprint["flags"] == '{"beta_lookup": "on"}'  # the processor was installed
    assert any(p.startswith("otel-replay==") for p in run.fingerprint["packages"])
    (tool,) = run.tool_steps()
    assert tool.tool is not None and tool.tool.result == [{"order_id": "4421", "query": "my order"}]

    # Replayed in a fresh process with the database emptied: the stub answers.
    changed = AGENT.replace('return [{"order_id": "4421", "query": query}]', "return []").replace(
        'print("done")', "print(session.report().matched, orders[0]['order_id'])"
    )
    replayer = tmp_path / "replay.py"
    replayer.write_text(
        "import otel_replay, sys\nwith otel_replay.replay(sys.argv[1]) as session:\n"
        + textwrap.indent(changed, "    ")
    )
    out = subprocess.run(
        [sys.executable, str(replayer), str(trace_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "4421"]


@pytest.mark.slow  # a real process under opentelemetry-instrument: the slow tier
def test_processor_stays_out_unless_asked(tmp_path: Path) -> None:
    trace_file = record_instrumented(tmp_path, OTEL_REPLAY_PROCESSOR="false")
    (run,) = otel_replay.load(trace_file)
    assert "packages" not in run.fingerprint
