"""Runs read from the trace backends teams keep traces in: Tempo and Jaeger's query APIs.

Each answer is served from 127.0.0.1 at the path the backend answers on, in
the shapes the backends write (``tests/data/tempo`` and ``tests/data/jaeger``
say where each comes from), and must load as the same runs as the OTLP it
holds, read as a plain OTLP file.
"""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

import otel_replay
from tests.fixtures.cli import cli_run
from tests.fixtures.data import TESTS
from tests.fixtures.http import serving

DATA = TESTS / "data"
TEMPO, JAEGER = DATA / "tempo", DATA / "jaeger"
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


def _runs(source: str | Path) -> list[dict[str, Any]]:
    runs = otel_replay.load(source, strict=True)
    return [{**r.to_json(), "sources": None} for r in runs]


def _served(path: str, body: bytes, content_type: str, status: int = 200) -> list[dict[str, Any]]:
    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        return status, content_type, body

    with serving(answer) as base:
        return _runs(base + path)


def _otlp_file(tmp_path: Path, resource_spans: list[Any]) -> Path:
    out = tmp_path / "held.json"
    out.write_text(json.dumps({"resourceSpans": resource_spans}))
    return out


def _b64_ids_to_hex(doc: Any) -> Any:
    """What Tempo's base64 ids are in OTLP/JSON: hex (the file read beside the answer)."""
    import base64

    if isinstance(doc, dict):
        return {
            k: (
                base64.b64decode(v).hex()
                if k in ("traceId", "spanId", "parentSpanId") and isinstance(v, str) and v
                else _b64_ids_to_hex(v)
            )
            for k, v in doc.items()
        }
    if isinstance(doc, list):
        return [_b64_ids_to_hex(v) for v in doc]
    return doc


# --- Tempo ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "fixture", "inner"),
    [
        (f"/api/traces/{TRACE_ID}", "trace_v1.json", lambda d: d["batches"]),
        (f"/api/v2/traces/{TRACE_ID}", "trace_v2.json", lambda d: d["trace"]["resourceSpans"]),
        (f"/api/traces/{TRACE_ID}", "trace_v1_tempo1x.json", lambda d: d["batches"]),
    ],
)
def test_tempo_json_answers_load_as_the_otlp_they_hold(
    tmp_path: Path, path: str, fixture: str, inner: Any
) -> None:
    doc = json.loads((TEMPO / fixture).read_text())
    got = _served(path, (TEMPO / fixture).read_bytes(), "application/json")
    held = _runs(_otlp_file(tmp_path, _b64_ids_to_hex(inner(doc))))
    assert got == held and got
    assert {t for r in got for t in r["trace_ids"]} <= {
        TRACE_ID,
        *{s["trace_id"] for r in held for s in r["steps"]},
    }


def test_tempo_protobuf_answers_v1_and_v2_load_as_the_json_ones() -> None:
    as_json = _served(
        f"/api/traces/{TRACE_ID}", (TEMPO / "trace_v1.json").read_bytes(), "application/json"
    )
    v1 = _served(
        f"/api/traces/{TRACE_ID}", (TEMPO / "trace_v1.pb").read_bytes(), "application/protobuf"
    )
    v2 = _served(
        f"/api/v2/traces/{TRACE_ID}", (TEMPO / "trace_v2.pb").read_bytes(), "application/protobuf"
    )
    assert v1 == v2 == as_json
    assert sum(len(r["steps"]) for r in v1) == 5
    assert {s["trace_id"] for r in v1 for s in r["steps"]} == {TRACE_ID}


def test_tempo_1x_protobuf_answer_loads() -> None:
    old = _served(
        f"/api/traces/{TRACE_ID}",
        (TEMPO / "trace_v1_tempo1x.pb").read_bytes(),
        "application/protobuf",
    )
    as_json = _served(
        f"/api/traces/{TRACE_ID}",
        (TEMPO / "trace_v1_tempo1x.json").read_bytes(),
        "application/json",
    )
    assert old == as_json and old


def _served_runs(path: str, body: bytes, content_type: str) -> otel_replay.Runs:
    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        return 200, content_type, body

    with serving(answer) as base, pytest.warns(otel_replay.LoadWarning):
        return otel_replay.load(base + path)


