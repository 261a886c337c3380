"""What a client reads of a recorded body, to tell whether scrubbing its bytes hid
every secret in that text.

A secret split across streamed parts (SSE events, JSON lines, the Vercel AI
SDK's data stream, interleaved choices or content blocks, the base64 payloads of
an AWS event stream's binary frames) is in no single byte run the scrubber sees,
yet a client joining the parts reads it whole.
"""

from __future__ import annotations

import re
from typing import Any

from .. import event_stream, json_text
from ..redaction import redactor

#: The content type of AWS event streams (Bedrock's streamed answers).
EVENT_STREAM = event_stream.CONTENT_TYPE


def shows_secret(data: bytes, clean: bytes, content_type: str = "") -> bool:
    """Whether ``clean`` (``data`` scrubbed), read as a client reads it, still shows a
    secret: the bytes hide none, but the text read from them does.  A body that cannot
    be read with certainty (JSON nested past the bound, an AWS event stream with a
    frame that breaks the format) is taken to show one.  ``content_type`` is the
    body's own: an event stream is read as one when it says so or its bytes do."""
    try:
        binary = EVENT_STREAM in content_type.lower() or event_stream.looks_like(data)
        read = _event_stream_reading if binary else _reading
        reading = read(data)
        scrubbed = redactor().scrub(reading, "body", [])
        if clean is data:
            return scrubbed is not reading
        # Scrubbed bytes change a frame's length and CRC: the client could not read the
        # body, and it is left out as in doubt.
        return bool(read(clean) != scrubbed)
    except Exception:  # in doubt: the body is left out, the step serves from its messages
        return True


def _event_stream_reading(data: bytes) -> list[str]:
    """An AWS event stream as its client reads it: each frame's payload an event (a
    Bedrock ``chunk``'s ``bytes`` decoded from base64 to the provider's event JSON,
    as the SDK decodes them; ConverseStream's events are the payload's JSON itself),
    its ``:event-type`` header the type of its stream, the events' text joined as
    :func:`_reading` joins server-sent events.  The header values are read as text.
    A frame that breaks the format raises :class:`event_stream.EventStreamError`."""
    events: list[tuple[tuple[Any, ...], Any]] = []
    text: list[str] = []
    for frame in event_stream.frames(data):
        for name, value in frame.headers:
            shown = value.decode("utf-8", "replace") if type(value) is bytes else str(value)
            text.append(f"{name}: {shown}")
        kind = frame.header(":event-type")
        where: tuple[Any, ...] = (_EventType(kind),) if type(kind) is str else ()
        payload = _event(frame.payload)
        if type(payload) is dict and type(payload.get("bytes")) is str:
            inner = _event(event_stream.chunk_bytes(payload["bytes"]))
            payload = {**payload, "bytes": inner}
        events.append((where, payload))
    return _joined(events, text)


#: A line of the Vercel AI SDK's data stream: a one-character type code, then JSON
#: (``0:"text"``, ``9:{...tool call...}``, ``c:{...args delta...}``).
_DATA_STREAM_LINE = re.compile(rb"[0-9a-z]:")
#: Server-sent event fields other than ``data`` (and a comment line).
_SSE_FIELDS = (b"event:", b"id:", b"retry:", b":")


def _reading(data: bytes) -> list[str] | Any:
    """A body as a client reads it, told from its bytes whatever its content type says.

    A JSON document is read whole.  Anything else is read as a stream, line by line:
    server-sent events (the ``data:`` lines of an event joined, as a client joins
    them), the Vercel AI SDK's data stream (``N:<JSON>`` lines), JSON lines (and
    JSON text sequences); the text each path of the events carries is joined in order,
    as a client joins the deltas, the stream parts of one kind kept apart from
    another's.  Lines none of these read are kept as the raw text they are.
    Streams interleave (an answer with ``n=2`` alternates its choices' deltas, a
    Responses stream its output text with its reasoning summary, Anthropic its
    content blocks): :func:`_joined` says the ways the text is joined.
    """
    try:
        doc = json_text.loads(data)
    except json_text.TooDeep:
        raise
    except ValueError:
        pass
    else:
        if not (type(doc) is list and doc and all(type(e) is dict for e in doc)):
            return doc
        return _joined([((), e) for e in doc], [])  # a JSON array of chunks
    events: list[tuple[tuple[Any, ...], Any]] = []
    text: list[str] = []
    pending: list[bytes] = []  # the data lines of the event being read
    kind: list[str] = []  # the SSE event type of the event being read

    def end_event() -> None:
        # Its SSE event type tells its stream from others (``event: ...``).
        where: tuple[Any, ...] = (_EventType(kind[-1]),) if kind else ()
        kind.clear()
        if len(pending) > 1:  # one event's lines, joined by a newline as a client does
            joined = _event(b"\n".join(pending))
            if type(joined) is not str:
                events.append((where, joined))
                pending.clear()
                return
        events.extend((where, _event(p)) for p in pending)  # or each line an event of its own
        pending.clear()

    for line in data.splitlines():
        if line.startswith(b"data:"):
            value = line[5:]
            pending.append(value[1:] if value[:1] == b" " else value)
            continue
        if pending:
            end_event()
        stripped = line.strip(b" \t\x1e")
        if not stripped:
            kind.clear()  # an event with no data ends: its type goes with it
            continue
        if line.startswith(_SSE_FIELDS):
            text.append(line.decode("utf-8", "replace"))
            if line.startswith(b"event:"):
                kind.append(line[6:].strip().decode("utf-8", "replace"))
            continue
        if _DATA_STREAM_LINE.match(line):
            value = _event(line[2:])
            if type(value) is not str or line[2:3] == b'"':
                events.append(((line[:1].decode(),), value))
                continue
        value = _event(stripped)
        if type(value) is str and stripped[:1] != b'"':
            text.append(value)  # not JSON: its raw text
        else:
            events.append(((), value))
    if pending:
        end_event()
    return _joined(events, text)


