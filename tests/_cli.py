"""Test helper: the real CLI as a user runs it, in a separate process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def cli_process(
    *args: str | Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``otel-replay ARGS`` in a fresh interpreter (no colour unless ``env`` asks), output captured."""
    base = {**os.environ, "PYTHONPATH": str(SRC)}
    base.pop("FORCE_COLOR", None)
    env = {**base, **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "otel_replay.cli.main", *map(str, args)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=timeout,
    )
