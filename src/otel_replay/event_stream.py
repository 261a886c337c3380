"""AWS event-stream frames (``application/vnd.amazon.eventstream``), read and written by the spec.

Bedrock's streamed answers (InvokeModelWithResponseStream, ConverseStream) come in
this binary framing: each message is a prelude (total length, headers length, and
a CRC-32 of those eight bytes), typed headers (``:event-type``, ``:message-type``,
``:content-type``), a payload, and a CRC-32 of the whole message.  The format is
small and documented, so it is read here with the standard library (the AWS SDK
is no dependency of the core); every length is checked against the bytes there
are, and a body that breaks any rule is refused with :class:`EventStreamError`.
Capture reads the frames a traced app received; replay writes them (:func:`encode`)
to answer a Bedrock client.
"""

from __future__ import annotations

import base64
import binascii
import struct
import zlib
from dataclasses import dataclass

#: The prelude: total length, headers length (big-endian uint32s), then their CRC-32.
_PRELUDE = 12
#: The smallest message: a prelude and the message CRC, no headers, no payload.
_SMALLEST = _PRELUDE + 4
#: The SDKs' own bounds on a message's headers and payload.
MAX_HEADERS_LENGTH = 128 * 1024
MAX_PAYLOAD_LENGTH = 24 * 1024 * 1024
#: More headers than any AWS message carries (they send three or four): a frame with
#: more is not read.
MAX_HEADERS = 64

#: Header value types: fixed sizes (``None``: a 2-byte length, then that many bytes).
_FIXED = {0: 0, 1: 0, 2: 1, 3: 2, 4: 4, 5: 8, 8: 8, 9: 16}
_INTS = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}
_BYTES, _STRING, _UUID = 6, 7, 9


class EventStreamError(ValueError):
    """Bytes that are not a well-formed AWS event stream (a length past the body, a
    bad CRC, too many headers, an unknown header type)."""


HeaderValue = bool | int | bytes | str


@dataclass(frozen=True)
class Frame:
    """One message of an event stream: its headers, in order, and its payload."""

    headers: tuple[tuple[str, HeaderValue], ...]
    payload: bytes

    def header(self, name: str) -> HeaderValue | None:
        """The value of header ``name``, or ``None``."""
        return next((v for k, v in self.headers if k == name), None)


def looks_like(data: bytes) -> bool:
    """Whether ``data`` starts as an event stream does: a prelude whose CRC holds (1 in
    2**32 for other bytes) and whose lengths fit a message."""
    if len(data) < _SMALLEST:
        return False
    total, headers, crc = struct.unpack_from(">III", data)
    return bool(zlib.crc32(data[:8]) == crc and total >= _SMALLEST + headers)


def frames(data: bytes) -> list[Frame]:
    """Every message of ``data``, in order; :class:`EventStreamError` if any byte of it
    is not part of a well-formed message (a stream cut short is refused too)."""
    out: list[Frame] = []
    at = 0
    view = memoryview(data)
    while at < len(data):
        if len(data) - at < _SMALLEST:
            raise EventStreamError(f"{len(data) - at} bytes at {at}: shorter than a message")
        total, headers_length = struct.unpack_from(">II", data, at)
        (prelude_crc,) = struct.unpack_from(">I", data, at + 8)
        if zlib.crc32(view[at : at + 8]) != prelude_crc:
            raise EventStreamError(f"the prelude CRC of the message at {at} does not match")
        payload_length = total - headers_length - _SMALLEST
        if headers_length > MAX_HEADERS_LENGTH or payload_length < 0:
            raise EventStreamError(f"the message at {at} has headers of {headers_length} bytes")
        if payload_length > MAX_PAYLOAD_LENGTH:
            raise EventStreamError(f"the message at {at} has a payload of {payload_length} bytes")
        if total > len(data) - at:
            raise EventStreamError(f"the message at {at} runs past the body ({total} bytes)")
        (message_crc,) = struct.unpack_from(">I", data, at + total - 4)
        if zlib.crc32(view[at : at + total - 4]) != message_crc:
            raise EventStreamError(f"the message CRC of the message at {at} does not match")
        start = at + _PRELUDE
        headers = _headers(data[start : start + headers_length], at)
        payload = data[start + headers_length : at + total - 4]
        out.append(Frame(headers, payload))
        at += total
    return out


def _headers(data: bytes, where: int) -> tuple[tuple[str, HeaderValue], ...]:
    out: list[tuple[str, HeaderValue]] = []
    at = 0
    try:
        while at < len(data):
            if len(out) == MAX_HEADERS:
                raise EventStreamError(f"the message at {where} has over {MAX_HEADERS} headers")
            size = data[at]
            raw_name = data[at + 1 : at + 1 + size]
            if len(raw_name) != size:
                raise EventStreamError(f"a header name of the message at {where} is cut short")
            name = raw_name.decode("utf-8")
            at += 1 + size
            kind = data[at]
            at += 1
            value: HeaderValue
            if kind in (0, 1):
                value = kind == 0
            elif kind in _INTS:
                (value,) = struct.unpack_from(_INTS[kind], data, at)
                at += _FIXED[kind]
            elif kind == _UUID:  # its 16 bytes, as the SDKs give them
                value = data[at : at + 16]
                if len(value) != 16:
                    raise EventStreamError(f"a header of the message at {where} is cut short")
                at += 16
            elif kind in (_BYTES, _STRING):
                (length,) = struct.unpack_from(">H", data, at)
                raw = data[at + 2 : at + 2 + length]
                if len(raw) != length:
                    raise EventStreamError(f"a header of the message at {where} is cut short")
                value = raw.decode("utf-8") if kind == _STRING else raw
                at += 2 + length
            else:
                raise EventStreamError(f"a header of the message at {where} has type {kind}")
            out.append((name, value))
    except (IndexError, struct.error, UnicodeDecodeError, ValueError) as exc:
        if isinstance(exc, EventStreamError):
            raise
        raise EventStreamError(f"the headers of the message at {where}: {exc}") from None
    if at != len(data):
        raise EventStreamError(f"the headers of the message at {where} are cut short")
    return tuple(out)


#: The content type of an event stream.
CONTENT_TYPE = "application/vnd.amazon.eventstream"


def encode(headers: tuple[tuple[str, str], ...], payload: bytes) -> bytes:
    """One message: ``headers`` as string-typed headers (what AWS services send), then
    ``payload``; the lengths and both CRC-32s as :func:`frames` checks them."""
    head = bytearray()
    for name, value in headers:
        raw_name, raw_value = name.encode(), value.encode()
        head += struct.pack(">B", len(raw_name)) + raw_name
        head += struct.pack(">BH", _STRING, len(raw_value)) + raw_value
    total = _SMALLEST + len(head) + len(payload)
    prelude = struct.pack(">II", total, len(head))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + bytes(head) + payload
    return message + struct.pack(">I", zlib.crc32(message))


def chunk_bytes(value: str) -> bytes:
    """The bytes of a Bedrock ``chunk`` event's ``bytes`` field (base64, as the SDKs
    decode it); :class:`EventStreamError` if it is not base64."""
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise EventStreamError(f"a chunk's bytes are not base64: {exc}") from None