class _EventType(str):
    """An SSE event's type, as the first step of the paths of its text."""


#: Keys whose values tell one interleaved stream of a body from another: a choice's
#: ``index``, a content block's ``index``, a Responses event's ``output_index``,
#: ``content_index``, ``summary_index`` and ``item_id``, an ``id``, a ``type``.
_IDENTITY = (
    "index",
    "output_index",
    "content_index",
    "summary_index",
    "item_id",
    "id",
    "call_id",
    "contentBlockIndex",  # Bedrock ConverseStream's content blocks
    "type",
    "role",
)
#: Interleavings this reading does not know are also read round-robin: every k-th
#: part of a path, for each k.
_STRIDES = (2, 3, 4)


def _joined(events: list[tuple[tuple[Any, ...], Any]], text: list[str]) -> list[str]:
    """The text of a stream's events joined in each way a client may join it.

    Per JSON path, whatever stream each part belongs to; per stream, told apart
    by the path and the values of its identifying keys on the way
    (:data:`_IDENTITY`) and its SSE event type, as a client joins one choice's or
    one content block's deltas; and, for interleavings not told by those, every
    k-th part of each path for a few k.
    """
    # Only the joined text is compared: every string of every event is in it, and a
    # secret-named field shows in the bytes as it does in the event.
    joined: dict[tuple[Any, ...], list[str]] = {}
    streams: dict[tuple[Any, ...], list[str]] = {}
    for path, event in events:
        _strings_by_path(event, _untagged(path), joined)
        _strings_by_stream(event, path, streams)
    whole = {path: "".join(parts) for path, parts in joined.items()}
    out = list(whole.values())
    for path, parts in streams.items():
        text_of = "".join(parts)
        if whole.get(_untagged(path)) != text_of:  # one stream alone: read once
            out.append(text_of)
    for parts in joined.values():
        for k in _STRIDES:
            if len(parts) > k:
                out += ["".join(parts[j::k]) for j in range(k)]
    if text:
        out.append("\n".join(text))
    return out


def _untagged(path: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(p for p in path if type(p) is not tuple and type(p) is not _EventType)


def _strings_by_stream(
    value: Any, path: tuple[Any, ...], out: dict[tuple[Any, ...], list[str]]
) -> None:
    """The strings of ``value`` by stream: their path, each map on the way tagged with
    the values of its identifying keys."""
    t = type(value)
    if t is str:
        out.setdefault(path, []).append(value)
    elif t is dict:
        tag = tuple(
            (k, v) for k in _IDENTITY if (v := value.get(k)) is not None and type(v) in _SCALARS
        )
        if tag:
            path = (*path, tag)
        for k, v in value.items():
            _strings_by_stream(v, (*path, k), out)
    elif t is list:
        for i, v in enumerate(value):
            _strings_by_stream(v, (*path, i), out)


_SCALARS = (int, str, bool, float)


def _event(data: bytes) -> Any:
    """One event of a stream: its JSON, or its text where it is none (``[DONE]``, a ping).
    JSON nested past the bound is not read: the body is then in doubt."""
    try:
        return json_text.loads(data)
    except json_text.TooDeep:
        raise
    except ValueError:
        return data.decode("utf-8", "replace")


def _strings_by_path(
    value: Any, path: tuple[Any, ...], out: dict[tuple[Any, ...], list[str]]
) -> None:
    t = type(value)
    if t is str:
        out.setdefault(path, []).append(value)
    elif t is dict:
        for k, v in value.items():
            _strings_by_path(v, (*path, k), out)
    elif t is list:
        for i, v in enumerate(value):
            _strings_by_path(v, (*path, i), out)
