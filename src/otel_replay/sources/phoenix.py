"""Spans as Arize Phoenix serves them over its REST API -> span records.

Phoenix answers ``GET /v1/projects/{project}/spans/otlpv1`` with
``{"data": [span...], "next_cursor": ...}`` where each span is OTLP-shaped
JSON with protobuf field names (``trace_id``, ``start_time_unix_nano``,
``string_value``...), and ``GET /v1/projects/{project}/spans`` with its own
span JSON (``context``, ISO timestamps, plain attribute values).  Both are
read here; a URL answer is followed page by page through ``next_cursor``.

What Phoenix changes on the way, and what is undone here:

- timestamps are stored to the microsecond, through float seconds (so within
  1 µs of the original) and served through a float again, so the nanoseconds
  carry noise: they are rounded back to the microsecond;
- ``bytes_value`` is served as hex, not base64: decoded as hex;
- non-finite doubles are served as the strings ``inf``/``nan``: read back;
- ``otel_replay.bytes.*`` payloads sent as base64 text (``otel-replay export
  --base64-bytes``, since Phoenix does not store a span with a ``bytes``
  attribute at all) are bytes again.

What cannot be undone: the resource, the instrumentation scope, links and the
OTLP span kind are not kept by Phoenix (the kind is served as INTERNAL);
attributes holding a map are flattened into dotted keys; Phoenix adds
OpenInference attributes (``llm.*``, ``openinference.span.kind``...) derived
from GenAI ones; and a span with a ``bytes`` attribute is not stored at all.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import limits
from ..attributes import BYTES as _BYTES
from ..bytes_text import from_base64
from ..otlp.errors import FormatError
from ..otlp.json_reader import deeper
from ..otlp.records import EventRecord, LinkRecord, SpanRecord

__all__ = ["looks_like", "spans_from_response"]

_HEAD = re.compile(rb'\s*\{\s*"(?:data|next_cursor)"\s*:')
_KINDS = {"SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2, "SPAN_KIND_CLIENT": 3}
_KINDS |= {"SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
_STATUS = {"UNSET": 0, "OK": 1, "ERROR": 2}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
#: Pages followed at most, so a server that keeps answering cannot loop us forever.
MAX_PAGES = 100_000


class _Shape(ValueError):
    pass


def looks_like(head: bytes) -> bool:
    """Whether a JSON document starts like a Phoenix REST answer (``{"data": ...``)."""
    return _HEAD.match(head) is not None


def _ns(value: Any) -> int:
    """Nanoseconds, rounded to the microsecond Phoenix keeps."""
    if value is None:
        return 0
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        when = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=dt.timezone.utc)
        return (when - _EPOCH) // dt.timedelta(microseconds=1) * 1000
    return round(int(value) / 1000) * 1000


def _id(value: Any, size: int, what: str) -> str:
    if value in (None, ""):
        return ""
    text = str(value).lower()
    if len(text) != size * 2 or not all(c in "0123456789abcdef" for c in text):
        raise _Shape(f"{what} {value!r} is not {size * 2} hex digits")
    return text


def _any_value(v: Any, depth: int = 0) -> Any:
    """An OTLP ``AnyValue`` with protobuf field names (unset ones ``null``)."""
    if not isinstance(v, Mapping):
        return None
    for key in ("string_value", "bool_value", "int_value", "double_value", "bytes_value"):
        value = v.get(key)
        if value is None:
            continue
        if key == "int_value":
            return int(value)
        if key == "double_value":
            return float(value)  # "inf", "-inf" and "nan" too
        if key == "bytes_value":
            return bytes.fromhex(value)
        return value
    if v.get("array_value") is not None:
        inner = deeper(depth)
        return [_any_value(x, inner) for x in v["array_value"].get("values") or []]
    if v.get("kvlist_value") is not None:
        return _key_values(v["kvlist_value"].get("values"), deeper(depth))
    return None


def _key_values(kvs: Any, depth: int = 0) -> dict[str, Any]:
    if not isinstance(kvs, list):
        return {}
    return {str(kv.get("key", "")): _any_value(kv.get("value"), depth) for kv in kvs}


def _plain(attrs: Any) -> dict[str, Any]:
    """Phoenix's own span JSON: plain values."""
    if not isinstance(attrs, Mapping):
        return {}
    return {str(k): v for k, v in attrs.items()}


def _restore_bytes(attrs: dict[str, Any]) -> dict[str, Any]:
    """``otel_replay.bytes.*`` sent as base64 text (``export --base64-bytes``) -> bytes."""
    for key, value in attrs.items():
        if key.startswith(_BYTES) and isinstance(value, str):
            data = from_base64(value)
            if data is not None:  # else left as served
                attrs[key] = data
    return attrs


def _otlpv1_span(s: Mapping[str, Any], source: str) -> SpanRecord:
    status = s.get("status") or {}
    kind = s.get("kind")
    return SpanRecord(
        trace_id=_id(s.get("trace_id"), 16, "trace_id"),
        span_id=_id(s.get("span_id"), 8, "span_id"),
        parent_span_id=_id(s.get("parent_span_id"), 8, "parent_span_id") or None,
        name=str(s.get("name") or ""),
        kind=_KINDS.get(kind, 0) if isinstance(kind, str) else int(kind or 0),
        start_ns=_ns(s.get("start_time_unix_nano")),
        end_ns=_ns(s.get("end_time_unix_nano")),
        attributes=_restore_bytes(_key_values(s.get("attributes"))),
        events=[
            EventRecord(
                str(e.get("name") or ""),
                _ns(e.get("time_unix_nano")),
                _key_values(e.get("attributes")),
            )
            for e in s.get("events") or []
        ],
        status_code=int(status.get("code") or 0),
        status_message=str(status.get("message") or ""),
        resource={},
        scope_name="",
        scope_version="",
        source=source,
        links=[
            LinkRecord(
                _id(lk.get("trace_id"), 16, "link trace_id"),
                _id(lk.get("span_id"), 8, "link span_id"),
                _key_values(lk.get("attributes")),
            )
            for lk in s.get("links") or []
        ],
    )


def _phoenix_span(s: Mapping[str, Any], source: str) -> SpanRecord:
    context = s.get("context") or {}
    attributes = _restore_bytes(_plain(s.get("attributes")))
    if s.get("span_kind"):  # popped out of the attributes by Phoenix: put it back
        attributes.setdefault("openinference.span.kind", s["span_kind"])
    return SpanRecord(
        trace_id=_id(context.get("trace_id"), 16, "trace_id"),
        span_id=_id(context.get("span_id"), 8, "span_id"),
        parent_span_id=_id(s.get("parent_id"), 8, "parent_id") or None,
        name=str(s.get("name") or ""),
        kind=0,
        start_ns=_ns(s.get("start_time")),
        end_ns=_ns(s.get("end_time")),
        attributes=attributes,
        events=[
            EventRecord(
                str(e.get("name") or ""), _ns(e.get("timestamp")), _plain(e.get("attributes"))
            )
            for e in s.get("events") or []
        ],
        status_code=_STATUS.get(str(s.get("status_code") or "UNSET").upper(), 0),
        status_message=str(s.get("status_message") or ""),
        resource={},
        scope_name="",
        scope_version="",
        source=source,
    )


def _page(doc: Any, source: str, keep: Callable[[str], bool] | None) -> Iterator[SpanRecord]:
    if not isinstance(doc, Mapping) or not isinstance(doc.get("data"), list):
        raise _Shape("no span list in this answer")
    for item in doc["data"]:
        if not isinstance(item, Mapping):
            raise _Shape("a span is not a JSON object")
        if "trace_id" in item:
            span = _otlpv1_span(item, source)
        elif "context" in item:
            span = _phoenix_span(item, source)
        else:
            raise _Shape("not spans (no trace_id or context): another Phoenix endpoint?")
        if keep is None or keep(span.trace_id):
            yield span


def _next_page_url(url: str, cursor: str) -> str:
    parts = urllib.parse.urlsplit(url)
    query = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query) if k != "cursor"]
    query.append(("cursor", cursor))
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def spans_from_response(
    body: bytes, source: str, keep: Callable[[str], bool] | None = None
) -> Iterator[SpanRecord]:
    """Spans of one Phoenix REST answer; when ``source`` is its URL, of every page."""
    seen: set[str] = set()
    for _ in range(MAX_PAGES):
        try:
            doc = json.loads(body)
        except ValueError as exc:
            raise FormatError(source, getattr(exc, "pos", 0), f"not JSON ({exc})") from exc
        try:
            yield from _page(doc, source, keep)
        except (_Shape, ValueError, TypeError, AttributeError, OverflowError) as exc:
            raise FormatError.whole(source, f"not Phoenix spans ({exc})") from exc
        cursor = doc.get("next_cursor")
        if not isinstance(cursor, str) or not source.startswith(("http://", "https://")):
            return
        if cursor in seen:
            raise FormatError.whole(source, f"Phoenix repeats page cursor {cursor!r}")
        seen.add(cursor)
        url = _next_page_url(source, cursor)
        try:
            from . import download  # http.client and the like: for URLs only

            body = download.fetch(url, cap=limits.MAX_RECORD_BYTES)  # one answer: one record
        except FormatError as exc:
            reason = f"cannot read the next page {url} ({exc.reason})"
            raise FormatError(source, exc.offset, reason) from exc
    raise FormatError.whole(source, f"more than {MAX_PAGES} pages")
