"""The HTTP error status a failed model call got, and the error body, where its trace says.

A call that failed on an error status (a 503 the client did not retry) ended its run in the
error its client made of that status: LiteLLM raises ``ServiceUnavailableError`` for a 503
and ``InternalServerError`` for a 500, the OpenAI SDK ``InternalServerError`` for both.  A
replay that fails it again sends the same status, so that the client raises the same error,
and the body the server sent where the error's message holds it (clients quote it).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Step

#: Span attributes holding the status: the semantic conventions' own, and the numeric
#: ``error.code`` LiteLLM sets beside it.
_STATUS_KEYS = ("http.response.status_code", "error.code")
#: An error status as clients name it in their errors: httpx's ``raise_for_status``
#: ("Server error '503 Service Unavailable' for url ...", which clients built on httpx
#: chain), and the OpenAI and Anthropic SDKs' ``APIStatusError`` ("Error code: 503 - ...").
_STATUS_SAID = re.compile(r"(?:(?:Server|Client) error '|\bError code: )([45]\d\d)\b")
#: Longer error texts are not searched (untrusted input: bounded work).
_TEXT_MAX = 65536
#: Where in an error's message a quoted body may start, at most (bounded work).
_BRACES_MAX = 16


def error_status(step: Step) -> int | None:
    """The HTTP error status (400-599) ``step`` failed on, where its span or the errors it
    recorded say; None where nothing names one (a connection refused or cut partway, a
    body that could not be read, a status only an exception's class name implies)."""
    attrs = step.attributes or {}
    for key in _STATUS_KEYS:
        code = _status(attrs.get(key))
        if code is not None:
            return code
    for text in _error_texts(step):
        found = _STATUS_SAID.search(text[:_TEXT_MAX])
        if found:
            return int(found.group(1))
    return None


def error_body(step: Step) -> dict[str, Any] | None:
    """The error object the server sent ``step`` (``{"error": ...}``), where an error it
    recorded quotes it as JSON (LiteLLM's "OpenAIException - {...}"); None where none does."""
    decoder = json.JSONDecoder()
    for text in _error_texts(step):
        text = text[:_TEXT_MAX]
        start = text.find("{")
        for _ in range(_BRACES_MAX):
            if start < 0:
                break
            try:
                value, _end = decoder.raw_decode(text, start)
            except (ValueError, RecursionError):
                value = None
            if isinstance(value, dict) and "error" in value:
                return value
            start = text.find("{", start + 1)
    return None


def _status(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    return value if isinstance(value, int) and 400 <= value <= 599 else None


def _error_texts(step: Step) -> list[str]:
    """The messages of the errors ``step`` recorded, then their stack traces."""
    errors = [e.get("attributes") or {} for e in step.events if e.get("name") == "exception"]
    messages = [step.status_message or "", *(str(a.get("exception.message") or "") for a in errors)]
    traces = [str(a.get("exception.stacktrace") or "") for a in errors]
    return [t for t in (*messages, *traces) if t]