def test_a_partial_tempo_trace_loads_and_is_never_full() -> None:
    """Past its size limit Tempo answers part of the trace, with status PARTIAL: the runs
    load, and their verdict says records are missing, and why."""
    partial = (TEMPO / "trace_v2_partial.json").read_bytes()
    # The protobuf form: the whole answer's fields, then status 3 = PARTIAL and the
    # message 4 (fields appended to a message merge into it, as protobuf defines).
    said = b"Trace exceeds maximum size of 4096 bytes, a partial trace is returned"
    as_pb = (TEMPO / "trace_v2.pb").read_bytes() + b"\x18\x01\x22" + bytes([len(said)]) + said
    for body, kind in ((partial, "application/json"), (as_pb, "application/protobuf")):
        runs = _served_runs(f"/api/v2/traces/{TRACE_ID}", body, kind)
        assert runs and all(r.kit.verdict != "full" for r in runs)
        (problem,) = runs.problems
        assert "part of the trace only" in str(problem) and "maximum size" in str(problem)
        for run in runs:
            assert any("part of the trace only" in p for p in run.kit.problems)
            assert any(m.startswith("records: http://127.0.0.1") for m in run.kit.missing)


def test_a_trace_tempo_does_not_hold_is_said_so() -> None:
    with pytest.raises(otel_replay.FormatError, match="no trace"):
        _served(
            f"/api/v2/traces/{TRACE_ID}",
            (TEMPO / "trace_v2_not_found.json").read_bytes(),
            "application/json",
        )
    with pytest.raises(otel_replay.FormatError, match="no trace"):
        # The protobuf of that answer: an empty trace (field 1) and empty metrics (field 2).
        _served(f"/api/v2/traces/{TRACE_ID}", b"\x0a\x00\x12\x00", "application/protobuf")


def test_tempo_error_answers_name_what_tempo_said() -> None:
    said = (TEMPO / "error_401_no_org_id.txt").read_bytes()
    with pytest.raises(otel_replay.FormatError, match=r"HTTP 401.*no org id"):
        _served(f"/api/traces/{TRACE_ID}", said, "text/plain", status=401)
    said = (TEMPO / "error_400_invalid_trace_id.txt").read_bytes()
    with pytest.raises(otel_replay.FormatError, match=r"HTTP 400.*hex characters"):
        _served("/api/traces/xyz", said, "text/plain", status=400)


# --- Jaeger --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fixture",
    [
        "get_trace.json",
        "get_trace_wire.json",
        "get_trace_pre_v2_9.json",
        "find_traces.json",
        "find_traces_two_traces.json",
    ],
)
def test_jaeger_answers_load_as_the_otlp_they_hold(tmp_path: Path, fixture: str) -> None:
    doc = json.loads((JAEGER / fixture).read_text())
    path = "/api/v3/traces/1" if fixture.startswith("get") else "/api/v3/traces?query.x=1"
    # Before 2.19 Jaeger sent no content type: Go's sniffing calls the answer text.
    got = _served(path, (JAEGER / fixture).read_bytes(), "text/plain; charset=utf-8")
    held = _runs(_otlp_file(tmp_path, doc["result"]["resourceSpans"]))
    assert got == held and got
    spans = [
        s for rs in doc["result"]["resourceSpans"] for ss in rs["scopeSpans"] for s in ss["spans"]
    ]
    assert sum(len(r["steps"]) for r in got) == len(spans)


def test_a_find_answer_of_several_traces_is_several_runs() -> None:
    got = _served(
        "/api/v3/traces?query.service_name=x",
        (JAEGER / "find_traces_two_traces.json").read_bytes(),
        "application/json",
    )
    assert len({t for r in got for t in r["trace_ids"]}) == 2


def test_jaeger_not_found_is_one_error_with_its_message() -> None:
    body = (JAEGER / "error_not_found.json").read_bytes()
    with pytest.raises(otel_replay.FormatError, match=r"HTTP 404.*No traces found"):
        _served("/api/v3/traces/1", body, "text/plain; charset=utf-8", status=404)


# --- Tempo search behind ls ------------------------------------------------------------


