"""A real OTLP backend: export a recorded run to Arize Phoenix, read it back, replay it.

Phoenix pins many packages, so it lives in its own virtualenv: set
``OTEL_REPLAY_PHOENIX`` to that environment's ``phoenix`` executable
(``.ci/run`` does).  Without it the ``phoenix`` tests are skipped; the reader
tests at the end use an answer saved from a real Phoenix and always run.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from examples.order_support.agent import run_agent

import otel_replay
from otel_replay.messages import parse_arguments
from otel_replay.sources.phoenix import spans_from_response
from otel_replay.sources.reader import SpanReader
from tests.fixtures.billing import billing_run
from tests.fixtures.cli import cli_process
from tests.fixtures.data import ROOT
from tests.fixtures.example_replay import replays_alike
from tests.fixtures.http import serving
from tests.fixtures.recording import recording

RECORDING = ROOT / "examples" / "order_support" / "recordings" / "wrong_order.otlp"
SAVED = ROOT / "tests" / "data" / "phoenix" / "wrong_order.otlpv1.json"
PHOENIX = os.environ.get("OTEL_REPLAY_PHOENIX", "")
STARTUP_SECONDS = 180


def _free_port() -> int:
    with contextlib.closing(socket.socket()) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL of a ``phoenix serve`` on 127.0.0.1 with its own empty working directory."""
    if not PHOENIX:
        pytest.skip("set OTEL_REPLAY_PHOENIX to a phoenix executable to run these tests")
    work = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(_free_port()),
        "PHOENIX_WORKING_DIR": str(work),
        # Offline: no telemetry pixels, fonts or downloads of its own.
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
    }
    log = open(work / "serve.log", "wb")  # noqa: SIM115 - closed below
    server = subprocess.Popen([PHOENIX, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + STARTUP_SECONDS
        while True:
            if server.poll() is not None:
                pytest.fail(f"phoenix serve exited {server.returncode}: see {work / 'serve.log'}")
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"phoenix serve not ready after {STARTUP_SECONDS} s")
                time.sleep(0.25)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _export_and_wait(base: str, path: Path, *extra: str) -> str:
    """Export ``path`` to Phoenix; the URL serving its one trace once every span is stored."""
    (run,) = otel_replay.load(path)
    done = cli_process("export", path, "--endpoint", f"{base}/v1/traces", *extra)
    assert done.returncode == 0, done.stderr
    expected = sum(1 for _ in otel_replay.load(path)[0].steps)
    url = f"{base}/v1/projects/default/spans/otlpv1?trace_id={run.trace_ids[0]}"
    deadline = time.monotonic() + 30
    while len(_get(url)["data"]) < expected:  # Phoenix stores what it received asynchronously
        assert time.monotonic() < deadline, f"Phoenix stored {len(_get(url)['data'])} spans"
        time.sleep(0.2)
    return url


def _without_timing(step: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in step.items() if k not in ("start_ns", "end_ns")}


@pytest.mark.phoenix
def test_a_run_read_back_from_phoenix_replays_like_the_file(phoenix: str) -> None:
    url = _export_and_wait(phoenix, RECORDING)
    (local,) = otel_replay.load(RECORDING)

    # Read back through the CLI too: the URL is an input like any file.
    shown = cli_process("show", url, "--json")
    assert shown.returncode == 0, shown.stderr
    (back_json,) = json.loads(shown.stdout)["runs"]
    (back,) = otel_replay.load(url, strict=True)

    assert back.run_id == local.run_id and back.trace_ids == local.trace_ids
    assert back.kit.verdict == local.kit.verdict == "full" and back.replayable
    assert back.fingerprint == local.fingerprint
    local_steps = [_without_timing(s.to_json()) for s in local.steps]
    assert [_without_timing(s) for s in back_json["steps"]] == local_steps
    assert [_without_timing(s.to_json()) for s in back.steps] == local_steps
    # Phoenix keeps about a microsecond (through float seconds); the reader rounds
    # away the noise below it.
    for mine, theirs in zip(local.steps, back.steps, strict=True):
        assert abs(mine.start_ns - theirs.start_ns) < 1000 and theirs.start_ns % 1000 == 0
        assert abs(mine.end_ns - theirs.end_ns) < 1000 and theirs.end_ns % 1000 == 0

    # The same replay outcome: the wrong answer re-enacted, and the fix diverging.
    assert "#4421" in replays_alike(local, back)
    user = back.fingerprint["user.id"]

    lookup = next(s for s in back.tool_steps() if s.tool and s.tool.tool_name == "lookup_order")
    with pytest.raises(otel_replay.ReplayDivergence) as info:
        with otel_replay.replay(back) as session:
            run_agent("Where is my order?", model=session.model, user_id=user, fixed=True)
    assert info.value.index == lookup.index and info.value.name == "lookup_order"


def _billing_run() -> None:
    billing_run(b"%PDF-\xff\x00 invoice")


def _assert_exact_bytes(back: otel_replay.Run) -> None:
    (tool,) = back.tool_steps()
    payload = tool.tool.result_payload if tool.tool else None
    assert payload is not None and payload.status == "exact"
    assert payload.value() == b"%PDF-\xff\x00 invoice"
    assert back.kit.problems == [] and back.replayable


@pytest.mark.phoenix
def test_bytes_payloads_survive_phoenix_as_base64(phoenix: str, tmp_path: Path) -> None:
    """Phoenix drops a span with a bytes attribute; --base64-bytes keeps it, exactly."""
    path = tmp_path / "bytes.otlp"
    with recording(path):
        _billing_run()

    url = _export_and_wait(phoenix, path, "--base64-bytes")
    (back,) = otel_replay.load(url, strict=True)
    (local,) = otel_replay.load(path)
    _assert_exact_bytes(back)
    assert [_without_timing(s.to_json()) for s in back.steps] == [
        _without_timing(s.to_json()) for s in local.steps
    ]


@pytest.mark.phoenix
def test_bytes_payloads_sent_live_as_base64_survive_phoenix(phoenix: str) -> None:
    """ReplaySpanProcessor(base64_bytes=True) beside the SDK's OTLP exporter, live."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    provider = TracerProvider()
    provider.add_span_processor(otel_replay.ReplaySpanProcessor(base64_bytes=True))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(f"{phoenix}/v1/traces")))
    sent = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(sent))
    previous = otel_replay.use_tracer_provider(provider)
    try:
        _billing_run()
    finally:
        otel_replay.use_tracer_provider(previous)
        provider.shutdown()
    spans = sent.get_finished_spans()
    trace_id = format(spans[0].context.trace_id, "032x")
    url = f"{phoenix}/v1/projects/default/spans/otlpv1?trace_id={trace_id}"
    deadline = time.monotonic() + 30
    while len(_get(url)["data"]) < len(spans):  # each span is stored, the tool's too
        assert time.monotonic() < deadline, f"Phoenix stored {len(_get(url)['data'])} spans"
        time.sleep(0.2)
    (back,) = otel_replay.load(url, strict=True)
    _assert_exact_bytes(back)


# --- the reader, on an answer saved from Phoenix (no server needed) ------------------


@pytest.fixture
def paged_server() -> Iterator[str]:
    """Serves the saved answer one span per page, linked by ``next_cursor`` like Phoenix."""
    spans = json.loads(SAVED.read_bytes())["data"]

    def answer(request: BaseHTTPRequestHandler) -> tuple[int, str, bytes]:
        page = int(parse_qs(urlsplit(request.path).query).get("cursor", ["0"])[0])
        more = page + 1 < len(spans)
        doc = {"data": [spans[page]], "next_cursor": str(page + 1) if more else None}
        return 200, "application/json", json.dumps(doc).encode()

    with serving(answer) as base:
        yield f"{base}/v1/projects/default/spans/otlpv1?limit=1"


def test_the_saved_answer_reads_like_the_recording() -> None:
    reader = SpanReader(SAVED)
    back = {s.span_id: s for s in reader}
    assert reader.problems == []
    local = {s.span_id: s for s in SpanReader(RECORDING)}
    assert back.keys() == local.keys()
    for span_id, mine in local.items():
        theirs = back[span_id]
        assert (theirs.trace_id, theirs.parent_span_id, theirs.name, theirs.status_code) == (
            mine.trace_id,
            mine.parent_span_id,
            mine.name,
            mine.status_code,
        )
        # Every recorded attribute is back with its value and type; Phoenix only adds.
        assert {k: theirs.attributes[k] for k in mine.attributes} == mine.attributes
        assert all(type(theirs.attributes[k]) is type(v) for k, v in mine.attributes.items())
        assert abs(theirs.start_ns - mine.start_ns) < 1000 and theirs.start_ns % 1000 == 0


def test_a_phoenix_url_is_followed_page_by_page(paged_server: str) -> None:
    (run,) = otel_replay.load(paged_server, strict=True)
    (local,) = otel_replay.load(RECORDING)
    assert len(run.steps) == 4
    assert [_without_timing(s.to_json()) for s in run.steps] == [
        _without_timing(s.to_json()) for s in local.steps
    ]


def test_phoenix_values_are_undone() -> None:
    def value(**v: Any) -> dict[str, Any]:
        return {"string_value": None, "bytes_value": None, "double_value": None, **v}

    span = {
        "trace_id": "0" * 31 + "1",
        "span_id": "0" * 15 + "2",
        "name": "s",
        "kind": "SPAN_KIND_CLIENT",
        "start_time_unix_nano": 1_700_000_000_123_456_768,  # float noise below the microsecond
        "attributes": [
            {"key": "raw", "value": value(bytes_value=b"\xff\x00".hex())},
            {"key": "otel_replay.bytes.r", "value": value(string_value="/wA=")},
            {"key": "inf", "value": value(double_value="inf")},
        ],
    }
    (record,) = spans_from_response(json.dumps({"data": [span]}).encode(), "answer.json")
    assert record.attributes == {
        "raw": b"\xff\x00",
        "otel_replay.bytes.r": b"\xff\x00",
        "inf": float("inf"),
    }
    assert (record.kind, record.start_ns) == (3, 1_700_000_000_123_457_000)


def test_another_phoenix_answer_is_a_clear_error(tmp_path: Path) -> None:
    projects = tmp_path / "projects.json"
    projects.write_text(
        '{"data": [{"name": "default", "id": "UHJvamVjdDox"}], "next_cursor": null}'
    )
    reader = SpanReader(projects)
    assert list(reader) == []
    (problem,) = reader.problems
    assert str(problem).startswith(f"{projects}: not Phoenix spans")
    assert " at byte" not in str(problem)  # the answer as a whole, no place in it


@pytest.mark.phoenix
def test_third_party_spans_reach_phoenix_with_genai_semconv(phoenix: str, tmp_path: Path) -> None:
    """OpenInference spans recorded with ReplaySpanProcessor: Phoenix stores their gen_ai.*."""
    from tests.unit.export.test_semconv_export import originals, record_through_sdk

    case = "openai_agents_openinference/chat_sync"
    assert not any(A_INPUT in r.attributes for r in originals(case))  # none before
    path = tmp_path / "normalized.otlp"
    record_through_sdk(case, path)
    url = _export_and_wait(phoenix, path)
    (local,) = otel_replay.load(path)
    (back,) = otel_replay.load(url, strict=True)
    sent = {s.span_id: s for s in local.steps if s.kind == "model"}
    stored = {s.span_id: s for s in back.steps if s.kind == "model"}
    assert len(sent) == 3 and stored.keys() == sent.keys()
    for span_id, step in stored.items():
        for key in (
            A_INPUT,
            "gen_ai.output.messages",
            "gen_ai.request.model",
            "gen_ai.operation.name",
        ):
            assert key in step.attributes, (span_id, key)
            assert json_value(step.attributes[key]) == json_value(sent[span_id].attributes[key])
    # What came back loads as the same run as the file.
    assert [s.kind for s in back.steps] == [s.kind for s in local.steps]
    assert back.kit.verdict == local.kit.verdict


@pytest.mark.phoenix
def test_the_readme_setup_sends_genai_semconv_to_phoenix(phoenix: str) -> None:
    """ReplaySpanProcessor beside the SDK's own BatchSpanProcessor(OTLPSpanExporter()), live."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    from tests.unit.export.test_semconv_export import _Ids, emit, originals

    case = "openinference_openai/chat_sync"
    records = originals(case)
    assert not any(A_INPUT in r.attributes for r in records)  # none before
    ids = _Ids()
    provider = TracerProvider(resource=Resource(records[0].resource), id_generator=ids)
    provider.add_span_processor(otel_replay.ReplaySpanProcessor())
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(f"{phoenix}/v1/traces")))
    emit(records, provider, ids)
    provider.shutdown()

    models = []
    for trace_id in sorted({r.trace_id for r in records}):
        url = f"{phoenix}/v1/projects/default/spans/otlpv1?trace_id={trace_id}"
        expected = sum(1 for r in records if r.trace_id == trace_id)
        deadline = time.monotonic() + 30
        while len(_get(url)["data"]) < expected:
            assert time.monotonic() < deadline, f"Phoenix stored {len(_get(url)['data'])} spans"
            time.sleep(0.2)
        for run in otel_replay.load(url, strict=True):
            models += [s for s in run.steps if s.kind == "model"]
    assert len(models) == sum(
        1 for r in records if r.attributes.get("openinference.span.kind") == "LLM"
    )
    for step in models:
        for key in (A_INPUT, "gen_ai.output.messages", "gen_ai.provider.name"):
            assert key in step.attributes, (step.span_id, key)


