"""The environment fingerprint of a run: commit, packages, flags, seed.

Computed once per process (git is asked at most once, with a timeout) and
set on each run root span.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import subprocess
import sys
from collections.abc import Iterable, Mapping
from typing import Any

from .. import attributes as A
from .. import settings
from ..redaction import Redactor, redactor

#: Packages whose versions change what an agent does; others can be added.
KEY_PACKAGES = (
    "otel-replay",
    "opentelemetry-sdk",
    "opentelemetry-api",
    "openai",
    "anthropic",
    "pydantic-ai-slim",
    "pydantic",
    "httpx",
    "langchain-core",
    "openai-agents",
    "opentelemetry-instrumentation-openai-v2",
    "openinference-instrumentation-openai",
    "opentelemetry-instrumentation-openai",
)


def _git(args: list[str], cwd: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=2, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _code_dir() -> str:
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    return os.path.dirname(os.path.abspath(path)) if path else os.getcwd()


@functools.lru_cache(maxsize=1)
def commit() -> tuple[str | None, bool | None]:
    """(commit, dirty) from ``OTEL_REPLAY_COMMIT``/``OTEL_REPLAY_DIRTY`` or git."""
    env = settings.current()
    if env.commit:
        return env.commit, env.dirty
    cwd = _code_dir()
    head = _git(["rev-parse", "HEAD"], cwd)
    if head is None:
        return None, None
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return head, None if status is None else bool(status)


@functools.lru_cache(maxsize=8)
def packages(extra: tuple[str, ...] = ()) -> tuple[str, ...]:
    # Imported here: importlib.metadata costs about as much as the OTel SDK to import.
    from importlib import metadata

    found = []
    for name in dict.fromkeys((*KEY_PACKAGES, *extra)):
        try:
            found.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return tuple(found)


def parse_flags(raw: str) -> dict[str, Any]:
    """``OTEL_REPLAY_FLAGS``: a JSON object, or ``a=1,b,c=off``."""
    raw = raw.strip()
    if raw.startswith("{"):
        try:
            value = json.loads(raw)
            if isinstance(value, dict):
                return value
        except ValueError:
            pass
    out: dict[str, Any] = {}
    for item in raw.split(","):
        key, sep, val = item.strip().partition("=")
        if key:
            out[key] = val if sep else True
    return out


def fingerprint(
    flags: Mapping[str, Any] | None = None,
    seed: int | None = None,
    extra_packages: Iterable[str] = (),
    hide: Redactor | None = None,
) -> dict[str, Any]:
    """Span attributes describing the environment of this process.

    ``hide``: the redactor that hides secrets in the flags (None: the process's).
    """
    attrs: dict[str, Any] = {
        A.FP_PYTHON: f"{platform.python_implementation()} {platform.python_version()}",
        A.FP_PACKAGES: list(packages(tuple(extra_packages))),
    }
    head, dirty = commit()
    if head is not None:
        attrs[A.FP_COMMIT] = head
    if dirty is not None:
        attrs[A.FP_DIRTY] = dirty
    env = settings.current()
    all_flags = parse_flags(env.flags or "")
    all_flags.update(flags or {})
    if all_flags:
        # A flag may carry a secret (db_password=...): hidden as any recorded value.
        clean = (hide or redactor()).scrub(all_flags, A.FP_FLAGS, [])
        attrs[A.FP_FLAGS] = json.dumps(clean, sort_keys=True, default=str)
    if seed is None:
        seed = env.seed
    if seed is not None:
        attrs[A.FP_SEED] = seed
    return attrs
