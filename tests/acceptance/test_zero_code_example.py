"""examples/zero_code: the commands of its README, run as written, record and replay the agent."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import otel_replay
from tests.fixtures.data import ROOT

EXAMPLE = ROOT / "examples" / "zero_code"
README = (EXAMPLE / "README.md").read_text()

# The README's environment, variable for variable (checked against its text below).
DOCUMENTED_ENV = {
    "OTEL_TRACES_EXPORTER": "otel_replay_file",
    "OTEL_REPLAY_FILE": "out/zero_code.otlp",
    "OTEL_REPLAY_FLAGS": "lookup_v2=off",
    "OTEL_SERVICE_NAME": "order-status",
    "OTEL_METRICS_EXPORTER": "none",
    "OTEL_LOGS_EXPORTER": "none",
}
RECORD = "opentelemetry-instrument python examples/zero_code/agent.py"
AFTER = [
    "otel-replay show out/zero_code.otlp",
    "otel-replay check out/zero_code.otlp",
    "python examples/zero_code/replay.py out/zero_code.otlp",
]


def tool(name: str) -> str:
    """A console script of the test environment (the interpreter's own bin directory)."""
    found = shutil.which(name, path=os.path.dirname(sys.executable))
    if found is None:
        pytest.fail(f"{name} is not installed (the test extra installs it)")
    return found


def run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    words = command.split()
    # The commands name the installed tools; run the ones of this environment.
    exe = {
        "python": sys.executable,
        "otel-replay": tool("otel-replay"),
        "opentelemetry-instrument": tool("opentelemetry-instrument"),
    }
    argv = [exe.get(w, w) for w in words]
    argv = [str(ROOT / w) if w.startswith("examples/") else w for w in argv]
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_readme_documents_these_commands() -> None:
    for name, value in DOCUMENTED_ENV.items():
        assert f"{name}={value}" in README
    for command in [RECORD, *AFTER]:
        assert command in README


def test_the_agent_does_not_know_otel_replay() -> None:
    assert "otel_replay" not in (EXAMPLE / "agent.py").read_text()


@pytest.mark.slow  # a real process under opentelemetry-instrument: the slow tier
def test_record_show_check_replay(tmp_path: Path) -> None:
    env = {**os.environ, **DOCUMENTED_ENV}
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in [str(ROOT / "src"), env.get("PYTHONPATH", "")] if p
    )
    recorded = run(RECORD, tmp_path, env)
    assert recorded.returncode == 0, recorded.stderr
    assert recorded.stdout.strip() == "Your Widget Mini is processing."

    trace_file = tmp_path / DOCUMENTED_ENV["OTEL_REPLAY_FILE"]
    (rec,) = otel_replay.load(trace_file)
    assert rec.resource["service.name"] == "order-status"
    assert rec.fingerprint["flags"] == '{"lookup_v2": "off"}'  # the processor came in by env var
    assert [s.kind for s in rec.steps] == ["agent", "model", "tool", "model"]

    show, check, replayed = (run(c, tmp_path, env) for c in AFTER)
    assert show.returncode == 0, show.stderr
    assert "lookup_order" in show.stdout and "full · replays · ok" in show.stdout
    assert check.returncode == 0, check.stdout + check.stderr
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert replayed.stdout.splitlines()[0] == "Your Widget Mini is processing."
    assert "MATCHED" in replayed.stdout
