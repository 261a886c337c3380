"""Reading runs from a trace backend's URL: headers, redirects, retries and errors.

Real HTTP on 127.0.0.1 through the reader users call (``load`` and the CLI);
the answers' shapes are those the backends document (see ``test_backends.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler

import pytest

import otel_replay
from otel_replay.sources import download
from tests.fixtures.cli import cli_process
from tests.fixtures.http import serving

_SECRET = "Bearer s3cr3t-token-value"


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(download, "BACKOFF_SECONDS", 0.01)
    monkeypatch.delenv(download.OTEL_REPLAY_HTTP_HEADERS, raising=False)
    yield
    download.use_headers(None)


def _otlp(trace_id: str = "ab" * 16) -> bytes:
    span = {
        "traceId": trace_id,
        "spanId": "cd" * 8,
        "name": "invoke_agent support",
        "startTimeUnixNano": "1",
        "endTimeUnixNano": "2",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}],
    }
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()


def test_headers_from_the_environment_and_options_reach_the_backend(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, str]] = []

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        seen.append({k.lower(): v for k, v in request.headers.items()})
        return 200, "application/json", _otlp()

    monkeypatch.setenv(download.OTEL_REPLAY_HTTP_HEADERS, "X-Scope-OrgID=acme")
    download.use_headers({"Authorization": _SECRET})
    with serving(answer) as base:
        runs = otel_replay.load(f"{base}/api/traces/{'ab' * 16}", strict=True)
    assert len(runs) == 1
    (got,) = seen
    assert got["x-scope-orgid"] == "acme" and got["authorization"] == _SECRET
    assert "application/protobuf" in got["accept"]


def test_headers_do_not_follow_a_redirect_to_another_origin() -> None:
    seen: dict[str, dict[str, str]] = {}

    def target(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        seen["target"] = {k.lower(): v for k, v in request.headers.items()}
        return 200, "application/json", _otlp()

    with serving(target) as elsewhere:

        def first(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes, dict[str, str]]:
            seen["first"] = {k.lower(): v for k, v in request.headers.items()}
            # 127.0.0.1 and localhost: another origin, though the same machine.
            other = elsewhere.replace("127.0.0.1", "localhost")
            return 302, "text/plain", b"", {"Location": f"{other}/t"}

        download.use_headers({"Authorization": _SECRET})
        with serving(first) as base:
            runs = otel_replay.load(f"{base}/api/traces/x", strict=True)
    assert len(runs) == 1
    assert seen["first"]["authorization"] == _SECRET
    assert "authorization" not in seen["target"]


def test_busy_or_failing_backends_are_asked_again() -> None:
    calls: list[str] = []

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes, dict[str, str]]:
        calls.append(request.path)
        if len(calls) == 1:
            return 429, "text/plain", b"slow down", {"Retry-After": "0"}
        if len(calls) == 2:
            return 503, "text/plain", b"ingester unavailable", {}
        return 200, "application/json", _otlp(), {}

    with serving(answer) as base:
        runs = otel_replay.load(f"{base}/api/traces/x", strict=True)
    assert len(runs) == 1 and len(calls) == 3


def test_a_backend_that_keeps_failing_is_one_error_naming_it_without_secrets() -> None:
    calls: list[str] = []

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        calls.append(request.path)
        return 502, "text/html", b"<html><body>Bad gateway: upstream tempo-querier</body></html>"

    download.use_headers({"Authorization": _SECRET})
    with serving(answer) as base:
        url = base.replace("http://", "http://reader:hunter2@") + "/api/traces/x?api_key=abc123"
        with pytest.raises(otel_replay.FormatError) as caught:
            otel_replay.load(url, strict=True)
    assert len(calls) == download.RETRIES + 1
    text = str(caught.value)
    assert "HTTP 502" in text and "Bad gateway: upstream tempo-querier" in text
    assert "hunter2" not in text and "abc123" not in text and "s3cr3t" not in text
    assert "/api/traces/x" in text


def test_not_found_is_not_asked_again_and_says_what_the_backend_said() -> None:
    calls: list[str] = []

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        calls.append(request.path)
        return 404, "text/plain", b"trace not found"

    with serving(answer) as base, pytest.raises(otel_replay.FormatError) as caught:
        otel_replay.load(f"{base}/api/traces/{'ab' * 16}", strict=True)
    assert len(calls) == 1
    assert "HTTP 404" in str(caught.value) and "trace not found" in str(caught.value)


def test_the_cli_sends_its_header_option_and_never_prints_it() -> None:
    seen: list[tuple[str, str]] = []

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        seen.append((request.headers["X-Scope-OrgID"], request.headers["Authorization"]))
        return 401, "text/plain", b"no org id"

    with serving(answer) as base:
        proc = cli_process(
            "--header",
            "X-Scope-OrgID: tenant-7",
            "-H",
            "Authorization=Bearer zz9-secret",
            "ls",
            f"{base}/api/traces/x",
        )
    out = proc.stdout + proc.stderr
    assert seen == [("tenant-7", "Bearer zz9-secret")]
    assert "HTTP 401" in out and "tenant-7" not in out and "zz9" not in out
    assert proc.returncode == 2
