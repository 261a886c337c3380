"""Whether a span's class reads its fields as the SDK's ``ReadableSpan`` does.

Each of the SDK's properties is a Python call, its attributes' read-only view
costs one for every key read, and its events and links are copied into a tuple
at each read: the export path reads the fields themselves where the class
keeps the SDK's properties of the names it reads (a class of its own that
overrides one is read through its properties).
"""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["reads_as_sdk"]

#: Per class of span and tuple of names, whether the class keeps the SDK's properties of
#: those names.  Bounded: cleared when full.
_known: dict[tuple[type, tuple[str, ...]], bool] = {}


def reads_as_sdk(cls: type, names: tuple[str, ...]) -> bool:
    """Whether ``cls`` keeps the SDK ``ReadableSpan``'s attributes of ``names``."""
    key = (cls, names)
    sdk = _known.get(key)
    if sdk is None:
        sdk = all(getattr(cls, n, None) is getattr(ReadableSpan, n) for n in names)
        if len(_known) > 64:
            _known.clear()
        _known[key] = sdk
    return sdk
