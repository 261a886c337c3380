"""Bounds on what one input may make a reader hold, or wait for: inputs may come from anyone.

Each bound is a named default with an ``OTEL_REPLAY_*`` environment variable
to change it, read each time a read starts (a value that is not a positive
number keeps the default).  Error messages name the bound with
:meth:`Limit.text`, e.g. "the 256 MiB limit (OTEL_REPLAY_MAX_RECORD_BYTES)".
"""

from __future__ import annotations

import dataclasses
import logging
import os
from typing import Final

logger = logging.getLogger("otel_replay")

#: Environment values already warned about: once is enough.
_warned: set[tuple[str, str]] = set()

KiB: Final = 1 << 10
MiB: Final = 1 << 20
GiB: Final = 1 << 30


@dataclasses.dataclass(frozen=True)
class Limit:
    """A bound with a default, its environment variable, and a unit for messages."""

    env: str
    default: float
    #: "bytes" or "s".
    unit: str = "bytes"

    def get(self) -> float:
        """The value in force: the environment's when it is a positive number, else the default."""
        raw = os.environ.get(self.env)
        if raw is None or not raw.strip():
            return self.default
        try:
            value = float(raw)
        except ValueError:
            value = 0
        if value > 0:
            return value
        if (self.env, raw) not in _warned:
            _warned.add((self.env, raw))
            logger.warning(
                "otel-replay: %s=%r is not a positive number; using %s", self.env, raw, self.default
            )
        return self.default

    def bytes(self) -> int:
        """:meth:`get` as a whole number of bytes."""
        return max(1, int(self.get()))

    def text(self) -> str:
        """``the 256 MiB limit (OTEL_REPLAY_MAX_RECORD_BYTES)``, with the value in force."""
        value = self.get()
        shown = size_text(int(value)) if self.unit == "bytes" else f"{value:g} {self.unit}"
        return f"the {shown} limit ({self.env})"


def size_text(n: int) -> str:
    """``n`` bytes in the largest binary unit that divides it: ``256 MiB``, ``1536 KiB``."""
    for unit, name in ((GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB")):
        if n >= unit and n % unit == 0:
            return f"{n // unit} {name}"
    return f"{n} bytes"


#: The most a reader holds of one record, JSON line or JSON document, decompressed:
#: a zstd record, a length prefix or a gzip line that goes past it is reported
#: (and passed over where the framing allows), not allocated.
MAX_RECORD_BYTES: Final = Limit("OTEL_REPLAY_MAX_RECORD_BYTES", 256 * MiB)
#: Seconds a URL's answer may take, from connecting to its last byte.
URL_TIMEOUT: Final = Limit("OTEL_REPLAY_URL_TIMEOUT", 60.0, unit="s")
#: The most a URL's answer may hold (kept in a temporary file while it is read).
MAX_URL_BYTES: Final = Limit("OTEL_REPLAY_MAX_URL_BYTES", 1 * GiB)
#: How deep attribute values (OTLP ``AnyValue`` lists and maps) may nest in
#: JSON input.  Each level costs Python stack; no tracing SDK writes more
#: than a few, and protobuf parsers stop at 100 nested messages (about 48
#: levels), so protobuf input never comes near it.
MAX_NESTING: Final = 64
