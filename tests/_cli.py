"""Test helper: the real CLI as a user runs it, in a separate process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"


def python_process(
    *args: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """A fresh interpreter given ``args`` (``-m MODULE ...``), output captured; ``env`` is
    its whole environment (this process's when None)."""
    return subprocess.run(
        [sys.executable, *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def cli_process(
    *args: str | Path, timeout: float = 60, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``otel-replay ARGS`` in a fresh interpreter (no colour unless ``env`` asks), output captured."""
    base = {**os.environ, "PYTHONPATH": str(SRC)}
    base.pop("FORCE_COLOR", None)
    env = {**base, **(env or {})}
    return python_process("-m", "otel_replay.cli.main", *args, env=env, timeout=timeout)
