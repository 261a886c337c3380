"""``serve --on-divergence live --upstream URL`` forwards to the path asked, whatever the
base URL holds: a path prefix, ``/v1`` or not, a query of its own (Azure's
``?api-version=...``).  The path was appended after the base's query
(``...?api-version=1/chat/completions``).  Drawn over base URLs and request
paths, forwarded for real to a server on 127.0.0.1 that says what it was asked.
"""

from __future__ import annotations

import json
import urllib.parse
from http.server import BaseHTTPRequestHandler

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.replay.adapters.forward import upstream
from otel_replay.replay.engine import ReplayEngine
from tests.fixtures.http import serving

_WORD = st.from_regex(r"[a-z][a-z0-9-]{0,6}", fullmatch=True)
_QUERY = st.lists(st.tuples(_WORD, _WORD), max_size=2).map(urllib.parse.urlencode)
_PATHS = st.sampled_from(["/v1/chat/completions", "/v1/responses", "/v1/messages", "/chat"])


def _echo(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
    handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    return 200, "application/json", json.dumps({"asked": handler.path}).encode()


def test_the_request_goes_to_the_path_asked_with_both_queries() -> None:
    with serving(_echo) as live:

        @settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
        @given(
            prefix=st.lists(_WORD, max_size=2),
            v1=st.booleans(),
            slash=st.booleans(),
            base_query=_QUERY,
            path=_PATHS,
            asked_query=_QUERY,
        )
        def check(
            prefix: list[str], v1: bool, slash: bool, base_query: str, path: str, asked_query: str
        ) -> None:
            base_path = "".join("/" + p for p in prefix) + ("/v1" if v1 else "")
            base = (
                live + base_path + ("/" if slash else "") + (f"?{base_query}" if base_query else "")
            )
            asked = path + (f"?{asked_query}" if asked_query else "")
            answer = upstream(base, timeout=5)(asked, b"{}", {"content-type": "application/json"})
            assert answer.status == 200
            got = urllib.parse.urlsplit(json.loads(b"".join(answer.chunks))["asked"])
            tail = path[3:] if v1 and path.startswith("/v1/") else path
            assert got.path == base_path + tail
            assert got.query == "&".join(q for q in (base_query, asked_query) if q)

        check()


def test_an_engine_with_no_run_is_refused() -> None:
    with pytest.raises(ValueError, match="no runs"):
        ReplayEngine([])
