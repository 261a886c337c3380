"""Settings read from the environment, one way everywhere."""

from __future__ import annotations

import logging
import os
from typing import Final

#: What turns a flag on (case-insensitive); anything else, or unset, is off.
TRUE: Final = ("1", "true", "yes", "on")


def flag(name: str) -> bool:
    """Whether the environment variable ``name`` turns its flag on."""
    return os.environ.get(name, "").strip().lower() in TRUE


def integer(name: str, default: int) -> int:
    """The environment variable ``name`` as an integer; ``default`` when unset or not one
    (said in a warning)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        logging.getLogger("otel_replay").warning(
            "otel-replay: %s=%r is not an integer; using %s", name, raw, default
        )
        return default