A_INPUT = "gen_ai.input.messages"


# A JSON attribute as the value it spells (a backend may re-serialize it).
json_value = parse_arguments


@pytest.mark.phoenix
def test_a_cohort_replay_shows_in_phoenix_beside_its_recording(
    phoenix: str, tmp_path: Path
) -> None:
    """A cohort's replays, exported as they were written, read back from Phoenix: the root
    names the recorded run, the cohort's candidate, and the step where the replay left the
    recording carries the divergence with its diff."""
    out = tmp_path / "replays"
    path = os.pathsep.join([str(ROOT / "src"), str(ROOT)])
    done = cli_process(
        "cohort",
        RECORDING,
        *("--agent", "examples.order_support.agent:run_fixed_agent"),
        *("--kwarg", "user_id=@user.id", "-o", out, "--json"),
        env={"PYTHONPATH": path},
    )
    assert done.returncode == 0, done.stderr
    (outcome,) = json.loads(done.stdout)["runs"][0]["outcomes"]
    assert outcome["outcome"] == "other_path"
    (recorded,) = otel_replay.load(RECORDING)
    _export_and_wait(phoenix, RECORDING)
    replays = out / "candidate-1.otlp"
    spans = [r.plain() for r in SpanReader(_export_and_wait(phoenix, replays))]

    (root,) = [s for s in spans if s.parent_span_id is None]
    assert root.attributes["otel_replay.replay_of"] == recorded.run_id
    assert str(root.attributes["otel_replay.cohort.candidate"]).endswith("run_fixed_agent")
    # (Phoenix keeps no span links: the root's attribute names the run it replays.)
    (event,) = [e for s in spans for e in s.events if e.name == "otel_replay.divergence"]
    assert event.attributes["otel_replay.divergence.step"] == 2
    assert '+    "user_id": "u_7710"' in event.attributes["otel_replay.divergence.diff"]
    # And read back whole, the replay diffs with its recording at that step.
    (back,) = otel_replay.load(_export_and_wait(phoenix, replays))
    diff = cli_process("diff", RECORDING, f"{replays}#{back.run_id}", "--json")
    assert json.loads(diff.stdout)["first_divergence"]["a"]["index"] == 2
