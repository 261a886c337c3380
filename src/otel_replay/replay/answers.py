"""What the replay engine sends back: an :class:`Answer` (status, headers, body chunks
and the waits between them), the JSON and error answers, and what a recorded answer
sent back byte for byte must be (the same API and mode, headers HTTP can carry).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from .. import wire as W
from ..payload.codec import text_encoder
from ..runs.model import RawHttp, Step


@dataclasses.dataclass
class Answer:
    """What to send back: status, headers, and the body as chunks (one for JSON)."""

    status: int
    headers: list[tuple[str, str]]
    chunks: Iterable[bytes]
    #: Seconds to wait before each chunk (recorded timing), or None for no waiting.
    delays: list[float] | None = None
    step: Step | None = None
    rung: str | None = None
    #: The conversation that served (or refused) the request.
    conversation: int | None = None
    #: The connection is closed after ``chunks`` (none: right after the headers), the body
    #: left unfinished: a recorded call that failed so (see
    #: :class:`~otel_replay.replay.divergence.RecordedFailure`), for the client to raise.
    cut: bool = False


def _json(status: int, body: Mapping[str, Any], extra: Sequence[tuple[str, str]] = ()) -> Answer:
    data = json_bytes(body, default=repr)
    headers = [("content-type", "application/json"), *extra]
    return Answer(status, headers, [data])


def json_bytes(value: Any, **options: Any) -> bytes:
    """JSON as UTF-8.  A lone surrogate (a recording may hold one: JSON read from a trace
    can) is written as the escape JSON has for it, ``\\ud800``: no UTF-8 spells it."""
    text = _body_text(value) if not options else json.dumps(value, ensure_ascii=False, **options)
    return text.encode("utf-8", "backslashreplace")


#: What :func:`json_bytes` writes with, made once (``json.dumps`` with options makes
#: an encoder per call).
_body_text: Final = text_encoder(json.JSONEncoder(ensure_ascii=False))


#: What the engine gives for a request to forward upstream (the engine forwards it).
_FORWARD = Answer(0, [], [])


def error_envelope(kind: str, message: str, **details: Any) -> dict[str, Any]:
    """Anthropic's error envelope, which the OpenAI SDK reads too (``error.message``)."""
    return {"type": "error", "error": {"type": kind, "message": message, **details}}


def error_answer(status: int, kind: str, message: str, **details: Any) -> Answer:
    return _json(status, error_envelope(kind, message, **details), [("x-should-retry", "false")])


def in_wire(wire: W.Wire, answer: Answer) -> Answer:
    """An error answer (the engine's envelope, or an error body the trace quotes) as
    ``wire``'s API says errors, so that its client raises one carrying the text."""
    if answer.status < 400 or answer.cut or wire.render_error is W.same_error:
        return answer
    try:
        envelope = json.loads(b"".join(answer.chunks))
    except ValueError:
        envelope = None
    if not isinstance(envelope, dict):
        return answer
    extra, body = wire.render_error(answer.status, envelope)
    names = {k for k, _ in extra}
    kept = [(k, v) for k, v in answer.headers if k not in names]
    return dataclasses.replace(
        answer, headers=[*kept, *extra], chunks=[json_bytes(body, default=repr)]
    )


#: Recorded response headers sent back with recorded bytes (what the client decodes by).
_RAW_HEADERS = ("content-type", "content-encoding")


def _raw_for(step: Step, wire: W.Wire, request: W.WireRequest) -> RawHttp | None:
    """The recorded HTTP answer to send verbatim, if the client speaks the API it came from.

    Same API (the recorded request path is served by the same wire format),
    same mode (a stream for a stream request, JSON otherwise), a 200, and
    bytes whose digest checks: else the answer is rendered from GenAI messages.
    """
    raw = step.model.raw if step.model is not None else None
    if raw is None or not raw.usable or raw.status not in (None, 200) or raw.path is None:
        return None
    if W.for_path(raw.path) is not wire:
        return None
    if not all(_sendable(raw.response_headers.get(k, "")) for k in _RAW_HEADERS):
        return None  # a header HTTP cannot carry: the answer is rendered instead
    ctype = raw.response_headers.get("content-type", "")
    streamed = "text/event-stream" in ctype or W.EVENT_STREAM_TYPE in ctype
    return raw if streamed == request.stream else None


#: What an HTTP header value may hold (RFC 9110's field-value): tab, visible ASCII and
#: the rest of Latin-1.  A recording may hold anything: a CR LF, a NUL or U+2603 in a
#: header made the server fail the request with a traceback.
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\xff]*")


def _sendable(value: str) -> bool:
    return _FIELD_VALUE.fullmatch(value) is not None


def header_text(text: str) -> str:
    """``text`` (recorded: anything) as an HTTP header value may carry it: what it may not
    hold written as its Python escape, white space around it left out."""
    text = text.strip(" \t")
    if _sendable(text):
        return text
    return "".join(
        c if _sendable(c) else c.encode("unicode_escape", "backslashreplace").decode("ascii")
        for c in text
    )


def iter_chunks(answer: Answer) -> Iterator[tuple[float, bytes]]:
    """``(seconds to wait, chunk)`` pairs of an answer."""
    delays = answer.delays
    for i, chunk in enumerate(answer.chunks):
        yield (delays[i] if delays and i < len(delays) else 0.0), chunk
