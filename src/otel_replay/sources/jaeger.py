"""``jaeger://host:16686?service=NAME``: the traces a Jaeger v2 search finds.

``jaeger://HOST:PORT`` (``jaegers://`` for HTTPS) stands for Jaeger's
FindTraces (``GET /api/v3/traces?query...``), whose one answer holds every
trace found (``{"result": {"resourceSpans": ...}}``), read as any URL is
(headers, retries and bounds as in :mod:`.download`).  Its query narrows the
search, in Jaeger, before any trace is sent:

- ``service`` (required by Jaeger), ``operation``: the service and span name;
- ``since``: an ISO time or a span back from now (``2h``; default ``1d``),
  the earliest start;
- ``limit``: traces at most (Jaeger's search depth; default 100).

``otel-replay ls jaeger://jaeger:16686?service=support --since 2h`` puts its
``--since`` there itself (Jaeger's HTTP API takes no attribute filter: the
other filters apply to the runs read).  A search that finds nothing is
answered 404 "No traces found" by Jaeger: no runs, no error.
"""

from __future__ import annotations

import datetime as dt
import urllib.parse
from typing import IO, Final

from ..otlp.errors import FormatError
from ..since import parse_since
from .source import SearchFilter, Source
from .url import UrlSource

__all__ = [
    "DEFAULT_LIMIT",
    "DEFAULT_SINCE",
    "JaegerAnswer",
    "JaegerSearch",
    "answers_search",
    "finds_nothing",
    "search_url",
]

DEFAULT_LIMIT: Final = 100
DEFAULT_SINCE: Final = "1d"
#: Where Jaeger v2 answers FindTraces, and what it says when nothing matched.
_FIND_PATH: Final = "/api/v3/traces"
_NOTHING: Final = "No traces found"


def search_url(name: str) -> str:
    """The FindTraces URL of the search ``name`` (ValueError for a ``since`` that is not a
    time)."""
    parts = urllib.parse.urlsplit(name)
    scheme = "https" if parts.scheme == "jaegers" else "http"
    query = dict(urllib.parse.parse_qsl(parts.query))
    since_ns = parse_since(query.get("since") or DEFAULT_SINCE)
    now = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=1)
    ask = {
        "query.service_name": query.get("service", ""),
        "query.start_time_min": _rfc3339(since_ns),
        "query.start_time_max": now.isoformat().replace("+00:00", "Z"),
        "query.search_depth": query.get("limit") or DEFAULT_LIMIT,
    }
    if query.get("operation"):
        ask["query.operation_name"] = query["operation"]
    base = f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    return f"{base}{_FIND_PATH}?{urllib.parse.urlencode(ask)}"


def answers_search(url: str) -> bool:
    """Whether the http(s) URL ``url`` asks Jaeger's FindTraces (whose 404 means no match).

    A URL that does not parse (an unclosed IPv6 bracket) asks nothing: reading it says why.
    """
    try:
        return urllib.parse.urlsplit(url).path.endswith(_FIND_PATH)
    except ValueError:
        return False


def finds_nothing(url: str, reason: str) -> bool:
    """Whether the error ``reason`` of reading ``url`` is Jaeger saying its search matched
    no trace (a 404 it answers to an empty search)."""
    return answers_search(url) and "HTTP 404" in reason and _NOTHING in reason


class JaegerSearch(Source):
    """``jaeger://HOST:PORT?service=NAME``: the one FindTraces answer holding every trace
    found; a search whose ``since`` is no time stands for itself, whose reading says so."""

    kind = "jaeger"

    def parts(self) -> list[Source]:
        try:
            return [JaegerAnswer(search_url(self.name))]
        except ValueError:
            return [self]

    def open(self) -> tuple[IO[bytes], int | None]:
        raise FormatError.whole(self.name, "its since= is neither a time nor a span like 2h")

    def narrowed(self, search: SearchFilter) -> Source:
        """Jaeger's HTTP API searches by time, not by attribute: ``since`` only."""
        # lazy: imported on first use, not with the package
        from .tempo import narrowed

        return JaegerSearch(narrowed(self.name, since=search.since))


class JaegerAnswer(UrlSource):
    """The URL of a Jaeger FindTraces search: read as any URL is, its 404 "No traces
    found" meaning no runs rather than an error."""

    def finds_nothing(self, reason: str) -> bool:
        return finds_nothing(self.name, reason)


def _rfc3339(ns: int) -> str:
    when = dt.datetime.fromtimestamp(ns // 1_000_000_000, dt.timezone.utc)
    return when.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns % 1_000_000_000:09d}Z"
