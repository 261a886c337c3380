"""``tempo://host:3200``: the traces a Grafana Tempo search finds, read one URL each.

``tempo://HOST:PORT`` (``tempos://`` for HTTPS) searches Tempo
(``GET /api/search``, TraceQL) and stands for the trace-by-id URL of each
trace found (``/api/v2/traces/<id>``), which are then read as any URL is
(headers, retries and bounds as in :mod:`.download`).  Its query narrows the
search, in Tempo, before any trace is fetched:

- ``q``: a TraceQL query of your own (default: every trace);
- ``since``: an ISO time or a span back from now (``2h``), the search's start;
- ``agent``, ``tool``: traces with a span of that agent (its name contains
  it) or of that tool; ``error=1``: traces with a failed span;
- ``limit``: traces at most (default 100).

``otel-replay ls tempo://tempo:3200 --since 2h --agent support`` puts its
filters there itself.  A search Tempo refuses is one error naming it.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
from typing import IO, Final

from ..limits import MAX_RECORD_BYTES
from ..otlp.errors import FormatError
from ..since import parse_since
from .source import SearchFilter, Source

__all__ = ["TempoSearch", "failure", "narrowed", "trace_urls"]

DEFAULT_LIMIT: Final = 100

#: Why the search behind a ``tempo://`` name failed, for the reader to report.
_failed: dict[str, str] = {}


def narrowed(name: str, **filters: str | None) -> str:
    """``name`` with ``filters`` (since, agent, tool, error) added to its query."""
    parts = urllib.parse.urlsplit(name)
    query = dict(urllib.parse.parse_qsl(parts.query))
    query.update({k: v for k, v in filters.items() if v})
    return urllib.parse.urlunsplit(parts._replace(query=urllib.parse.urlencode(query)))


def trace_urls(name: str) -> list[str]:
    """The trace-by-id URLs of the traces the search ``name`` finds (``[name]`` when the
    search fails: reading that name then reports why, see :func:`failure`)."""
    # http.client and the like: for URLs only.
    from . import download

    try:
        base, url = _search_url(name)
        answer = download.fetch(url, accept="application/json", cap=MAX_RECORD_BYTES)
        found = json.loads(answer).get("traces") or []
        ids = [_trace_id(t.get("traceID")) for t in found]
    except FormatError as exc:
        _failed[name] = f"the search failed: {exc.reason}"
        return [name]
    except (ValueError, AttributeError, TypeError) as exc:
        _failed[name] = f"the search's answer is not Tempo's ({exc})"
        return [name]
    return [f"{base}/api/v2/traces/{i}" for i in dict.fromkeys(i for i in ids if i)]


def failure(name: str) -> str:
    """Why the search behind ``name`` found nothing to read (searched again where this
    process did not search: a worker reading it)."""
    if name not in _failed:
        trace_urls(name)
    return _failed.get(name, "the search failed")


def _search_url(name: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(name)
    scheme = "https" if parts.scheme == "tempos" else "http"
    base = f"{scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    query = dict(urllib.parse.parse_qsl(parts.query))
    ask = {"q": query.get("q") or _traceql(query), "limit": query.get("limit") or DEFAULT_LIMIT}
    since = query.get("since")
    if since:
        ask["start"] = parse_since(since) // 1_000_000_000
        ask["end"] = int(time.time()) + 1
    return base, f"{base}/api/search?{urllib.parse.urlencode(ask)}"


def _traceql(query: dict[str, str]) -> str:
    """The TraceQL of the filters: each a spanset the trace must hold."""
    sets = []
    if query.get("agent"):
        sets.append(f"{{ span.gen_ai.agent.name =~ {_regex_literal(query['agent'])} }}")
    if query.get("tool"):
        sets.append(f"{{ span.gen_ai.tool.name = {_literal(query['tool'])} }}")
    if query.get("error"):
        sets.append("{ status = error }")
    return " && ".join(sets) or "{}"


def _literal(text: str) -> str:
    """A TraceQL string literal: JSON's escaping is TraceQL's."""
    return json.dumps(text)


def _regex_literal(text: str) -> str:
    """A TraceQL regular expression literal matching names that contain ``text``."""
    return _literal(f".*{re.escape(text)}.*")


def _trace_id(value: object) -> str:
    """A search answer's trace id (hex, leading zeros trimmed) as 32 hex digits."""
    if not isinstance(value, str) or not value or len(value) > 32:
        return ""
    try:
        int(value, 16)
    except ValueError:
        return ""
    return value.lower().rjust(32, "0")


class TempoSearch(Source):
    """``tempo://HOST:PORT?...``: the trace-by-id URL of each trace the search finds; a
    search that fails stands for itself, whose reading reports why."""

    kind = "tempo"

    def parts(self) -> list[Source]:
        # lazy: imported on first use, not with the package
        from .url import UrlSource

        urls = trace_urls(self.name)
        return [self] if urls == [self.name] else [UrlSource(url) for url in urls]

    def open(self) -> tuple[IO[bytes], int | None]:
        raise FormatError.whole(self.name, failure(self.name))

    def narrowed(self, search: SearchFilter) -> Source:
        """Tempo searches by time and attribute: every filter goes to its TraceQL."""
        error = "1" if search.errors_only else None
        filters = {"since": search.since, "agent": search.agent, "tool": search.tool}
        return TempoSearch(narrowed(self.name, **filters, error=error))
