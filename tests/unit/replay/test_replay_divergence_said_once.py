"""``replay --agent`` of an SDK agent that leaves the recording says the divergence once.

A newcomer's OpenAI-SDK agent asked another question: the report named the
divergence, then "the agent raised ConflictError('Error code: 409 - replay
diverged at step 1 ...')" printed it all again, on one line, its line ends
escaped.  The SDK's error for the replay's HTTP 409 is named by its type, the
report above being its text; any other error the agent raises is still shown
whole.  Drawn over questions and tool-step overrides, both providers' SDKs.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from otel_replay.cli.main import cli
from tests.fixtures.weather_agent import PROVIDERS, import_agent, record, write_agent

_LETTERS = "abcXYZ 019 .,:;'\"\\\n\t-_é中😀?"


def _draws(seed: int) -> list[list[str]]:
    """Ways to leave the recording: another question, a fork of a tool step (no live
    model, so the next model request is not in the recording)."""
    draw = random.Random(seed)
    out = []
    for _ in range(3):
        text = "".join(draw.choice(_LETTERS) for _ in range(draw.randrange(1, 30)))
        out.append(["--question", text])
    for step in (2, 4):
        value = {"city": draw.choice(["Oslo", "Lima", "中"]), "n": draw.randrange(-9, 99)}
        out.append(["--override", f"{step}={json.dumps(value)}"])
    return out


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_divergence_is_said_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, provider: str
) -> None:
    module = import_agent(write_agent(tmp_path, provider, name=f"diverging_{provider}"))
    record(tmp_path / "runs.otlp", module, provider)
    monkeypatch.syspath_prepend(str(tmp_path))
    agent = f"diverging_{provider}:run_agent"
    for how in _draws(seed=len(provider)):
        args = ["replay", str(tmp_path / "runs.otlp"), "--agent", agent, *how]
        done = CliRunner().invoke(cli, args)
        assert done.exit_code == 1, done.output
        assert done.output.count("replay diverged at step") == 1, done.output
        assert "the agent raised ConflictError: the replay's answer to the diverged request" in (
            done.output
        )
        doc = json.loads(CliRunner().invoke(cli, [*args, "--json"]).output)
        assert "replay diverged at step" in doc["error"]  # --json keeps the error whole
