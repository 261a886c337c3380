"""Bytes attribute values as base64 text, for backends that cannot store bytes.

Arize Phoenix drops a whole span that carries a ``bytes`` attribute value.
Spans sent to such a backend carry base64 text instead (``otel-replay export
--base64-bytes``, ``ReplaySpanProcessor(base64_bytes=True)``); readers take
``otel_replay.bytes.*`` as either, so byte-exact payloads still verify
against their digests.
"""

from __future__ import annotations

from typing import Any


def as_base64(value: Any) -> Any:
    """``value`` with every bytes value in it (lists and maps too) as base64 text."""
    if isinstance(value, (bytes, bytearray)):
        return to_base64(value)
    if isinstance(value, (list, tuple)):
        return [as_base64(v) for v in value]
    if isinstance(value, dict):
        return {k: as_base64(v) for k, v in value.items()}
    return value


def to_base64(data: bytes | bytearray) -> str:
    """``data`` as standard base64 text."""
    import binascii  # an extension module, loaded when first needed (not with the capture API)

    return binascii.b2a_base64(data, newline=False).decode("ascii")


def from_base64(text: str) -> bytes | None:
    """The bytes ``text`` spells in standard base64; None when it is not base64."""
    import base64  # readers only: capture encodes with binascii

    try:
        return base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error is one
        return None
