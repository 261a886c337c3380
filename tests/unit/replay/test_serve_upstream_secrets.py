"""``serve --on-divergence live --upstream URL`` never names the upstream's credentials.

The forwarder tells the client where a request went (``x-otel-replay-forwarded``)
and, when the upstream cannot be reached, says so in a 502 naming it.  Both
named the URL as given: a password in it, an ``api_key`` in its query, went
to the agent (and from there to its logs and traces).  The class: upstream
URLs with a password and a secret query value drawn, reached (a server on
127.0.0.1) and not (a closed port), through the forwarder ``serve`` uses.
"""

from __future__ import annotations

import contextlib
import socket
import string
import urllib.parse
from http.server import BaseHTTPRequestHandler

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otel_replay.replay.adapters.forward import upstream
from tests.fixtures.http import serving

_SECRET = st.text(string.ascii_letters + string.digits, min_size=12, max_size=32).filter(
    lambda s: len(set(s)) >= 6
)


def _closed_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answer(handler: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
    handler.rfile.read(int(handler.headers.get("Content-Length") or 0))
    return 200, "application/json", b"{}"


def test_the_upstream_url_is_named_with_its_credentials_hidden() -> None:
    with serving(_answer) as live:  # one server for every draw

        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck))
        @given(password=_SECRET, key=_SECRET, reached=st.booleans(), v1=st.booleans())
        def check(password: str, key: str, reached: bool, v1: bool) -> None:
            port = live.rsplit(":", 1)[1] if reached else str(_closed_port())
            # urllib takes no password in a URL: the one reached has none.
            userinfo = "" if reached else f"me:{urllib.parse.quote(password)}@"
            base = f"http://{userinfo}127.0.0.1:{port}{'/v1' if v1 else ''}?api_key={key}"
            forward = upstream(base, timeout=2)
            answer = forward("/v1/chat/completions", b"{}", {"content-type": "application/json"})
            said = repr(answer.headers) + b"".join(answer.chunks).decode()
            assert answer.status == (200 if reached else 502), said
            assert key not in said and password not in said, said
            if reached:
                assert any(k == "x-otel-replay-forwarded" for k, _ in answer.headers)

        check()
