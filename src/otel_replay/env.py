"""Settings read from the environment, one way everywhere."""

from __future__ import annotations

import os
from typing import Final

#: What turns a flag on (case-insensitive); anything else, or unset, is off.
TRUE: Final = ("1", "true", "yes", "on")


def flag(name: str) -> bool:
    """Whether the environment variable ``name`` turns its flag on."""
    return os.environ.get(name, "").strip().lower() in TRUE