def _tempo(seen: list[str]) -> Any:
    """A Tempo on 127.0.0.1: its search finds the fixture's trace, its v2 API answers it."""
    import urllib.parse

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        seen.append(request.path)
        path = urllib.parse.urlsplit(request.path).path
        if path == "/api/search":
            return 200, "application/json", (TEMPO / "search.json").read_bytes()
        if path == f"/api/v2/traces/{TRACE_ID}":
            return 200, "application/json", (TEMPO / "trace_v2.json").read_bytes()
        return 404, "text/plain", b"not found"

    return serving(answer)


def test_ls_of_a_tempo_search_lists_the_traces_it_finds_with_its_filters_pushed_down() -> None:
    import urllib.parse

    seen: list[str] = []
    with _tempo(seen) as base:
        tempo = base.replace("http://", "tempo://")
        proc = cli_run(
            "ls", "--json", "--since", "2025-12-31T00:00:00Z", "--agent", "support", tempo
        )
    listed = json.loads(proc.stdout)["runs"]
    assert {t for r in listed for t in r["trace_ids"]} == {TRACE_ID}
    search = urllib.parse.parse_qs(urllib.parse.urlsplit(seen[0]).query)
    assert search["q"] == ['{ span.gen_ai.agent.name =~ ".*support.*" }']
    assert search["start"] == ["1767139200"] and search["limit"] == ["100"]
    # The search found two traces; the second's id came with its leading zeros trimmed,
    # and this Tempo no longer has it: one error, the other run still listed.
    other = "00000000000000003f1c9e2a6b7d4e58"
    assert seen[1:] == [f"/api/v2/traces/{TRACE_ID}", f"/api/v2/traces/{other}"]
    assert proc.returncode == 2 and f"{other}: HTTP 404" in proc.stderr


def test_a_tempo_search_that_fails_is_one_error_naming_it() -> None:
    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        return 400, "text/plain", b"invalid TraceQL query: parse error at line 1"

    with serving(answer) as base:
        tempo = base.replace("http://", "tempo://") + "?q=%7B%20broken"
        proc = cli_run("ls", tempo)
    assert proc.returncode == 2
    assert "the search failed" in proc.stderr and "invalid TraceQL" in proc.stderr


# --- Jaeger search behind ls -----------------------------------------------------------


def test_ls_of_a_jaeger_search_asks_findtraces_with_since_pushed_down() -> None:
    import urllib.parse

    seen: list[str] = []

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        seen.append(request.path)
        body = (JAEGER / "find_traces_two_traces.json").read_bytes()
        return 200, "application/json", body

    with serving(answer) as base:
        jaeger = base.replace("http://", "jaeger://") + "?service=support-agent&limit=20"
        proc = cli_run("ls", "--json", "--since", "2001-02-03T04:05:06Z", jaeger)
    assert proc.returncode == 0, proc.stderr
    (path,) = seen
    url = urllib.parse.urlsplit(path)
    asked = urllib.parse.parse_qs(url.query)
    assert url.path == "/api/v3/traces"
    assert asked["query.service_name"] == ["support-agent"]
    assert asked["query.start_time_min"] == ["2001-02-03T04:05:06.000000000Z"]
    assert asked["query.search_depth"] == ["20"] and asked["query.start_time_max"]
    doc = json.loads((JAEGER / "find_traces_two_traces.json").read_text())
    held = {
        s["traceId"]
        for rs in doc["result"]["resourceSpans"]
        for ss in rs["scopeSpans"]
        for s in ss["spans"]
    }
    listed = json.loads(proc.stdout)["runs"]
    assert {t for r in listed for t in r["trace_ids"]} == held


def test_a_jaeger_search_that_finds_nothing_is_no_runs_and_no_error() -> None:
    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        return 404, "text/plain; charset=utf-8", (JAEGER / "error_not_found.json").read_bytes()

    with serving(answer) as base:
        runs = otel_replay.load(base.replace("http://", "jaeger://") + "?service=nobody")
        # The same answer to a trace asked for by id is an error: that trace is not there.
        by_id = otel_replay.load(f"{base}/api/v3/traces/{TRACE_ID}")
    assert runs == [] and runs.problems == []
    assert len(by_id.problems) == 1 and "HTTP 404" in str(by_id.problems[0])
