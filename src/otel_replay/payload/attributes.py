"""How a byte-exact payload is laid out on span attributes, and read back.

One content attribute ``A`` keeps its semconv display form (the text a backend
shows); its companions (see :mod:`otel_replay.attributes`) make it exact:
the digest always, the type tag unless it is plain text, and the exact bytes
only when ``A`` cannot carry them (non-text values, a display that would be
truncated by the SDK's attribute length limit, or a payload too large to
inline, whose display is then a preview).  Bytes attributes are exported as
OTLP ``bytes_value`` and are never truncated by the SDK.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from .. import attributes as A
from .. import settings
from ..bytes_text import from_base64
from ..trusted_types import TypeResolver
from . import codec as payload
from .blobs import BlobUnavailable

#: Payloads above this size are kept out of the display attribute (preview only);
#: the file exporter moves their bytes into the blob store beside the trace file.
DEFAULT_MAX_INLINE_BYTES: Final = settings.DEFAULT_OTEL_REPLAY_MAX_INLINE_BYTES
PREVIEW_CHARS: Final = 1024

Status = Literal["exact", "unverified", "mismatch", "missing"]
#: Resolves a blob reference: the bytes, None when absent, or :class:`BlobUnavailable`
#: (with the reason) when the blob is there but refused.
BlobReader = Callable[[str], "bytes | None"]


def to_attributes(
    key: str,
    value: Any,
    *,
    length_limit: int | None = None,
    max_inline: int = DEFAULT_MAX_INLINE_BYTES,
    encoded: payload.Encoded | None = None,
) -> dict[str, Any]:
    """Attributes recording ``value`` under ``key`` byte-exactly."""
    enc = encoded if encoded is not None else payload.encode(value)
    kind, data = enc.type, enc.data
    need_bytes = False
    if kind == payload.STR:
        display: str = value
    elif kind == payload.JSON:
        display = data.decode("utf-8", "surrogatepass")
    else:
        display = payload.display_text(value)
        need_bytes = True
    if len(data) > max_inline:
        display = display[:PREVIEW_CHARS] + f"… [{len(data)} bytes, preview]"
        need_bytes = True
    elif length_limit is not None and len(display) > length_limit:
        need_bytes = True
    if not display.isascii():  # (ASCII text, most of it, needs no encoding to tell)
        try:
            display.encode("utf-8")
        except UnicodeEncodeError:  # lone surrogates: protobuf refuses them in strings
            display = display.encode("utf-8", "replace").decode("utf-8")
            need_bytes = True
    attrs: dict[str, Any] = {key: display, A.SHA256 + key: payload.sha256(data)}
    if kind != payload.STR:
        attrs[A.TYPE + key] = kind
    if need_bytes:
        attrs[A.BYTES + key] = data
    return attrs


class Payload:
    """A recorded value and how far it can be trusted.

    ``status`` is ``exact`` (digest verified), ``unverified`` (no digest was
    recorded, as with third-party instrumentations), ``mismatch`` (the bytes do
    not match the digest: truncated or altered on the way) or ``missing`` (a
    blob the span refers to is not there, or is refused: ``reason`` says why).

    A payload read from a span keeps the attribute's text rather than a copy of
    it as bytes, and checks its digest the first time its status, reason or
    value is asked for: loading many runs costs neither until their content is
    used.
    """

    __slots__ = ("_data", "_key", "_reason", "_status", "_text", "sha256", "type")

    def __init__(
        self,
        type: str,
        data: bytes | None,
        sha256: str | None,
        status: Status,
        reason: str = "",
    ) -> None:
        self.type = type
        self.sha256 = sha256
        self._data = data
        self._text: str | None = None
        self._status: Status | None = status
        self._reason = reason
        self._key = ""

    @classmethod
    def read(
        cls, type: str, data: bytes | None, text: str | None, sha256: str | None, key: str
    ) -> Payload:
        """A payload of ``data`` (or, when None, of ``text`` UTF-8 encoded) recorded under
        ``key``: unverified without a digest, else checked against it when first asked."""
        p = cls(type, data, sha256, "unverified")
        p._text = text if data is None else None
        if sha256 is not None:
            p._status, p._key = None, key
        return p

    @property
    def data(self) -> bytes | None:
        """The exact bytes as recorded (None when missing)."""
        if self._data is None and self._text is not None:
            # Made on each ask, not kept: a run's payloads would otherwise hold a copy
            # of every text attribute it was read from.
            return self._text.encode("utf-8", "surrogatepass")
        return self._data

    @property
    def text(self) -> str | None:
        """The bytes as text, where they were read as text (no copy made)."""
        return self._text

    @property
    def status(self) -> Status:
        if self._status is None:
            self._check()
        assert self._status is not None
        return self._status

    @property
    def reason(self) -> str:
        if self._status is None:
            self._check()
        return self._reason

    def _check(self) -> None:
        data, digest = self.data, self.sha256
        assert data is not None and digest is not None
        actual = payload.sha256(data)
        if actual == digest:
            self._status = "exact"
            return
        self._status = "mismatch"
        self._reason = (
            f"{self._key}: recorded digest {digest[:12]}… but the stored value hashes to "
            f"{actual[:12]}… ({len(data)} bytes; truncated by an attribute length limit?)"
        )

    def retyped(self, type: str) -> Payload:
        """The same payload read as ``type``."""
        p = Payload(type, self._data, self.sha256, self.status, self.reason)
        p._text = self._text
        return p

    @property
    def usable(self) -> bool:
        """True when the value may be replayed: exact, or all there is (unverified)."""
        return self.status in ("exact", "unverified") and self.type != payload.REPR

    def value(self, types: TypeResolver | None = None) -> Any:
        """The recorded value (objects rebuilt only with classes ``types`` allows)."""
        data = self.data
        if data is None or self.status in ("mismatch", "missing"):
            raise payload.PayloadError(self.reason or f"payload is {self.status}")
        return payload.decode(self.type, data, types)

    def plain(self) -> Any:
        """The recorded value as plain JSON values: for display, nothing is rebuilt."""
        source = self._data if self._text is None else self._text
        if source is None or self.status in ("mismatch", "missing"):
            raise payload.PayloadError(self.reason or f"payload is {self.status}")
        return payload.plain_from(self.type, source)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Payload):
            return NotImplemented
        return (self.type, self.data, self.sha256, self.status, self.reason) == (
            other.type,
            other.data,
            other.sha256,
            other.status,
            other.reason,
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        size = None if self.data is None else len(self.data)
        return (
            f"Payload(type={self.type!r}, {size} bytes, sha256={self.sha256!r},"
            f" status={self.status!r})"
        )


def from_attributes(
    attrs: Mapping[str, Any], key: str, blobs: BlobReader | None = None
) -> Payload | None:
    """Read the payload recorded under ``key``; ``None`` when nothing was recorded."""
    digest_key, bytes_key, ref_key, type_key, stored_key = _companions(key)
    display = attrs.get(key)
    digest = attrs.get(digest_key)
    raw = attrs.get(bytes_key)
    ref = attrs.get(ref_key)
    if display is None and digest is None and raw is None and ref is None:
        stored = attrs.get(stored_key)  # content stored by reference
        return _by_reference(key, stored) if isinstance(stored, str) else None
    type_ = attrs.get(type_key)
    if not isinstance(type_, str) or type_ not in payload.TAGS:
        type_ = payload.STR if isinstance(display, str) or display is None else payload.JSON
    data: bytes | None = None
    text: str | None = None
    if isinstance(raw, (bytes, bytearray)):
        data = bytes(raw)
    elif isinstance(raw, str):  # sent as base64 text to a backend that stores no bytes
        data = from_base64(raw)
        if data is None:
            reason = f"{A.BYTES}{key} is neither bytes nor base64 text"
            return Payload(type_, None, _str(digest), "missing", reason)
    elif isinstance(ref, str):
        try:
            data = blobs(ref) if blobs is not None else None
        except BlobUnavailable as exc:
            return Payload(type_, None, _str(digest), "missing", str(exc))
        if data is None:
            where = "beside the trace, nor in a store allowed by --refs"
            return Payload(
                type_, None, _str(digest), "missing", f"blob {ref} is not available ({where})"
            )
    elif isinstance(display, str):
        text = display
    elif display is None:
        return Payload(type_, None, _str(digest), "missing", "only a digest was recorded")
    else:  # a non-str attribute (third-party, or a dialect's value): kept as JSON
        type_ = payload.JSON
        try:
            # In its own key order: a canonical form is for comparing, and an answer
            # served from it would spell a tool call's arguments in another order.
            data = payload.plain_json_bytes(display)
        except (TypeError, ValueError):
            data = payload.canonical(display).encode("utf-8")
    return Payload.read(type_, data, text, _str(digest), key)


#: Content key -> the names of its companions: spans are read by the thousand, and the
#: same few keys are asked for on each.
_COMPANIONS: dict[str, tuple[str, str, str, str, str]] = {}


def _companions(key: str) -> tuple[str, str, str, str, str]:
    """The digest, bytes, blob-ref, type and stored-ref attribute names of ``key``."""
    names = _COMPANIONS.get(key)
    if names is None:
        names = (A.SHA256 + key, A.BYTES + key, A.REF + key, A.TYPE + key, key + A.STORED_REF)
        if len(_COMPANIONS) < 1024:  # keys come from code, a few dozen: a bound all the same
            _COMPANIONS[key] = names
    return names


def _by_reference(key: str, ref: str) -> Payload:
    """The content of ``key`` read where ``{key}_ref`` says it is stored, if that store is
    allowed (see :mod:`otel_replay.payload.references`); else missing, naming it."""
    # Only a payload stored elsewhere is read through the content references.
    from . import references as content_refs

    try:
        data = content_refs.as_json(content_refs.read(ref))
    except content_refs.RefUnavailable as exc:
        return Payload(payload.JSON, None, None, "missing", f"{key}: {exc}")
    return Payload.read(payload.JSON, data, None, None, key)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None
