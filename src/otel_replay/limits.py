"""Bounds on what one input may make a reader hold, or wait for: inputs may come from anyone.

Each bound is an ``OTEL_REPLAY_*`` environment variable of
:data:`otel_replay.settings.VARIABLES`, with its default there, read each
time a read starts (a value that is not a positive number keeps the
default).  Error messages name the bound with
:meth:`Limit.text`, e.g. "the 256 MiB limit (OTEL_REPLAY_MAX_RECORD_BYTES)".
"""

from __future__ import annotations

import dataclasses
from typing import Final

from . import settings
from .settings import GiB, KiB, MiB, size_text

__all__ = [
    "MAX_NESTING",
    "MAX_RECORD_BYTES",
    "MAX_URL_BYTES",
    "URL_TIMEOUT",
    "GiB",
    "KiB",
    "Limit",
    "MiB",
    "size_text",
]


@dataclasses.dataclass(frozen=True)
class Limit:
    """A bound read from its environment variable, with a unit for messages."""

    env: str
    #: "bytes" or "s".
    unit: str = "bytes"

    @property
    def default(self) -> float:
        """The value when the variable is unset (or not a positive number)."""
        value: float = settings.BY_NAME[self.env].default
        return value

    def get(self) -> float:
        """The value in force: the environment's when it is a positive number, else the default."""
        value: float = settings.current().value(self.env)
        return value

    def bytes(self) -> int:
        """:meth:`get` as a whole number of bytes."""
        return max(1, int(self.get()))

    def text(self) -> str:
        """``the 256 MiB limit (OTEL_REPLAY_MAX_RECORD_BYTES)``, with the value in force."""
        value = self.get()
        shown = size_text(int(value)) if self.unit == "bytes" else f"{value:g} {self.unit}"
        return f"the {shown} limit ({self.env})"


#: The most a reader holds of one record, JSON line or JSON document, decompressed:
#: a zstd record, a length prefix or a gzip line that goes past it is reported
#: (and passed over where the framing allows), not allocated.
MAX_RECORD_BYTES: Final = Limit(settings.OTEL_REPLAY_MAX_RECORD_BYTES)
#: Seconds a URL's answer may take, from connecting to its last byte.
URL_TIMEOUT: Final = Limit(settings.OTEL_REPLAY_URL_TIMEOUT, unit="s")
#: The most a URL's answer may hold (kept in a temporary file while it is read).
MAX_URL_BYTES: Final = Limit(settings.OTEL_REPLAY_MAX_URL_BYTES)
#: How deep attribute values (OTLP ``AnyValue`` lists and maps) may nest in
#: JSON input.  Each level costs Python stack; no tracing SDK writes more
#: than a few, and protobuf parsers stop at 100 nested messages (about 48
#: levels), so protobuf input never comes near it.
MAX_NESTING: Final = 64

#: A payload's containers nested deeper than this are not plain JSON: their value is kept
#: another way.
PLAIN_DEPTH: Final = 200
