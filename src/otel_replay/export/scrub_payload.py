"""The byte-exact payloads we recorded, scrubbed whole from a stored span.

A payload (a value with its ``otel_replay.sha256.`` digest, its type, its exact
bytes inline or in a blob, its size) read back from a file or a backend is
scrubbed with its companions kept true to it, as capture writes a payload it
scrubbed (see :mod:`otel_replay.export.scrub`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from .. import attributes as A
from ..bytes_text import from_base64, to_base64
from ..payload import codec as payload
from ..redaction import PLACEHOLDER, Redactor

#: A change that takes its key off (a blob reference to a payload hidden whole).
REMOVED: Final = object()


def payload_changes(
    attrs: Mapping[str, Any],
    key: str,
    r: Redactor,
    changes: dict[str, Any],
    moved: Mapping[str, tuple[str, int]],
) -> bool:
    """Hide the secrets of the byte-exact payload recorded under ``key`` (its display
    value and its exact bytes, inline or in a blob), keeping its companions true to it:
    whatever changed, the digest is of the bytes kept and the size theirs, as capture
    writes a payload it scrubbed; its key goes in ``otel_replay.redacted``.  Whether
    anything changed.

    A payload under a secret-named key is hidden whole: it becomes the text
    ``[REDACTED]``.
    """
    display = attrs.get(key)
    raw = attrs.get(A.BYTES + key)
    ref = attrs.get(A.REF + key)
    before = len(changes)
    exact: bytes | None = None  # the payload's exact bytes, where they changed
    size: int | None = None
    if r.is_secret_key(key):
        data = PLACEHOLDER.encode()
        changes[key] = PLACEHOLDER
        if A.TYPE + key in attrs:
            changes[A.TYPE + key] = payload.STR
        if raw is not None:
            changes[A.BYTES + key] = data if type(raw) is not str else to_base64(data)
        if ref is not None:
            changes[A.REF + key] = REMOVED
        exact = data
    else:
        if key in attrs:
            clean = scrubbed_value(display, key, r)
            if clean is not display and clean != display:
                changes[key] = clean
        if type(raw) is bytes or type(raw) is bytearray:
            exact = r.data(bytes(raw))
            if exact != raw:
                changes[A.BYTES + key] = exact
        elif type(raw) is str:  # sent as base64 text to a backend that stores no bytes
            decoded = from_base64(raw)
            if decoded is None:
                clean = r.text(raw)
                if clean is not raw:
                    changes[A.BYTES + key] = clean
            else:
                exact = r.data(decoded)
                if exact != decoded:
                    changes[A.BYTES + key] = to_base64(exact)
        elif type(ref) is str:
            if ref in moved:  # its blob held a secret: it was scrubbed into another
                changes[A.REF + key], size = moved[ref]
        elif key in changes:  # the display is the payload (as the reader reads it)
            new = changes[key]
            text = new if type(new) is str else payload.canonical(new)
            exact = text.encode("utf-8", "surrogatepass")
    if len(changes) == before:
        return False
    if type(attrs.get(A.SHA256 + key)) is str:
        if exact is not None:
            changes[A.SHA256 + key], size = payload.sha256(exact), len(exact)
        elif size is not None:  # a blob's name is its digest
            changes[A.SHA256 + key] = changes[A.REF + key].removeprefix("sha256:")
    if size is not None and A.SIZE + key in attrs:
        changes[A.SIZE + key] = size
    return True


def scrubbed_value(value: Any, key: str, r: Redactor) -> Any:
    t = type(value)
    if t is str:
        return r.text(value)
    if t is bytes:
        return r.data(value)
    if t is tuple or t is list or t is dict:
        return r.scrub(value, key, [])
    return value
